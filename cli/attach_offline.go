package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// The tmux fallback (CONTRACT §18): tmux keeps the nodes while termsprawl
// is down, so `termsprawl attach NODE` attaches with tmux directly then,
// from the node's metadata (<state>/nodes/<id>.json: its id, name and
// tmux server), and says that termsprawl is not running.

// nodesDir is the directory of the nodes' metadata in the state dir.
const nodesDir = "nodes"

// nodeFile is the part of a node's metadata file that attach needs.
type nodeFile struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Command []string  `json:"command"`
	Socket  string    `json:"socket"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
}

// probeTimeout bounds the check whether termsprawl answers.
const probeTimeout = 5 * time.Second

// isDown reports whether no termsprawl serves this state dir (the same
// test as every command's exit 3).
func (h *human) isDown() bool {
	ctx, cancel := context.WithTimeout(h.ctx, probeTimeout)
	defer cancel()
	res := tools.Call(ctx, h.sessionFile(), tools.Request{Operation: "session_info"}, tools.CallOptions{})
	return h.notRunning(res)
}

// offlineNodes reads the nodes' metadata files, oldest first.
func (h *human) offlineNodes() ([]tools.NodeInfo, error) {
	paths, err := filepath.Glob(filepath.Join(h.stateDir, nodesDir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list node files: %w", err)
	}
	var files []nodeFile
	for _, p := range paths {
		data, err := tools.ReadFileBounded(p, tools.MaxStateFileBytes)
		if err != nil {
			continue // being written or removed: not a node to attach to
		}
		var f nodeFile
		if json.Unmarshal(data, &f) != nil || !tools.ValidNodeID(f.ID) {
			continue
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Created.Before(files[j].Created) })
	socket := h.socket // metadata written before shards: the socket termsprawl ran on
	if s, err := tools.ReadSession(h.sessionFile()); err == nil && s.Socket != "" {
		socket = s.Socket
	}
	rows := make([]tools.NodeInfo, 0, len(files))
	for _, f := range files {
		rows = append(rows, tools.NodeInfo{Terminal: f.ID, Name: f.Name, Command: f.Command, TmuxSocket: cmp.Or(f.Socket, socket), Host: f.Host})
	}
	return rows, nil
}

// attachOffline attaches to a node while termsprawl is down.
func (h *human) attachOffline(word string, readOnly bool) int {
	rows, err := h.offlineNodes()
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: termsprawl is not running (state dir %s), and its nodes cannot be read: %v\n", h.prefix(), h.stateDir, err)
		return ExitNotRunning
	}
	if len(rows) == 0 {
		h.printNotRunning()
		return ExitNotRunning
	}
	n, err := resolveNode(rows, word)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: termsprawl is not running (state dir %s), and among its nodes' files: %v\n", h.prefix(), h.stateDir, strings.ReplaceAll(err.Error(), "`termsprawl ls` lists the nodes", "they are in "+filepath.Join(h.stateDir, nodesDir)))
		return nameErrorCode(err) // 2 for an ambiguous NODE (CONTRACT §18)
	}
	if n.Host != "" {
		fmt.Fprintf(h.stderr, "%s: termsprawl is not running (state dir %s): attaching node %s on host %s with ssh and tmux directly; `termsprawl up` adopts it again\n", h.prefix(), h.stateDir, n.Terminal, n.Host)
		return h.attachRemote(n, readOnly)
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: tmux is not on PATH: install tmux (%v)\n", h.prefix(), err)
		return ExitNo
	}
	session := "ts-" + n.Terminal
	check := exec.CommandContext(h.ctx, tmux, "-L", n.TmuxSocket, "has-session", "-t", "="+session)
	check.Env = tools.EnvWithoutTmux(os.Environ())
	if out, err := check.CombinedOutput(); err != nil {
		fmt.Fprintf(h.stderr, "%s: termsprawl is not running (state dir %s), and node %s's tmux session %s is gone from tmux server %s (%s): start termsprawl with `termsprawl up`\n",
			h.prefix(), h.stateDir, n.Terminal, session, n.TmuxSocket, strings.TrimSpace(string(out)))
		return ExitNo
	}
	argv := attachArgv(n.TmuxSocket, n, readOnly, detachKey(h))
	fmt.Fprintf(h.stderr, "%s: termsprawl is not running (state dir %s): attaching node %s with tmux directly (%s); `termsprawl up` adopts it again\n",
		h.prefix(), h.stateDir, n.Terminal, shellJoin(argv))
	if !h.attachTerminal(n.Terminal) {
		return ExitUsage
	}
	return h.execAttach(tmux, argv)
}
