package worktree

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SetupFile is the worktree's setup, relative to the worktree (else the
// main worktree): {"setup": [argv…]} or {"setup": [[argv…], …]}.
const SetupFile = ".termsprawl/worktree.json"

// Setup reads the setup commands of a worktree (none: nil).
func Setup(in Info) ([][]string, error) {
	var raw []byte
	var err error
	for _, dir := range []string{in.Path, in.Repo} {
		if raw, err = os.ReadFile(filepath.Join(dir, SetupFile)); err == nil {
			break
		}
	}
	if err != nil {
		return nil, nil
	}
	return ParseSetup(raw)
}

// ParseSetup parses the content of a setup file (no setup: nil). The
// launch path reads the file beneath its root and runs the setup only
// when the human approved that content (CONTRACT §26, orchestrator/trust).
func ParseSetup(raw []byte) ([][]string, error) {
	var f struct {
		Setup json.RawMessage `json:"setup"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s is not JSON {\"setup\": [argv…]}: %w", SetupFile, err)
	}
	if len(f.Setup) == 0 || string(f.Setup) == "null" {
		return nil, nil
	}
	var one []string
	if json.Unmarshal(f.Setup, &one) == nil {
		if len(one) == 0 {
			return nil, nil
		}
		return [][]string{one}, nil
	}
	var many [][]string
	if err := json.Unmarshal(f.Setup, &many); err != nil {
		return nil, fmt.Errorf("%s: setup must be an argv array of strings (or an array of them): %w", SetupFile, err)
	}
	for _, a := range many {
		if len(a) == 0 {
			return nil, errors.New(SetupFile + ": an empty argv in setup")
		}
	}
	return many, nil
}

// WrapSetup returns the node's command with the setup run first in the
// worktree: /bin/sh runs each setup argv (its output in the node, at most
// SetupTimeout each), says when one fails, then execs the program (the
// user's shell when program is empty), which keeps the node's pid.
func WrapSetup(notes []string, setup [][]string, program []string) []string {
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "printf 'termsprawl: worktree: %%s\\n' %s\n", shQuote(n))
	}
	b.WriteString("cmd_timeout=''; if command -v timeout >/dev/null 2>&1; then cmd_timeout='timeout -k 5 " + fmt.Sprint(int(SetupTimeout.Seconds())) + "'; fi\n")
	for _, argv := range setup {
		q := quoteAll(argv)
		fmt.Fprintf(&b, "printf 'termsprawl: worktree setup: %%s\\n' %s\n", shQuote(strings.Join(argv, " ")))
		fmt.Fprintf(&b, "$cmd_timeout %s; rc=$?\n", q)
		b.WriteString("if [ $rc -ne 0 ]; then printf 'termsprawl: worktree setup failed (exit %d); starting the program anyway\\n' $rc; fi\n")
	}
	b.WriteString("if [ $# -eq 0 ]; then exec \"${SHELL:-/bin/sh}\"; fi\nexec \"$@\"\n")
	return append([]string{"/bin/sh", "-c", b.String(), "termsprawl-setup"}, program...)
}

func quoteAll(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shQuote(a)
	}
	return strings.Join(q, " ")
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
