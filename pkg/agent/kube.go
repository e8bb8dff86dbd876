package agent

import (
	"context"
	"log/slog"
	"os"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/kube"
	"github.com/weftdev/weft/pkg/procinfo"
)

// kubeMetadata starts the pod metadata source when the settings (and, for
// auto, the environment) ask for it. It never stops weft: without an API
// server the resources simply carry no k8s.* attributes.
func kubeMetadata(ctx context.Context, cfg config.Kubernetes) procinfo.Metadata {
	if !cfg.On(os.Getenv) {
		return nil
	}
	src, err := kube.New(kube.Config{NodeName: cfg.NodeName, WellKnownLabels: cfg.WellKnownLabels})
	if err != nil {
		slog.Warn("no Kubernetes metadata", "component", "kube", "error", err)
		return nil
	}
	src.Start(ctx)
	return src
}
