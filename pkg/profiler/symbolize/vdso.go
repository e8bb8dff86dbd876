package symbolize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// maxVDSOSize guards the read of our own vDSO image, normally two pages.
const maxVDSOSize = 1 << 20

const vdsoPath = "[vdso]"

// readOwnVDSO parses this process's vDSO. Every process on one kernel maps
// the same image, so it names the vDSO frames (clock_gettime and friends)
// of every process sampled.
func readOwnVDSO() (*object, error) {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("open own maps: %w", err)
	}
	defer maps.Close()
	ms, err := parseMaps(maps)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.path != vdsoPath {
			continue
		}
		if m.end-m.start > maxVDSOSize {
			return nil, errors.New("vdso mapping is implausibly large")
		}
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil, fmt.Errorf("open own memory: %w", err)
		}
		defer mem.Close()
		buf := make([]byte, m.end-m.start)
		if _, err := mem.ReadAt(buf, int64(m.start)); err != nil {
			return nil, fmt.Errorf("read vdso: %w", err)
		}
		return parseBinary(bytes.NewReader(buf), vdsoPath)
	}
	return nil, errors.New("no vdso mapping")
}
