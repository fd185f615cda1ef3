package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// termsprawlctl's call and doctor must not pay mcp-go's start-up
// (issue 14; docs/PERFORMANCE.md "A lean termsprawlctl"): the binary
// links neither mcp-go nor the JSON Schema compilers it pulls in. The MCP
// server lives in the termsprawl binary (internal/mcpserve).
func TestCtlDoesNotLinkMCPGo(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/termsprawlctl").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		// Nor the dashboard (Bubble Tea): cmd/termsprawl plugs it in.
		for _, banned := range []string{"github.com/mark3labs/mcp-go", "github.com/santhosh-tekuri/jsonschema", "github.com/google/jsonschema-go", module + "/internal/mcpserve",
			"charm.land/", module + "/cli/dash"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("termsprawlctl links %s", dep)
			}
		}
	}
	out, err = exec.Command("go", "list", "-deps", module+"/cmd/termsprawl").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), module+"/internal/mcpserve\n") {
		t.Error("termsprawl does not link internal/mcpserve: termsprawlctl mcp would have no server to run")
	}
}

// termsprawlctl is as fast as tmux's own client (issue 27): its binary
// links the standard library and internal/ctllite only, no kong, no x/vt,
// no operation table; the full CLI is the termsprawl binary's
// (`termsprawl __termsprawlctl`).
func TestCtlLinksOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/cmd/termsprawlctl").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != module+"/cmd/termsprawlctl" && dep != module+"/internal/ctllite" {
			t.Errorf("termsprawlctl links %s", dep)
		}
	}
}
