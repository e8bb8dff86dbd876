package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/weftdev/weft/pkg/procinfo"
)

// closeInspector runs after the companion: the inspector that SIGUSR1
// opened lets anyone on the host run code in the process, so it is closed
// again once this session has its answer.
const closeInspector = `
;(() => { const i = require('inspector'); setTimeout(() => { try { i.close(); } catch (_) {} }, 100); })();
'weft-node-companion-loaded'`

// Attach loads the companion into running Node.js process pid through its
// inspector: SIGUSR1 opens it on 127.0.0.1 (Node's default 9229, or the
// port --inspect-port set), the companion is evaluated there, and the
// inspector is closed again. It fails when the process handles SIGUSR1
// itself, runs with --disable-sigusr1, has its inspector open already, or
// lives in another network namespace (use NODE_OPTIONS there).
func Attach(ctx context.Context, pid int) error {
	same, err := sameNetNS(pid)
	if err != nil {
		return err
	}
	if !same {
		return errors.New("the process is in another network namespace: load the companion with NODE_OPTIONS=--require")
	}
	before, err := listeningPorts(pid)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("signal the process to open its inspector: %w", err)
	}
	wsURL, port, err := waitInspector(ctx, pid, before)
	if err != nil {
		return err
	}
	if err := evaluate(ctx, wsURL, string(script)+closeInspector); err != nil {
		return err
	}
	return waitClosed(ctx, pid, port)
}

// waitClosed waits until process pid no longer listens on its inspector's
// port.
func waitClosed(ctx context.Context, pid, port int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ports, err := listeningPorts(pid)
		if err != nil {
			return err
		}
		if !ports[port] {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the companion is loaded, but the inspector on port %d did not close: %w", port, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitInspector waits for a new listening port of pid that answers as a
// Node inspector, and returns its debugger URL. Only ports that appeared
// after the signal are asked: the application's own are left alone.
func waitInspector(ctx context.Context, pid int, before map[int]bool) (string, int, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	asked := map[int]bool{}
	for {
		ports, err := listeningPorts(pid)
		if err != nil {
			return "", 0, err
		}
		for p := range ports {
			if before[p] || asked[p] {
				continue
			}
			asked[p] = true
			if u, err := debuggerURL(ctx, p); err == nil {
				return u, p, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", 0, fmt.Errorf("no inspector opened (does the application handle SIGUSR1, or run with --disable-sigusr1?): %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func debuggerURL(ctx context.Context, port int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/json/list", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var targets []struct {
		URL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		return "", fmt.Errorf("port %d: not an inspector: %w", port, err)
	}
	for _, t := range targets {
		if t.URL != "" {
			return t.URL, nil
		}
	}
	return "", fmt.Errorf("port %d: no debugger target", port)
}

// evaluate runs src in the process's main context through the inspector
// protocol (Runtime.evaluate, with the command-line API's require).
func evaluate(ctx context.Context, wsURL, src string) error {
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return fmt.Errorf("connect to the inspector: %w", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	msg, err := json.Marshal(map[string]any{
		"id":     1,
		"method": "Runtime.evaluate",
		"params": map[string]any{"expression": src, "includeCommandLineAPI": true, "returnByValue": true},
	})
	if err != nil {
		return err
	}
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("send to the inspector: %w", err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return fmt.Errorf("read from the inspector: %w", err)
		}
		var r struct {
			ID     int `json:"id"`
			Result struct {
				Result struct {
					Value any `json:"value"`
				} `json:"result"`
				Exception *struct {
					Text string `json:"text"`
				} `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &r) != nil || r.ID != 1 {
			continue // an event
		}
		switch {
		case r.Error != nil:
			return fmt.Errorf("inspector: %s", r.Error.Message)
		case r.Result.Exception != nil:
			return fmt.Errorf("the companion threw: %s", r.Result.Exception.Text)
		case r.Result.Result.Value != "weft-node-companion-loaded":
			return fmt.Errorf("the companion did not run: %v", r.Result.Result.Value)
		}
		c.Close(websocket.StatusNormalClosure, "")
		return nil
	}
}

func sameNetNS(pid int) (bool, error) {
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return false, fmt.Errorf("process %d: %w", pid, err)
	}
	ours, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return false, err
	}
	return theirs == ours, nil
}

// listeningPorts lists the TCP ports process pid listens on.
func listeningPorts(pid int) (map[int]bool, error) {
	inodes, err := procinfo.SocketInodes(pid)
	if err != nil {
		return nil, err
	}
	socks, err := procinfo.NetTCP(pid)
	if err != nil {
		return nil, err
	}
	ports := map[int]bool{}
	for _, s := range socks {
		if s.State == procinfo.TCPListen && inodes[s.Inode] {
			ports[s.LocalPort] = true
		}
	}
	return ports, nil
}
