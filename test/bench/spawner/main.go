// Command spawner creates goroutines for the -goroutine-cost benchmark:
// each line "N" on stdin creates N goroutines, a batch at a time, each
// only signalling that it ran, then answers "ok". Run it with
// GOMAXPROCS=1 on one CPU, so that its CPU time is the creations' own.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

const batch = 1000 // goroutines alive at once, so that stacks stay few

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawner: want a count:", err)
			os.Exit(2)
		}
		var wg sync.WaitGroup
		for done := 0; done < n; done += batch {
			for i := 0; i < min(batch, n-done); i++ {
				wg.Add(1)
				go wg.Done()
			}
			wg.Wait()
		}
		fmt.Println("ok")
	}
}
