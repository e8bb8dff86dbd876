// Package store keeps the profiler's pprof files on disk: one gzipped
// pprof file per service and interval, <dir>/<service>/<end>.pb.gz, named
// after the end of the interval it covers. Files appear whole (written
// aside, then renamed), so a reader never sees half of one.
package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Ext ends every profile file's name.
const Ext = ".pb.gz"

// timeLayout is RFC 3339 in UTC with the colons, which some file systems
// and tools dislike, replaced by dashes; names sort in time order.
const timeLayout = "2006-01-02T15-04-05.000Z"

// File is one stored profile.
type File struct {
	Path    string
	Service string    // the directory name: the service, made safe
	End     time.Time // end of the interval the file covers
}

// ServiceDir turns a service name into a directory name: anything but
// letters, digits, '.', '_' and '-' becomes '_', so a name cannot climb
// out of the profile directory.
func ServiceDir(service string) string {
	b := []byte(service)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || strings.Trim(s, ".") == "" {
		s = "_" + s
	}
	return s
}

// Write stores p as the profile of service for the interval ending at
// end and returns its path.
func Write(dir, service string, p *profile.Profile, end time.Time) (string, error) {
	sdir := filepath.Join(dir, ServiceDir(service))
	if err := os.MkdirAll(sdir, 0o750); err != nil {
		return "", fmt.Errorf("create profile directory: %w", err)
	}
	f, err := os.CreateTemp(sdir, ".partial-*")
	if err != nil {
		return "", fmt.Errorf("create profile file: %w", err)
	}
	tmp := f.Name()
	werr := p.Write(f) // gzipped
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write profile %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write profile %s: %w", tmp, err)
	}
	path := filepath.Join(sdir, end.UTC().Format(timeLayout)+Ext)
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write profile: %w", err)
	}
	return path, nil
}

// List returns the stored profiles whose interval ended at or after since
// (zero: all), of one service (empty: every service), oldest first. A
// missing directory holds no profiles.
func List(dir string, since time.Time, service string) ([]File, error) {
	services, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	var out []File
	for _, sd := range services {
		if !sd.IsDir() || service != "" && sd.Name() != ServiceDir(service) {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(dir, sd.Name()))
		if err != nil {
			return nil, fmt.Errorf("list profiles: %w", err)
		}
		for _, e := range entries {
			end, ok := parseName(e.Name())
			if !ok || e.IsDir() || end.Before(since) {
				continue
			}
			out = append(out, File{Path: filepath.Join(dir, sd.Name(), e.Name()), Service: sd.Name(), End: end})
		}
	}
	slices.SortFunc(out, func(a, b File) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

func parseName(name string) (time.Time, bool) {
	stem, ok := strings.CutSuffix(name, Ext)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(timeLayout, stem)
	return t, err == nil
}

// Read parses one stored profile.
func Read(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parse profile %s: %w", path, err)
	}
	return p, nil
}

// Prune deletes the profiles whose interval ended before before, and
// files left half-written by a crash, and says how many it deleted.
func Prune(dir string, before time.Time) (int, error) {
	files, err := List(dir, time.Time{}, "")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, f := range files {
		if !f.End.Before(before) {
			continue
		}
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	partial, _ := filepath.Glob(filepath.Join(dir, "*", ".partial-*"))
	for _, p := range partial {
		if st, err := os.Stat(p); err == nil && st.ModTime().Before(before) && os.Remove(p) == nil {
			n++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("prune profiles: %w", err)
	}
	return n, nil
}
