package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// Every terminal argument takes an id, a unique name or a unique id
// prefix; ambiguity lists the candidates (CONTRACT §10).
func TestNodesAreNamedByIdNameOrPrefix(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 6 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	a := apiLaunchNamed(t, op, "my build", "", "cat") // id my-build
	b := apiLaunchNamed(t, op, "web-1x", "", "cat")
	c := apiLaunchNamed(t, op, "web-2x", "", "cat")
	for word, want := range map[string]string{a: a, "my build": a, "my-b": a, "web-1": b, b: b} {
		var snap tools.Snapshot
		apiOK(t, op, "terminal_snapshot", apiM{"terminal": word}, &snap)
		if snap.Terminal != want {
			t.Errorf("%q named %s, want %s", word, snap.Terminal, want)
		}
	}
	res := apiFail(t, op, "terminal_snapshot", apiM{"terminal": "web"}, tools.KindUsage)
	if !strings.Contains(res.Error, b) || !strings.Contains(res.Error, c) {
		t.Errorf("ambiguity does not list the candidates: %s", res.Error)
	}
	apiFail(t, op, "terminal_snapshot", apiM{"terminal": "nothing-like-it"}, tools.KindNotFound)
	// Mutations resolve too, and the receipt names the id.
	r, _ := apiMutate(t, op, "terminal_type", apiM{"terminal": "my build", "text": "x"})
	var in tools.InputResult
	if err := json.Unmarshal(r.Result, &in); err != nil || in.Terminal != a {
		t.Fatalf("typed into %q: %s", in.Terminal, r.Result)
	}
}

// A node's launches start in its program's current directory.
func TestLaunchesStartWhereTheCallerIs(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	here := t.TempDir()
	there := filepath.Join(here, "sub")
	if err := os.Mkdir(there, 0o700); err != nil {
		t.Fatal(err)
	}
	r, _ := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"sh", "-c", "cd sub && exec cat"}, "cwd": here, "name": "parent"})
	var parent tools.NodeInfo
	json.Unmarshal(r.Result, &parent)
	sp := s.session(parent.Terminal)
	r, _ = apiMutate(t, sp, "terminal_launch", apiM{"command": []string{"sh", "-c", "pwd; exec cat"}, "name": "child"})
	var child tools.NodeInfo
	json.Unmarshal(r.Result, &child)
	if screen := apiWaitScreen(t, op, child.Terminal, "sub"); !strings.Contains(screen, there) {
		t.Fatalf("the child started elsewhere:\n%s", screen)
	}
}
