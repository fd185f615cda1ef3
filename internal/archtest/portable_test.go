package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linuxOnly matches uses of Linux-only system interfaces. A file using
// them must be Linux-only itself (a _linux.go name or a linux build
// constraint), with a fallback beside it, so the project builds on other
// systems (CI also runs GOOS=darwin go build ./...).
var linuxOnly = regexp.MustCompile(`(syscall|unix)\.(Epoll\w*|EPOLL\w*|SYS_PIDFD\w*|Pidfd\w*|PIDFD\w*|Pdeathsig|PR_SET_PDEATHSIG|Prctl)|Pdeathsig:|sysPidfdOpen`)

func TestLinuxOnlyCodeIsTagged(t *testing.T) {
	t.Parallel()
	root := "../.."
	var checked int
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		// Tests run on Linux (they drive real tmux); the binaries build anywhere.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_linux.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		text := string(src)
		if strings.Contains(text, "//go:build linux") {
			return nil
		}
		if m := linuxOnly.FindString(text); m != "" {
			t.Errorf("%s uses %s but is not Linux-only: move it to a _linux.go file with a fallback", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d files", checked)
	}
}
