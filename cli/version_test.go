package cli

import (
	"strings"
	"testing"
)

// A build without VCS information (a test binary has none) says how to
// name the commit; one built with -ldflags -X …cli.Commit names it.
func TestVersionLineCommit(t *testing.T) {
	if line := versionLine("termsprawl"); !strings.Contains(line, "commit unknown") || !strings.Contains(line, `-ldflags "-X github.com/termsprawl/termsprawl/cli.Commit=$(git rev-parse HEAD)"`) {
		t.Fatalf("without VCS information: %q", line)
	}
	old := Commit
	Commit = "0123456789abcdef"
	defer func() { Commit = old }()
	if line := versionLine("termsprawl"); !strings.Contains(line, "(commit 0123456789abcdef, ") {
		t.Fatalf("with -X cli.Commit: %q", line)
	}
}
