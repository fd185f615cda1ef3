package toolserver

import (
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestMain runs the package's tests four at a time by default: they are
// independent (private tmux sockets, temporary state directories) and
// mostly wait on tmux and the programs they start.
func TestMain(m *testing.M) { testenv.Main(m, 4) }
