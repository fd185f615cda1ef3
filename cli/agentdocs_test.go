package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// Each generated document lists every operation of the table (operations
// added later are covered without touching this test): agent-context with
// its parameters, enums and schemas, usage and SKILL.md by name,
// reference.md with every argument.
func TestAgentDocsListEveryOperation(t *testing.T) {
	t.Parallel()
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := MainCtl(args, strings.NewReader(""), &out, &errb); code != ExitOK {
			t.Fatalf("termsprawlctl %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	var ctx agentContext
	raw := run("agent-context")
	if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Version != agentContextVersion || ctx.Format != "termsprawl-agent-context" || len(ctx.ErrorKinds) != 11 || len(ctx.ExitCodes) != 5 {
		t.Fatalf("agent-context header: %+v", ctx)
	}
	usage := run("usage")
	if lines := strings.Count(usage, "\n"); lines > 24 {
		t.Errorf("usage is %d lines: more than one screen", lines)
	}
	skill := run("skill")
	dir := t.TempDir()
	run("skill", "--out", dir)
	ref, err := os.ReadFile(filepath.Join(dir, "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "SKILL.md")); string(b) != skill {
		t.Error("SKILL.md differs from termsprawlctl skill")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "agent-context.json")); strings.TrimSpace(string(b)) != strings.TrimSpace(raw) {
		t.Error("agent-context.json differs from termsprawlctl agent-context")
	}

	ops := tools.Operations()
	if len(ctx.Operations) != len(ops) {
		t.Fatalf("agent-context has %d operations, the table %d", len(ctx.Operations), len(ops))
	}
	for i, op := range ops {
		got := ctx.Operations[i]
		if got.Name != op.Name || got.Description != op.Description || got.Mutation != op.Mutation || len(got.Params) != len(op.Params) {
			t.Errorf("agent-context operation %d: %+v, want %s", i, got, op.Name)
		}
		for j, p := range op.Params {
			if gp := got.Params[j]; gp.Name != p.Name || gp.Required != p.Required || !reflect.DeepEqual(gp.Enum, p.Enum) || len(gp.Fields) != len(p.Fields) {
				t.Errorf("%s param %s: %+v", op.Name, p.Name, gp)
			}
		}
		if !sameJSON(t, got.InputSchema, op.InputSchemaJSON()) || !sameJSON(t, got.OutputSchema, op.OutputSchemaJSON()) {
			t.Errorf("%s: schemas differ from the table's", op.Name)
		}
		for doc, text := range map[string]string{"usage": usage, "SKILL.md": skill, "reference.md": string(ref)} {
			if !strings.Contains(text, op.Name) {
				t.Errorf("%s does not list %s", doc, op.Name)
			}
		}
		if !strings.Contains(string(ref), "### "+op.Name+"\n") {
			t.Errorf("reference.md has no section for %s", op.Name)
		}
		for _, p := range op.Params {
			if !strings.Contains(string(ref), "  "+p.Name+" (") {
				t.Errorf("reference.md does not describe %s.%s", op.Name, p.Name)
			}
		}
	}
}

func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
