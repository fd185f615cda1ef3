package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
)

// testSeam matches the names of the test seams: the engine's and the tool
// server's hooks are fields set by their packages' tests, and the test
// pauses exist only with the termsprawl_testhooks build tag.
var testSeam = regexp.MustCompile(`(?i)github\.com/termsprawl/termsprawl/.*(testhook|testpause|SetBeforeRegisterHook)`)

// testPauseVar is the environment variable only a tagged build reads.
const testPauseVar = "TERMSPRAWL_TEST_PAUSE_SUBMIT"

var testHooksBin struct {
	once sync.Once
	path string
	err  error
}

// termsprawlWithTestHooks builds termsprawl with -tags termsprawl_testhooks
// (once per test binary): the only build that reads the
// TERMSPRAWL_TEST_PAUSE_* variables.
func termsprawlWithTestHooks(t *testing.T) string {
	t.Helper()
	testHooksBin.once.Do(func() {
		dir, err := os.MkdirTemp(e2eBinDir, "testhooks-")
		if err != nil {
			testHooksBin.err = err
			return
		}
		out, err := exec.Command("go", "build", "-tags", "termsprawl_testhooks", "-o", dir+string(filepath.Separator),
			"github.com/termsprawl/termsprawl/cmd/termsprawl").CombinedOutput()
		if err != nil {
			testHooksBin.err = &buildError{err, out}
			return
		}
		testHooksBin.path = filepath.Join(dir, "termsprawl")
	})
	if testHooksBin.err != nil {
		t.Fatal(testHooksBin.err)
	}
	return testHooksBin.path
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build -tags termsprawl_testhooks: " + e.err.Error() + "\n" + string(e.out)
}

// The binaries users run carry no test seam: no symbol named like a test
// hook or pause (go tool nm), and not the pause variables' names; the
// tagged build the kill -9 loop uses does carry them (so the check can
// see one).
func TestNoTestSeamsInTheBinary(t *testing.T) {
	t.Parallel()
	e := newE2E(t) // the binaries built in TestMain, as users build them
	symbols := func(bin string) ([]string, []byte) {
		out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool nm %s: %v\n%s", bin, err, out)
		}
		var seams []string
		for _, l := range bytes.Split(out, []byte("\n")) {
			if testSeam.Match(l) {
				seams = append(seams, string(l))
			}
		}
		raw, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		return seams, raw
	}
	for _, bin := range []string{e.ts, e.ctl} {
		seams, raw := symbols(bin)
		if len(seams) > 0 {
			t.Errorf("%s has test seams: %q", filepath.Base(bin), seams)
		}
		if bytes.Contains(raw, []byte(testPauseVar)) {
			t.Errorf("%s reads %s", filepath.Base(bin), testPauseVar)
		}
	}
	seams, raw := symbols(termsprawlWithTestHooks(t))
	if len(seams) == 0 || !bytes.Contains(raw, []byte(testPauseVar)) {
		t.Errorf("the termsprawl_testhooks build shows no test pause (symbols %q): the check above sees nothing", seams)
	}
}
