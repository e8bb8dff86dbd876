package qemu

import (
	"fmt"
	"io"
	"syscall"
)

// cpioWriter writes the "newc" cpio format, the one the kernel's initramfs
// unpacker reads. Only what an initramfs needs is supported: directories,
// regular files, symlinks and character devices, all owned by root.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	off int64
}

// newcHeaderLen is the fixed size of a newc header: a 6-byte magic plus 13
// fields of 8 hex digits.
const newcHeaderLen = 6 + 13*8

func newCPIOWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w} }

// header writes one entry header and its name. size is the length of the
// data that the caller writes next (and pads with padData).
func (c *cpioWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) error {
	if size > 0xffffffff {
		return fmt.Errorf("cpio %s: %d bytes exceeds the newc 4 GiB limit", name, size)
	}
	c.ino++
	nlink := uint32(1)
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	if err := c.write([]byte(hdr + name + "\x00")); err != nil {
		return fmt.Errorf("cpio %s: %w", name, err)
	}
	return c.pad()
}

// pad aligns the stream to 4 bytes, as newc requires after names and data.
func (c *cpioWriter) pad() error {
	if n := (4 - c.off%4) % 4; n > 0 {
		return c.write(make([]byte, n))
	}
	return nil
}

func (c *cpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.off += int64(n)
	return err
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) error {
	return c.header(name, syscall.S_IFDIR|perm, 0, 0, 0)
}

// File adds a regular file whose size bytes are read from r.
func (c *cpioWriter) File(name string, perm uint32, size int64, r io.Reader) error {
	if err := c.header(name, syscall.S_IFREG|perm, size, 0, 0); err != nil {
		return err
	}
	n, err := io.Copy(writerFunc(c.write), io.LimitReader(r, size))
	if err != nil {
		return fmt.Errorf("cpio %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("cpio %s: got %d bytes, want %d", name, n, size)
	}
	return c.pad()
}

// Symlink adds a symbolic link; newc stores the target as the entry's data.
func (c *cpioWriter) Symlink(name, target string) error {
	if err := c.header(name, syscall.S_IFLNK|0o777, int64(len(target)), 0, 0); err != nil {
		return err
	}
	if err := c.write([]byte(target)); err != nil {
		return fmt.Errorf("cpio %s: %w", name, err)
	}
	return c.pad()
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.header(name, syscall.S_IFCHR|perm, 0, major, minor)
}

// Close writes the trailer entry that ends the archive.
func (c *cpioWriter) Close() error {
	return c.header("TRAILER!!!", 0, 0, 0, 0)
}

// writerFunc adapts the counting write method to io.Writer for io.Copy.
type writerFunc func([]byte) error

func (f writerFunc) Write(b []byte) (int, error) {
	if err := f(b); err != nil {
		return 0, err
	}
	return len(b), nil
}
