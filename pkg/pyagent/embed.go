// Package pyagent carries weft's Python asyncio companion: weft_asyncio.py
// and the sitecustomize.py that loads it when their directory is on
// PYTHONPATH (`weft python path` writes them out).
package pyagent

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed files/*.py
var files embed.FS

// Files returns the companion's files by name.
func Files() map[string][]byte {
	out := map[string][]byte{}
	entries, _ := files.ReadDir("files")
	for _, e := range entries {
		b, _ := files.ReadFile("files/" + e.Name())
		out[e.Name()] = b
	}
	return out
}

// WriteDir writes the companion into dir, creating it.
func WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("python companion: %w", err)
	}
	for name, b := range Files() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("python companion: %w", err)
		}
	}
	return nil
}
