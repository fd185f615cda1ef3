// Command termsprawlctl is termsprawl's agent-side helper: doctor, call,
// the agents' hooks and the MCP stdio bridge (see package cli).
//
// It links only the standard library (internal/ctllite): call, doctor and
// the state hooks run here, as fast as tmux's own client; everything else
// is answered by the full CLI in the termsprawl binary beside it
// (`termsprawl __termsprawlctl ARGS…`, cli.MainCtl).
package main

import (
	"os"

	"github.com/termsprawl/termsprawl/internal/ctllite"
)

func main() {
	os.Exit(ctllite.Main(os.Args[1:]))
}
