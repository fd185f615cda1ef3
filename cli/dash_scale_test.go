package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// pidCPU is pid's user+system CPU time (/proc/PID/stat).
func pidCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("cpu of %d: %v", pid, err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100)
}

// cpuShare is the share of one core pid used over d.
func cpuShare(t *testing.T, pid int, d time.Duration) float64 {
	t.Helper()
	c0, w0 := pidCPU(t, pid), time.Now()
	time.Sleep(d)
	return float64(pidCPU(t, pid)-c0) / float64(time.Since(w0))
}

// TestDashboardScale measures the dashboard at 200 nodes (CONTRACT §19,
// docs/PERFORMANCE.md): the dashboard's CPU while it watches 200 idle
// nodes; with 20 of them printing a line every 100 ms, key → frame end to
// end (terminal_press with a render wait, in the dashboard's node) and
// the orchestrator's CPU with the dashboard attached and without; and the
// tmux processes the dashboard spawned (a tmux first on its PATH logs
// every run). It takes minutes: run it with TERMSPRAWL_DASH_SCALE=1.
func TestDashboardScale(t *testing.T) {
	if os.Getenv("TERMSPRAWL_DASH_SCALE") == "" {
		t.Skip("the 200-node scale run: TERMSPRAWL_DASH_SCALE=1 go test ./cli -run TestDashboardScale -v -timeout 30m")
	}
	const total, printers = 200, 20
	e := newE2E(t)
	up, _ := e.up()
	ep, err := tools.ReadEndpoint(tools.EndpointPath(e.state))
	if err != nil {
		t.Fatal(err)
	}

	// 180 idle programs and 20 shells that print on cue.
	launch := func(name string, argv ...string) string {
		raw, _ := json.Marshal(map[string]any{"name": name, "command": argv})
		res := tools.Call(context.Background(), e.oper, tools.Request{Operation: "terminal_launch", Args: raw}, tools.CallOptions{})
		if !res.OK {
			t.Errorf("launch %s: %s", name, res.Error)
			return ""
		}
		var r tools.ReceiptOf[tools.NodeInfo]
		_ = tools.DecodeValue(res.Value, &r)
		return r.Result.Terminal
	}
	began := time.Now()
	var mu sync.Mutex
	var shells []string
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range total {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if i < printers {
				id := launch(fmt.Sprintf("p-%02d", i), "bash", "--norc", "--noprofile")
				mu.Lock()
				shells = append(shells, id)
				mu.Unlock()
				return
			}
			launch(fmt.Sprintf("a-%03d", i), "cat")
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d nodes launched in %v", total, time.Since(began).Round(time.Second))

	// The dashboard, with a logging tmux first on its PATH.
	bin := t.TempDir()
	tmuxLog := filepath.Join(bin, "tmux.log")
	realTmux := strings.TrimSpace(e.must("/bin/sh", "-c", "command -v tmux"))
	if err := os.WriteFile(filepath.Join(bin, "tmux"), []byte("#!/bin/sh\necho \"$@\" >> "+tmuxLog+"\nexec "+realTmux+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	startDash := func() *dashNode {
		var rec tools.ReceiptOf[tools.NodeInfo]
		e.op("terminal_launch", map[string]any{"name": "dash", "columns": 160, "rows": 48,
			"command": []string{"env", "PATH=" + bin + ":" + os.Getenv("PATH"), e.ts, "dash"}}, &rec)
		d := &dashNode{e: e, id: rec.Result.Terminal}
		d.waitText(fmt.Sprintf("%d nodes", total+1))
		return d
	}
	pidOf := func(id string) int {
		n, _ := e.listed(id)
		out := e.must("tmux", "-L", n.TmuxSocket, "display-message", "-p", "-t", "ts-"+id, "#{pane_pid}")
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("pane pid of %s: %q", id, out)
		}
		return pid
	}
	d := startDash()
	dashPID := pidOf(d.id)
	idle := cpuShare(t, dashPID, 10*time.Second)
	t.Logf("dashboard CPU, idle-watching %d idle nodes: %.2f%% of a core", total, 100*idle)

	// 20 nodes print a line every 100 ms.
	for _, id := range shells {
		e.op("terminal_submit", map[string]any{"terminal": id, "text": "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.1; done"}, nil)
	}
	time.Sleep(2 * time.Second)

	// Key → frame, end to end: a press whose render wait ends at the
	// dashboard's next frame.
	var lat []time.Duration
	for i := range 60 {
		k := "j"
		if i%2 == 1 {
			k = "k"
		}
		raw, _ := json.Marshal(map[string]any{"terminal": d.id, "keys": k, "wait": map[string]any{"wait": "render", "timeout_ms": 5000}})
		t0 := time.Now()
		res := tools.Call(context.Background(), e.oper, tools.Request{Operation: "terminal_press", Args: raw}, tools.CallOptions{})
		if !res.OK {
			t.Fatalf("press: %s", res.Error)
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(lat)
	t.Logf("key → frame end to end (terminal_press + render wait, %d presses): p50 %v, p99 %v", len(lat),
		lat[len(lat)/2].Round(100*time.Microsecond), lat[len(lat)*99/100].Round(100*time.Microsecond))
	// The dashboard shows a printing node while the orchestrator is measured.
	d.selectByFilter("p-00")
	with := cpuShare(t, ep.PID, 10*time.Second)
	d.typ("q")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n, _ := e.listed(d.id); n.Status == tools.StatusExited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dashboard did not quit")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	without := cpuShare(t, ep.PID, 10*time.Second)
	t.Logf("orchestrator CPU, %d printing: %.1f%% of a core with the dashboard attached, %.1f%% without: %.2f×", printers, 100*with, 100*without, with/without)

	logged, _ := os.ReadFile(tmuxLog)
	spawned := 0
	if s := strings.TrimSpace(string(logged)); s != "" {
		spawned = len(strings.Split(s, "\n"))
	}
	t.Logf("tmux processes spawned by the dashboard: %d", spawned)
	if spawned != 0 {
		t.Errorf("the dashboard ran tmux %d times:\n%s", spawned, logged)
	}
	e.down(up)
}
