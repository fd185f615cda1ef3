package orchestrator

import (
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestMain runs the package's tests six at a time by default: they are
// independent (private tmux sockets and ssh namespaces, temporary state
// directories) and mostly wait on tmux and the programs they start: six
// took 88, 123 and 111 s where four took 103, 123 and 118 s, for 0–7 %
// more CPU, and eight was no faster (docs/PERFORMANCE.md).
func TestMain(m *testing.M) { testenv.Main(m, 6) }
