package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// waitFor waits (termsprawl's own event-driven wait) for text on a node.
func (e *e2e) waitFor(id, text string) {
	e.t.Helper()
	args, _ := json.Marshal(map[string]any{"terminal": id, "wait": "text", "text": text, "after": 0, "timeout_ms": 30000})
	code, out, errb := e.run(e.ctl, "--session", e.oper, "call", "terminal_wait_for", string(args))
	if code != 0 {
		_, snap, _ := e.run(e.ctl, "--session", e.oper, "call", "terminal_snapshot", `{"terminal":"`+id+`"}`)
		e.t.Fatalf("wait for %q on %s: exit %d\n%s%s\nscreen: %s", text, id, code, out, errb, snap)
	}
}

// The human's whole path to another machine: up --host (saved in
// hosts.json), new --host, ls with the host, an agent there calling
// termsprawlctl doctor through the reverse forward, attach over ssh from
// a terminal, and a restart that adopts the remote node again.
func TestE2ERemoteHost(t *testing.T) {
	t.Parallel()
	f := sshtest.New(t)
	e := newE2E(t)
	if err := tools.EnsureStateDir(e.state); err != nil {
		t.Fatal(err)
	}
	// The fixture's ssh config and a private remote tmux socket come
	// from hosts.json; the flags name the host and its termsprawlctl.
	if err := tools.WriteHosts(e.state, []tools.HostSpec{{Name: "big", Dest: sshtest.Good, SSHOptions: f.SSHOptions(),
		Socket: f.RemoteSocket, RemoteDir: f.RemoteDir("big")}}); err != nil {
		t.Fatal(err)
	}
	// A name that collides with hosts.json is refused before anything runs.
	if code, _, errb := e.run(e.ts, "up", "--host", "big=elsewhere"); code != ExitNo || !strings.Contains(errb, `host name "big" is already tsgood in hosts.json`) {
		t.Fatalf("colliding --host: exit %d: %s", code, errb)
	}
	up, upOut, upErr := e.upWith("--host", "big="+sshtest.Good, "--host-ctl", "big="+e.ctl)
	testenv.Until(10*time.Second, func() bool { return strings.Contains(upOut.String(), "host big") }) // the host lines follow the banner
	if !strings.Contains(upOut.String(), "host big (tsgood): connected, tmux 3.3a") {
		t.Errorf("up's banner does not name the host:\n%s", upOut.String())
	}
	hosts, err := tools.ReadHosts(e.state)
	if err != nil || len(hosts) != 1 || hosts[0].Ctl != e.ctl {
		t.Fatalf("hosts.json after up: %+v %v", hosts, err)
	}

	id := strings.TrimSpace(e.must(e.ts, "new", "--host", "big", "--name", "far", "--", "bash", "--norc", "--noprofile"))
	e.submit(e.oper, id, "ip -4 -o addr show; echo marker-$((40+2))", "marker-42")
	e.waitFor(id, f.HostIP+"/30")
	ls := e.must(e.ts, "ls")
	if !strings.Contains(ls, "HOST") || !strings.Contains(ls, "far") || !strings.Contains(ls, "big") {
		t.Fatalf("ls:\n%s", ls)
	}

	// An agent on the host reaches termsprawl through the reverse forward.
	agent := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--host", "big", "--name", "remote-agent", "--",
		"sh", "-c", `read go; echo "session=$TERMSPRAWL_SESSION_FILE"; "$TERMSPRAWL_CTL" doctor; echo "rc=$?"; exec sleep 600`))
	// The agent calls once its launch has answered (the tool server knows
	// a node's token from then on).
	e.submit(e.oper, agent, "go", "rc=")
	read := e.must(e.ctl, "--session", e.oper, "call", "terminal_read", `{"terminal":"`+agent+`","max_chars":8000}`)
	var rr struct {
		Value tools.ReadResult `json:"value"`
	}
	if err := json.Unmarshal([]byte(read), &rr); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(rr.Value.Text, "\n", "")
	for _, want := range []string{"rc=0", `"node": "` + agent + `"`, `"role": "agent"`, "session=" + f.RemoteDir("big") + "/sessions/" + agent + ".json"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the remote agent's doctor lacks %q:\n%s\nlog:\n%s", want, rr.Value.Text, upErr.String())
		}
	}

	if out := e.must(e.ts, "doctor"); !strings.Contains(out, "on host big") {
		t.Fatalf("doctor says nothing of the host:\n%s", out)
	}

	// attach from a terminal (a local node is one) shows the remote pane.
	viewer := strings.TrimSpace(e.must(e.ts, "new", "--name", "viewer", "--", e.ts, "attach", id))
	e.waitFor(viewer, "marker-42")

	// A restart without flags: hosts.json brings the host back, the node
	// is adopted.
	e.must(e.ts, "kill", viewer)
	e.down(up)
	up, _, _ = e.upWith()
	ls = e.must(e.ts, "ls")
	if !strings.Contains(ls, "far") || !strings.Contains(ls, "big") || !strings.Contains(ls, "running") {
		t.Fatalf("ls after restart:\n%s", ls)
	}
	e.submit(e.oper, id, "echo again-$((1+1))", "again-2")

	// termsprawl hosts: the table and its JSON; rm refused while the
	// host has live nodes.
	if out := e.must(e.ts, "hosts"); !strings.Contains(out, "NAME") || !regexp.MustCompile(`big\s+tsgood\s+connected\s+2\s+[0-9.]+ ms\s+\d+[smh] ago`).MatchString(out) {
		t.Fatalf("hosts:\n%s", out)
	}
	var hl tools.HostList
	if err := json.Unmarshal([]byte(e.must(e.ts, "hosts", "--json")), &hl); err != nil || len(hl.Hosts) != 1 || hl.Hosts[0].Nodes != 2 || hl.Hosts[0].RoundTripMS == nil {
		t.Fatalf("hosts --json: %+v %v", hl, err)
	}
	if code, _, errb := e.run(e.ts, "hosts", "rm", "big"); code != ExitNo || !strings.Contains(errb, "live nodes") || !strings.Contains(errb, "--close-nodes") {
		t.Fatalf("hosts rm with live nodes: exit %d: %s", code, errb)
	}
	e.must(e.ts, "kill", id)
	e.must(e.ts, "kill", agent)
	if out, err := f.Tmux("list-sessions", "-F", "#{session_name}"); err == nil && strings.Contains(out, "ts-") {
		t.Fatalf("remote sessions left after kill: %s", out)
	}
	// down --all ends this orchestrator's server on the host, over ssh.
	e.must(e.ts, "new", "--host", "big", "--name", "last", "--", "sleep", "600")
	if out := e.must(e.ts, "down", "--all"); !strings.Contains(out, "ended every node on host big") {
		t.Fatalf("down --all:\n%s", out)
	}
	if !up.waitExit(15 * time.Second) {
		t.Fatal("termsprawl up still runs after down --all")
	}
	if out, err := f.Tmux("list-sessions", "-F", "#{session_name}"); err == nil {
		t.Fatalf("the host's tmux server outlived down --all: %s", out)
	}
}
