// Package deploy holds offline checks of weft's deployment files: the demo's
// docker-compose.yml and Dockerfiles, the Kubernetes manifests, the systemd
// unit, and the Grafana dashboards (their PromQL parsed, every metric and
// label in it one that docs/metrics.md documents). No Docker engine, cluster
// or network is needed once the Go modules are in the module cache.
//
// It is a module of its own (its dependencies — compose-go, BuildKit's
// Dockerfile frontend, the Kubernetes API types, Prometheus' PromQL parser —
// stay out of weft's go.mod), so the repository root's `go test ./...` skips
// it:
//
//	cd test/deploy && go test ./...
package deploy
