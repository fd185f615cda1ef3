package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// restartCycles is how often TestE2ERestartLoopUnderLoad kills and
// restarts the orchestrator.
const restartCycles = 40

// Every restart adopts every node with its files, tokens, owner and
// command intact — also with the CPU busy, where adoption once saw an
// empty session list and deleted every node's files.
func TestE2ERestartLoopUnderLoad(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	// The nodes print before they read: a launch returns once a program's
	// first output went quiet (a silent one costs the 2 s limit).
	var ids []string
	for range 4 {
		ids = append(ids, strings.TrimSpace(e.must(e.ts, "new", "--", "sh", "-c", "echo reading; exec cat")))
	}
	// One node launched by a node: its owner must survive too.
	out := e.must(e.ctl, "--session", tools.SessionPath(e.state, ids[0]), "call", "terminal_launch", `{"command":["sh","-c","echo reading; exec cat"],"name":"child"}`)
	var r struct {
		Value tools.ReceiptOf[tools.NodeInfo] `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Value.Result.Terminal == "" {
		t.Fatalf("launch by a node: %v\n%s", err, out)
	}
	ids = append(ids, r.Value.Result.Terminal)
	sort.Strings(ids)

	type nodeFiles struct{ token, meta string }
	snapshot := func() map[string]nodeFiles {
		m := map[string]nodeFiles{}
		for _, id := range ids {
			s, err := tools.ReadSession(tools.SessionPath(e.state, id))
			if err != nil {
				t.Fatalf("session file of %s: %v", id, err)
			}
			meta, err := os.ReadFile(filepath.Join(e.state, "nodes", id+".json"))
			if err != nil {
				t.Fatalf("metadata of %s: %v", id, err)
			}
			var md map[string]any
			json.Unmarshal(meta, &md)
			delete(md, "epoch") // counts the restarts
			b, _ := json.Marshal(md)
			m[id] = nodeFiles{token: s.Token, meta: string(b)}
		}
		return m
	}
	want := snapshot()
	listed := func() tools.NodeList {
		var l tools.NodeList
		if err := json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	owners := map[string]string{}
	for _, n := range listed().Terminals {
		owners[n.Terminal] = n.Owner + " " + strings.Join(n.Command, " ")
	}

	// Both cores busy through the restarts: CPU burners, ours alone,
	// ended by their own pids; as many as the cores the machine's load
	// leaves idle (none in a full `go test ./...`, which keeps both busy:
	// burners there would only slow the suite's other tests).
	burners := testenv.IdleCores(2)
	t.Logf("%d CPU burners beside the restarts", burners)
	for range burners {
		b := exec.Command("sh", "-c", "while :; do :; done")
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Process.Kill(); b.Wait() })
	}

	for cycle := range restartCycles {
		if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !up.waitExit(15 * time.Second) {
			t.Fatal("termsprawl up survived SIGKILL")
		}
		up, _ = e.up()
		l := listed()
		if len(l.Terminals) != len(ids) {
			t.Fatalf("cycle %d: %d nodes adopted, want %d: %+v", cycle, len(l.Terminals), len(ids), l.Terminals)
		}
		for _, n := range l.Terminals {
			if got := n.Owner + " " + strings.Join(n.Command, " "); got != owners[n.Terminal] {
				t.Fatalf("cycle %d: node %s is %q, was %q", cycle, n.Terminal, got, owners[n.Terminal])
			}
		}
		got := snapshot()
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("cycle %d: files of %s changed:\n got %+v\nwant %+v", cycle, id, got[id], w)
			}
		}
	}
	// The node's own token still works.
	e.must(e.ctl, "--session", tools.SessionPath(e.state, ids[0]), "call", "session_info")
	e.down(up)
}
