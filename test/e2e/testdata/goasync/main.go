// Command goasync is the Go front service of the async-parents tests: a
// net/http server whose handlers wait, then call a backend with net/http's
// client, so that many requests are live at once on few threads and the
// client writes from goroutines of its own.
//
//	/req/N  waits 0-10 ms, then GETs <backend>/work/N
//	/fan/N  waits 0-10 ms, then GETs <backend>/work/N/a and /work/N/b from
//	        two goroutines at once
//	/spawn/N answers at once, leaving a goroutine that GETs
//	        <backend>/work/late-N 50 ms later, when its request is over
//	/slow/N waits 200 ms, then GETs <backend>/work/N
//
// It prints its address on the first line. Written for Go 1.19 and later.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

var client = &http.Client{Timeout: 10 * time.Second}

func call(url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func wait() { time.Sleep(time.Duration(rand.Intn(10001)) * time.Microsecond) }

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	backend := flag.String("backend", "", "host:port of the backend")
	flag.Parse()
	base := "http://" + *backend + "/work/"
	mux := http.NewServeMux()
	mux.HandleFunc("/req/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/req/")
		wait()
		if err := call(base + n); err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/fan/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/fan/")
		wait()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, leg := range []string{"a", "b"} {
			wg.Add(1)
			go func(i int, leg string) {
				defer wg.Done()
				errs[i] = call(base + n + "/" + leg)
			}(i, leg)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				http.Error(w, err.Error(), 502)
				return
			}
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/spawn/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/spawn/")
		go func() {
			time.Sleep(50 * time.Millisecond)
			if err := call(base + "late-" + n); err != nil {
				log.Print(err)
			}
		}()
		io.WriteString(w, "spawned\n")
	})
	mux.HandleFunc("/slow/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/slow/")
		time.Sleep(200 * time.Millisecond)
		if err := call(base + n); err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, mux))
}
