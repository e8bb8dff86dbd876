// Command exitcode proves the harness runs a binary and returns its exit
// status: it prints the kernel release and $WEFT_GREETING, then exits 3.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		fmt.Fprintln(os.Stderr, "read osrelease:", err)
		os.Exit(1)
	}
	fmt.Printf("hello from the guest, release=%s\n", strings.TrimSpace(string(rel)))
	fmt.Printf("greeting=%s\n", os.Getenv("WEFT_GREETING"))
	os.Exit(3)
}
