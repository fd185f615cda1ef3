package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// --env and --env-from-shell (CONTRACT §26): the value reaches the
// program (an agent node and a terminal node), shows in no listing, `why`,
// log or world-readable file, and reaches the program again after a
// restore once its tmux server was killed.
func TestEnvReachesAgentNeverPrinted(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	const secret = "sk-test-VALUE-9f3a1c=with=equals"
	const shellSecret = "shell-VALUE-77aa"
	e.env = append(e.env, "B37_FROM_SHELL="+shellSecret)
	work := t.TempDir()
	up, _ := e.up()
	// The program writes what it got, then stays.
	prog := `printf '%s|%s' "$B37_KEY" "$B37_FROM_SHELL" > "$0"; exec sleep 600`
	outA := filepath.Join(work, "agent.out")
	outT := filepath.Join(work, "term.out")
	agent := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "envagent", "--cwd", work,
		"--env", "B37_KEY="+secret, "--env-from-shell", "B37_FROM_SHELL", "--", "sh", "-c", prog, outA))
	term := strings.TrimSpace(e.must(e.ts, "new", "--name", "envterm", "--cwd", work,
		"--env", "B37_KEY="+secret, "--", "sh", "-c", prog, outT))
	want := secret + "|" + shellSecret
	waitFile(t, outA, want)
	waitFile(t, outT, secret+"|")

	// Never printed: ls, ls --json, why, agent_status with evidence.
	for _, args := range [][]string{{"ls"}, {"ls", "--json"}, {"why", agent}, {"snapshot", "--json", term}} {
		code, out, errb := e.run(e.ts, args...)
		if strings.Contains(out+errb, "VALUE") {
			t.Fatalf("termsprawl %v (exit %d) shows an env value:\n%s%s", args, code, out, errb)
		}
	}
	if out := e.must(e.ctl, "--session", e.oper, "call", "agent_status", `{"node":"`+agent+`","explain":true}`); strings.Contains(out, "VALUE") {
		t.Fatalf("agent_status shows an env value: %s", out)
	}
	assertNoWorldReadableSecret(t, e.state, "VALUE")

	// Restore after the tmux server is killed: the value reaches the
	// program again.
	e.down(up)
	if _, err := e.tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(outA)
	_ = os.Remove(outT)
	up2, _ := e.up()
	defer e.down(up2)
	e.must(e.ts, "restore", agent)
	e.must(e.ts, "restore", term)
	waitFile(t, outA, want)
	waitFile(t, outT, secret+"|")
	for _, args := range [][]string{{"ls", "--json"}, {"why", agent}} {
		if out := e.must(e.ts, args...); strings.Contains(out, "VALUE") {
			t.Fatalf("termsprawl %v after restore shows an env value:\n%s", args, out)
		}
	}
	assertNoWorldReadableSecret(t, e.state, "VALUE")
}

// waitFile waits until path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	var b []byte
	testenv.Eventually(t, 30*time.Second, func() bool {
		b, _ = os.ReadFile(path)
		return string(b) == want
	}, func() string { return fmt.Sprintf("%s holds %q, want %q", path, b, want) })
}

// assertNoWorldReadableSecret walks the state directory: a file that
// holds secret must be readable by its owner only, and no log holds it.
func assertNoWorldReadableSecret(t *testing.T, dir, secret string) {
	t.Helper()
	kept := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), secret) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s (mode %v) holds an env value", rel, info.Mode().Perm())
		}
		if strings.HasSuffix(p, ".log") || strings.Contains(rel, "log") {
			t.Errorf("the log %s holds an env value", rel)
		}
		kept++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept == 0 {
		t.Errorf("no file of the state directory keeps the env value: a restore cannot give it again")
	}
}

// Bad --env arguments are refused with what to do, and nothing launched.
func TestEnvFlagsRefused(t *testing.T) {
	t.Parallel()
	lookup := func(k string) (string, bool) {
		if k == "SET" {
			return "v", true
		}
		return "", false
	}
	for _, tc := range []struct {
		env, shell []string
		want       map[string]string
		err        string
	}{
		{env: []string{"A=B=C"}, want: map[string]string{"A": "B=C"}},
		{env: []string{"A="}, want: map[string]string{"A": ""}},
		{env: []string{"_x1=v"}, shell: []string{"SET"}, want: map[string]string{"_x1": "v", "SET": "v"}},
		{env: []string{"1X=v"}, err: `"1X" is not an environment variable name`},
		{env: []string{"=x"}, err: "needs a name before the ="},
		{env: []string{"A-B=x"}, err: `"A-B" is not an environment variable name`},
		{env: []string{"KEY"}, err: "KEY has no =VALUE"},
		{env: []string{"sk-secret"}, err: "the argument has no ="},
		{env: []string{"TERMSPRAWL_NODE=x"}, err: "termsprawl sets its TERMSPRAWL_ variables itself"},
		{shell: []string{"UNSET"}, err: "UNSET is not set in this shell"},
		{shell: []string{"1X"}, err: "--env-from-shell"},
	} {
		got, err := envFlags{Env: tc.env, EnvFromShell: tc.shell}.env(lookup)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: err %v, want %q", tc.env, tc.shell, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("the error echoes the argument: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v %v: %v", tc.env, tc.shell, err)
			continue
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(tc.want)
		if string(gb) != string(wb) {
			t.Errorf("%v %v: %s, want %s", tc.env, tc.shell, gb, wb)
		}
	}
}

// The env argument's names are checked by the operation table, for both
// launches, before anything runs.
func TestEnvArgNamesChecked(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"terminal_launch", "agent_launch"} {
		for name, want := range map[string]string{"1X": "not an environment variable name", "": "env", "TERMSPRAWL_HOME": "TERMSPRAWL_"} {
			args := map[string]any{"env": map[string]string{name: "v"}, "command": []string{"true"}}
			if op == "agent_launch" {
				args["agent"] = "custom"
			}
			raw, _ := json.Marshal(args)
			_, _, err := validateCall(op, raw)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s env %q: %v, want %q", op, name, err, want)
			}
			var te *tools.Error
			if err != nil && (!errors.As(err, &te) || te.Kind != tools.KindUsage) {
				t.Errorf("%s env %q: kind of %v is not usage", op, name, err)
			}
		}
	}
}
