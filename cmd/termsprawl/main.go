// Command termsprawl runs the termsprawl orchestrator and is the human's
// CLI for it (see package cli).
package main

import (
	"os"

	"github.com/termsprawl/termsprawl/cli"
)

func main() {
	os.Exit(cli.MainTermsprawl(os.Args[1:], os.Stdout, os.Stderr))
}
