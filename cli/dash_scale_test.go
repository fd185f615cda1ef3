package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
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
	// TERMSPRAWL_SCALE_NODES (scripts/scale) sets the nodes; 20 print.
	total, printers := 200, 20
	if v, err := strconv.Atoi(os.Getenv("TERMSPRAWL_SCALE_NODES")); err == nil && v > printers {
		total = v
	}
	e := newE2E(t)
	// No node sleeps (--idle-after -1): all 20 printers are mirrored with
	// and without the dashboard, so the ratio is the stream's own cost (by
	// default unobserved printers sleep, and the node a dashboard shows is
	// woken: that is the cost of showing it).
	up, _, _ := e.upWith("--idle-after=-1s")
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

	// The dashboard in a node, with a logging tmux first on its PATH.
	tmuxLog, path := loggingTmux(t)
	var rec tools.ReceiptOf[tools.NodeInfo]
	e.op("terminal_launch", map[string]any{"name": "dash", "columns": 160, "rows": 48,
		"command": []string{"env", "PATH=" + path, e.ts, "dash"}}, &rec)
	d := &dashNode{e: e, id: rec.Result.Terminal}
	d.waitText(fmt.Sprintf("%d nodes", total+1))
	pidOf := func(socket, target string) int {
		out := e.must("tmux", "-L", socket, "display-message", "-p", "-t", target, "#{pane_pid}")
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("pane pid of %s: %q", target, out)
		}
		return pid
	}
	dn, _ := e.listed(d.id)
	idle := cpuShare(t, pidOf(dn.TmuxSocket, "ts-"+d.id), 10*time.Second)
	t.Logf("dashboard CPU, idle-watching %d idle nodes: %.2f%% of a core", total, 100*idle)

	// 20 nodes print a line every 100 ms.
	for _, id := range shells {
		e.op("terminal_submit", map[string]any{"terminal": id, "text": "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.1; done"}, nil)
	}
	// Every printer is under way (its tenth line shown) before the
	// measurements.
	for _, id := range shells {
		e.op("terminal_wait_for", map[string]any{"terminal": id, "wait": "text", "text": "line 10", "after": 0, "timeout_ms": 30000}, nil)
	}

	// Key → frame, end to end: a press whose render wait ends at the
	// dashboard's next frame; the same into a bare cat (its tty echoes)
	// is the floor of that path (input call, tmux, the mirror).
	pressTimes := func(id string, keys ...string) []time.Duration {
		var lat []time.Duration
		for i := range 60 {
			raw, _ := json.Marshal(map[string]any{"terminal": id, "keys": keys[i%len(keys)], "wait": map[string]any{"wait": "render", "timeout_ms": 5000}})
			t0 := time.Now()
			res := tools.Call(context.Background(), e.oper, tools.Request{Operation: "terminal_press", Args: raw}, tools.CallOptions{})
			if !res.OK {
				t.Fatalf("press: %s", res.Error)
			}
			lat = append(lat, time.Since(t0))
			time.Sleep(50 * time.Millisecond)
		}
		slices.Sort(lat)
		return lat
	}
	lat := pressTimes(d.id, "j", "k")
	n0, _ := e.listed("a-199")
	floor := pressTimes(n0.Terminal, "x")
	t.Logf("key → frame end to end (terminal_press + render wait, 60 presses): p50 %v, p99 %v; into a bare cat: p50 %v, p99 %v",
		lat[len(lat)/2].Round(100*time.Microsecond), lat[len(lat)*99/100].Round(100*time.Microsecond),
		floor[len(floor)/2].Round(100*time.Microsecond), floor[len(floor)*99/100].Round(100*time.Microsecond))
	d.typ("q")
	if !testenv.Until(20*time.Second, func() bool {
		if n, _ := e.listed(d.id); n.Status == tools.StatusExited {
			return true
		}
		return false
	}) {
		t.Fatal("the dashboard did not quit")
	}
	e.op("terminal_close", map[string]any{"terminal": d.id}, nil)
	time.Sleep(time.Second)

	// The orchestrator's CPU without a dashboard and with a human's
	// dashboard in their own terminal (a pane of another tmux server)
	// showing a printing node: five rounds of each, interleaved; medians.
	outer := tmuxtest.New(t)
	pane := func() string { return outer.Must("capture-pane", "-p", "-t", "h") }
	waitPane := func(text string) {
		if !testenv.Until(30*time.Second, func() bool { return strings.Contains(pane(), text) }) {
			t.Fatalf("the human's dashboard never showed %q:\n%s", text, pane())
		}
	}
	var withs, withouts, watchings []float64
	for range 5 {
		withouts = append(withouts, cpuShare(t, ep.PID, 6*time.Second))
		outer.Must("new-session", "-d", "-s", "h", "-x", "160", "-y", "48", "--",
			"env", "PATH="+path, "TERMSPRAWL_HOME="+e.state, "TERMSPRAWL_TMUX_SOCKET="+e.tmux.Socket, e.ts, "dash")
		waitPane(fmt.Sprintf("%d nodes", total))
		outer.Must("send-keys", "-t", "h", "/")
		outer.Must("send-keys", "-t", "h", "-l", "p-00")
		outer.Must("send-keys", "-t", "h", "Enter")
		waitPane("line ")
		hpid := pidOf(outer.Socket, "h")
		h0, w0 := pidCPU(t, hpid), time.Now()
		withs = append(withs, cpuShare(t, ep.PID, 6*time.Second))
		watchings = append(watchings, float64(pidCPU(t, hpid)-h0)/float64(time.Since(w0)))
		outer.Must("send-keys", "-t", "h", "q")
		var out []byte
		if !testenv.Until(20*time.Second, func() bool {
			var err error
			out, err = exec.Command("tmux", "-L", outer.Socket, "has-session", "-t", "=h").CombinedOutput()
			if err != nil {
				return true // the pane's program ended, and its session with it
			}
			return false
		}) {
			t.Fatalf("the human's dashboard did not quit on q: %s\n%s", out, pane())
		}
		time.Sleep(time.Second)
	}
	median := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	pct := func(v []float64) string {
		var b strings.Builder
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%.1f", 100*x)
		}
		return b.String()
	}
	with, without := median(withs), median(withouts)
	t.Logf("orchestrator CPU, %d printing (medians of 5 rounds of 6 s): %.1f%% of a core with a dashboard attached (showing one of them), %.1f%% without: %.2f× (rounds with %s, without %s); the dashboard used %.1f%%",
		printers, 100*with, 100*without, with/without, pct(withs), pct(withouts), 100*median(watchings))

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
