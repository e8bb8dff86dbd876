package deploy

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/weftdev/weft/pkg/config"
)

// repoRoot is the repository root: this package lives in test/deploy.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "weft")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

func repoPath(t testing.TB, rel ...string) string {
	return filepath.Join(append([]string{repoRoot(t)}, rel...)...)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	documentedOnce sync.Once
	documentedEnv  map[string]bool
)

// documentedVariables are the WEFT_* and OTEL_* variables that
// docs/configuration.md describes: a deploy file that sets another one has a
// typo that weft would silently ignore.
func documentedVariables(t testing.TB) map[string]bool {
	documentedOnce.Do(func() {
		doc := string(readFile(t, repoPath(t, "docs", "configuration.md")))
		documentedEnv = map[string]bool{}
		for _, m := range regexp.MustCompile("`((?:WEFT|OTEL)_[A-Z0-9_]+)`").FindAllStringSubmatch(doc, -1) {
			documentedEnv[m[1]] = true
		}
		// Read from each traced process, not from weft's own environment.
		documentedEnv["OTEL_SERVICE_NAME"] = true
	})
	if len(documentedEnv) < 5 {
		t.Fatalf("docs/configuration.md lists only %d variables: has its table moved?", len(documentedEnv))
	}
	return documentedEnv
}

// checkWeftSettings fails the test unless weft's own configuration loader
// accepts env and the flags of `weft run` in args, and every WEFT_*/OTEL_*
// name in env is a documented one.
func checkWeftSettings(t *testing.T, where string, env map[string]string, args []string) {
	t.Helper()
	if err := weftSettingsError(t, env, args); err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

func weftSettingsError(t *testing.T, env map[string]string, args []string) error {
	t.Helper()
	known := documentedVariables(t)
	var unknown []string
	for k := range env {
		if (strings.HasPrefix(k, "WEFT_") || strings.HasPrefix(k, "OTEL_")) && !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &settingsError{"variables not in docs/configuration.md (typo?): " + strings.Join(unknown, ", ")}
	}
	fs := flag.NewFlagSet("weft run", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	fl := config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &settingsError{"weft run takes no arguments, got " + strings.Join(fs.Args(), " ")}
	}
	_, err := config.Load(fl.ConfigPath, func(k string) string { return env[k] }, fs, fl)
	return err
}

type settingsError struct{ msg string }

func (e *settingsError) Error() string { return e.msg }

// runArgs returns the flags of `weft run` from a container's argument list.
func runArgs(t *testing.T, where string, argv []string) []string {
	t.Helper()
	if len(argv) == 0 || argv[0] != "run" {
		t.Errorf("%s: weft is started with %q, want `run ...`", where, argv)
		return nil
	}
	return argv[1:]
}
