package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// MissingSessionMessage is what termsprawlctl prints when it has no
// session file (CONTRACT §5).
const MissingSessionMessage = "Launch this helper from a termsprawl agent, or provide --session /absolute/path/to/session.json"

// SessionEnv names the environment variable holding the session file.
const SessionEnv = "TERMSPRAWL_SESSION_FILE"

// sessionChoice is the session file a termsprawlctl run uses and where it
// came from.
type sessionChoice struct {
	Path   string // absolute; "" when there is none
	Source string // "--session", SessionEnv or "operator"
	// Looked is the operator session file that was looked for when there
	// was no flag and no environment variable ("" if the state directory
	// does not resolve), and LookErr why it was not used.
	Looked  string
	LookErr error
}

// resolveSession picks the session file (CONTRACT §5, §10): --session,
// else $TERMSPRAWL_SESSION_FILE, else <state>/sessions/operator.json when
// the state directory resolves and that file is readable. Nothing but
// that one open is done.
func resolveSession(flag string) sessionChoice {
	abs := func(s string) string {
		if a, err := filepath.Abs(s); err == nil {
			return a
		}
		return s
	}
	if strings.TrimSpace(flag) != "" {
		return sessionChoice{Path: abs(flag), Source: "--session"}
	}
	if s := os.Getenv(SessionEnv); strings.TrimSpace(s) != "" {
		return sessionChoice{Path: abs(s), Source: SessionEnv}
	}
	dir, err := tools.StateDir()
	if err != nil {
		return sessionChoice{LookErr: err}
	}
	op := tools.OperatorSessionPath(dir)
	c := sessionChoice{Looked: op}
	if _, err := tools.ReadFileBounded(op, tools.MaxStateFileBytes); err != nil {
		c.LookErr = err
		return c
	}
	c.Path, c.Source = op, "operator"
	return c
}

// printMissingSession writes the contract's message and what was looked
// for.
func printMissingSession(w io.Writer, c sessionChoice) {
	fmt.Fprintln(w, MissingSessionMessage)
	switch {
	case c.Looked != "" && errors.Is(c.LookErr, fs.ErrNotExist):
		fmt.Fprintf(w, "(no --session, %s is not set, and %s does not exist: start termsprawl with `termsprawl up`)\n", SessionEnv, c.Looked)
	case c.Looked != "":
		fmt.Fprintf(w, "(no --session, %s is not set, and %s cannot be used: %v)\n", SessionEnv, c.Looked, c.LookErr)
	case c.LookErr != nil:
		fmt.Fprintf(w, "(no --session, %s is not set, and the state directory is unknown: %v)\n", SessionEnv, c.LookErr)
	}
}

// sessionHint explains an unusable session file that was named
// explicitly ("" when the file is there).
func sessionHint(c sessionChoice) string {
	if c.Source == "operator" || c.Path == "" {
		return ""
	}
	_, err := os.Stat(c.Path)
	if err == nil {
		return ""
	}
	from := "--session"
	if c.Source == SessionEnv {
		from = "$" + SessionEnv
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("the session file %s (from %s) does not exist: a node's session is <state>/sessions/NODE.json, and it is removed when the node is closed", c.Path, from)
	}
	return fmt.Sprintf("the session file %s (from %s) cannot be read: %v", c.Path, from, err)
}
