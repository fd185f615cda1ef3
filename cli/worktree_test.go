package cli

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// The worktree commands and flags map to their operations; --worktree
// takes its NAME optionally.
func TestWorktreeCommandsMapToOperations(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	wd, _ := os.Getwd()
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		switch op {
		case "terminal_launch", "agent_launch":
			return tools.OKResult(map[string]any{"action": op, "result": map[string]any{"terminal": "n7"}, "state": map[string]any{}})
		case "worktree_diff":
			return tools.OKResult(tools.WorktreeDiff{Node: "n7", Diff: "+x\n", Turns: []tools.WorktreeTurn{}})
		case "worktree_list":
			return tools.OKResult(tools.WorktreeList{Worktrees: []tools.WorktreeEntry{}})
		}
		return tools.OKResult(map[string]any{"action": op, "result": map[string]any{}, "state": map[string]any{}})
	})
	sd := "--state-dir=" + fs.Dir
	cases := []struct {
		args []string
		op   string
		want map[string]any
	}{
		{[]string{sd, "new", "--worktree", "fix", "--", "bash"}, "terminal_launch",
			map[string]any{"command": []any{"bash"}, "cwd": wd, "worktree": map[string]any{"branch": "fix"}}},
		{[]string{sd, "new", "--worktree", "--", "bash"}, "terminal_launch",
			map[string]any{"command": []any{"bash"}, "cwd": wd, "worktree": map[string]any{}}},
		{[]string{sd, "new", "--worktree"}, "terminal_launch", map[string]any{"cwd": wd, "worktree": map[string]any{}}},
		{[]string{sd, "agent", "custom", "--worktree", "--base", "v2", "--submodules", "--", "a"}, "agent_launch",
			map[string]any{"agent": "custom", "command": []any{"a"}, "cwd": wd, "worktree": map[string]any{"base": "v2", "submodules": true}}},
		{[]string{sd, "agent", "claude", "--worktree=spike"}, "agent_launch",
			map[string]any{"agent": "claude", "cwd": wd, "worktree": map[string]any{"branch": "spike"}}},
		{[]string{sd, "diff", "n7", "--turn", "2"}, "worktree_diff", map[string]any{"node": "n7", "turn": float64(2)}},
		{[]string{sd, "diff", "n7", "--stat"}, "worktree_diff", map[string]any{"node": "n7", "stat": true}},
		{[]string{sd, "review", "n7", "src/a b.go:42", "too", "long"}, "worktree_comment", map[string]any{"node": "n7", "file": "src/a b.go", "line": float64(42), "text": "too long"}},
		{[]string{sd, "review", "n7", "--send"}, "worktree_review_send", map[string]any{"node": "n7"}},
		{[]string{sd, "finish", "n7", "--merge"}, "worktree_finish", map[string]any{"node": "n7", "mode": "merge"}},
		{[]string{sd, "finish", "n7", "--push", "--discard"}, "worktree_finish", map[string]any{"node": "n7", "mode": "push", "discard": true}},
		{[]string{sd, "worktrees"}, "worktree_list", map[string]any{}},
		{[]string{sd, "worktrees", "prune"}, "worktree_prune", map[string]any{}},
	}
	for _, c := range cases {
		n := len(fs.Backend.Calls())
		code, _, errb := runHuman(t, c.args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb)
		}
		op, args := callAt(t, fs, n)
		if op != c.op || !reflect.DeepEqual(args, c.want) {
			t.Errorf("%v: called %s %v, want %s %v", c.args, op, args, c.op, c.want)
		}
	}
	for _, bad := range [][]string{
		{sd, "finish", "n7"},
		{sd, "finish", "n7", "--merge", "--keep"},
		{sd, "review", "n7", "nofile", "x"},
		{sd, "review", "n7", "a.go:0", "x"},
		{sd, "new", "--base", "main"},
	} {
		n := len(fs.Backend.Calls())
		if code, _, _ := runHuman(t, bad...); code != ExitUsage || len(fs.Backend.Calls()) != n {
			t.Errorf("%v: exit %d (want %d, nothing called)", bad, code, ExitUsage)
		}
	}
}
