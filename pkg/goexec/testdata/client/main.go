// Command client is a Go program with net/http's client, for goexec's tests.
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		resp, err := http.Get(os.Args[1])
		if err == nil {
			resp.Body.Close()
		}
		fmt.Println(err)
	}
}
