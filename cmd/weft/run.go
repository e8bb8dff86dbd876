package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weftdev/weft/pkg/agent"
	"github.com/weftdev/weft/pkg/config"
)

func runCmd(args []string) error {
	fs := flag.NewFlagSet("weft run", flag.ContinueOnError)
	fl := config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("run: unexpected arguments %v", fs.Args())
	}
	cfg, err := config.Load(fl.ConfigPath, os.Getenv, fs, fl)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if os.Geteuid() != 0 {
		slog.Warn("weft run needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN); loading will likely fail", "component", "cli")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return agent.Run(ctx, cfg, version)
}
