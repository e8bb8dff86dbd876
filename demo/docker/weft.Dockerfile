# syntax=docker/dockerfile:1
# weft, built from the repository root (the build context, see
# docker-compose.yml); weft.Dockerfile.dockerignore keeps the context to the
# Go sources.
#
# The BPF objects and their Go bindings are committed under pkg/tracer, so no
# clang is needed here; the Java agent jar is embedded from pkg/javaagent when
# the tree has it (scripts/build-agent.sh).

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-trixie AS build
WORKDIR /src
# Modules first: this layer survives source edits.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY pkg ./pkg
ARG VERSION=docker
# Static (CGO off), as `make build` does, so the distroless static image suffices.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/weft ./cmd/weft

# Distroless publishes no version tags: pin it by digest for reproducible
# builds (gcr.io/distroless/static-debian13@sha256:...).
FROM gcr.io/distroless/static-debian13 AS runtime
COPY --from=build /out/weft /usr/local/bin/weft
# Root: loading BPF, attaching to cgroups and reading other processes' /proc
# need it (or the capabilities listed in deploy/kubernetes/weft-daemonset.yaml).
USER 0:0
ENTRYPOINT ["/usr/local/bin/weft"]
CMD ["run"]
