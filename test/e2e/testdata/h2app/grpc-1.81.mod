// h2app built against grpc-go 1.81, whose loopy writer takes a stream's
// header item in originateStream (1.85: clientHeaderHandler): go build
// -modfile=test/e2e/testdata/h2app/grpc-1.81.mod ./test/e2e/testdata/h2app
module github.com/weftdev/weft

go 1.26.0

require (
	golang.org/x/net v0.51.0
	google.golang.org/grpc v1.81.1
	google.golang.org/protobuf v1.36.11
)

require (
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/text v0.34.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260226221140-a57be14db171 // indirect
)
