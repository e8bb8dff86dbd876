package qemu

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// busyboxPath is where Debian's busybox-static installs its binary
// (/bin is a symlink to /usr/bin on merged-/usr systems).
const busyboxPath = "/bin/busybox"

// Directories that must exist before /init runs: busybox --install needs
// its target directories, and mount points must exist on the rootfs.
var baseDirs = []string{
	"/bin", "/sbin", "/usr", "/usr/bin", "/usr/sbin", "/dev", "/proc", "/sys",
	"/tmp", "/run", "/root", "/etc",
}

// initramfs describes the archive contents beyond the fixed base layout.
type initramfs struct {
	init     []byte
	binaries map[string]string // guest path -> host path
	files    map[string][]byte // guest path -> content
}

// writeInitramfs writes a gzip-compressed newc archive to dst.
func writeInitramfs(dst string, fs initramfs) (err error) {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("initramfs: %w", cerr)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	// Speed over size: the archive lives in a temp dir for one boot.
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := fillArchive(newCPIOWriter(zw), fs); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

func fillArchive(cw *cpioWriter, fs initramfs) error {
	dirs := map[string]bool{}
	for _, d := range baseDirs {
		dirs[d] = true
	}
	for p := range fs.binaries {
		addParents(dirs, p)
	}
	for p := range fs.files {
		addParents(dirs, p)
	}
	// Sorted so that every parent precedes its children.
	for _, d := range sortedKeys(dirs) {
		if err := cw.Dir(strings.TrimPrefix(d, "/"), 0o755); err != nil {
			return err
		}
	}
	// The kernel opens /dev/console for init's stdio before devtmpfs is
	// mounted, so the node must be in the archive itself.
	if err := cw.CharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := addHostFile(cw, "/bin/busybox", busyboxPath, 0o755); err != nil {
		return err
	}
	if err := cw.Symlink("bin/sh", "busybox"); err != nil {
		return err
	}
	if err := addBytes(cw, "/init", fs.init, 0o755); err != nil {
		return err
	}
	for _, p := range sortedKeys(fs.binaries) {
		if err := addHostFile(cw, p, fs.binaries[p], 0o755); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(fs.files) {
		if err := addBytes(cw, p, fs.files[p], 0o644); err != nil {
			return err
		}
	}
	return cw.Close()
}

func addBytes(cw *cpioWriter, guest string, data []byte, perm uint32) error {
	return cw.File(strings.TrimPrefix(guest, "/"), perm, int64(len(data)), bytes.NewReader(data))
}

func addHostFile(cw *cpioWriter, guest, host string, perm uint32) error {
	f, err := os.Open(host)
	if err != nil {
		return fmt.Errorf("initramfs %s: %w", guest, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("initramfs %s: %w", guest, err)
	}
	return cw.File(strings.TrimPrefix(guest, "/"), perm, st.Size(), f)
}

// addParents records every ancestor directory of an absolute guest path.
func addParents(dirs map[string]bool, p string) {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		dirs[d] = true
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkGuestPath rejects paths the archive cannot hold sensibly.
func checkGuestPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("guest path %q must be absolute and clean", p)
	}
	switch p {
	case "/init", "/bin/busybox", "/bin/sh", "/dev/console":
		return fmt.Errorf("guest path %q is reserved by the harness", p)
	}
	return nil
}

// checkStaticAMD64 fails early for binaries that cannot run in the bare
// guest: there is no dynamic loader or libc in the initramfs.
func checkStaticAMD64(host string) error {
	f, err := elf.Open(host)
	if err != nil {
		return fmt.Errorf("%s: %w", host, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s: machine %s, want x86-64", host, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: dynamically linked (build with CGO_ENABLED=0)", host)
		}
	}
	return nil
}
