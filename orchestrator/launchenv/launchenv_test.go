package launchenv

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode string
		env  map[string]string
		want string // "" ok, else a part of the error
	}{
		{"", nil, ""}, {"replace", map[string]string{"A_1": "x"}, ""}, {"inherit", nil, ""},
		{"merge", nil, `env_mode "merge"`},
		{"", map[string]string{"1A": "x"}, `env name "1A"`},
		{"", map[string]string{"A=B": "x"}, `env name "A=B"`},
	} {
		err := Check(c.mode, c.env)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%q, %v) = %v, want %q", c.mode, c.env, err, c.want)
		}
		if err != nil && tools.KindOf(err) != tools.KindUsage {
			t.Errorf("Check(%q, %v): kind %v, want usage", c.mode, c.env, tools.KindOf(err))
		}
	}
}

func TestCheckProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "run"), filepath.Join(dir, "data")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=/nowhere", "PATH=/no/such:" + dir}
	for _, c := range []struct{ prog, want string }{
		{"run", ""}, {exe, ""}, {"./run", ""},
		{"missing", "not on the node's PATH"}, {plain, "not executable"}, {dir, "not a regular file"}, {"/no/such/prog", "check the path"},
	} {
		err := CheckProgram(c.prog, dir, env)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckProgram(%q) = %v, want %q", c.prog, err, c.want)
		}
	}
}

// A local node's list: the launch's env over the minimal one, termsprawlctl
// first on PATH, TERMSPRAWL_* after, the engine's extras last.
func TestLocalList(t *testing.T) {
	t.Parallel()
	l := Local{Env: map[string]string{"B": "2", "A": "1"}, Extra: map[string]string{"TERMSPRAWL_NODE": "extra"},
		CtlPath: "/opt/ts/termsprawlctl", StateDir: "/state", ID: "n1", Socket: "sock", Sandbox: "workspace"}
	got := l.List()
	idx := func(k string) int {
		return slices.IndexFunc(got, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	if i := idx("PATH"); i < 0 || !strings.HasPrefix(got[i], "PATH=/opt/ts") {
		t.Errorf("PATH does not start with termsprawlctl's folder: %v", got)
	}
	if idx("A") > idx("B") || idx("B") > idx("TERMSPRAWL_HOME") {
		t.Errorf("order: %v", got)
	}
	for _, want := range []string{"TERMSPRAWL_SANDBOX=workspace", "TERMSPRAWL_TMUX_SOCKET=sock", "TERMSPRAWL_NODE=extra", "TERMSPRAWL_CTL=/opt/ts/termsprawlctl"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %v", want, got)
		}
	}
	if slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "TERM=") }) {
		t.Errorf("TERM set (tmux sets it): %v", got)
	}
	r := Remote{Env: map[string]string{"A": "1"}, ID: "n2", SessionFile: "/r/sessions/n2.json", Home: "/r", Socket: "s", Host: "big", Sandbox: "none"}
	if got := r.List(); !slices.Equal(got, []string{"A=1", "TERMSPRAWL_SESSION_FILE=/r/sessions/n2.json", "TERMSPRAWL_NODE=n2", "TERMSPRAWL_HOME=/r", "TERMSPRAWL_TMUX_SOCKET=s", "TERMSPRAWL_HOST=big"}) {
		t.Errorf("remote list %v", got)
	}
}
