// Command termsprawlctl is termsprawl's agent-side helper: doctor, call
// and the MCP stdio bridge (see package cli).
package main

import (
	"os"

	"github.com/termsprawl/termsprawl/cli"
)

func main() {
	os.Exit(cli.MainCtl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
