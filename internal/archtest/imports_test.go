package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/termsprawl/termsprawl"

// allowed maps a package (or a prefix ending in "/...") to the import
// prefixes it may use besides the standard library.
var allowed = map[string][]string{
	"tmuxctl":           {},
	"tools":             {"github.com/fsnotify/fsnotify"},
	"orchestrator/...":  {module + "/tmuxctl", module + "/tools", module + "/orchestrator/", "github.com/charmbracelet/"},
	"cli":               {module + "/tools", module + "/orchestrator", "github.com/alecthomas/kong", "github.com/mark3labs/mcp-go/"},
	"cmd/...":           {module + "/cli"},
	"internal/tmuxtest": {},
	"internal/archtest": {},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func rulesFor(rel string) ([]string, bool) {
	if r, ok := allowed[rel]; ok {
		return r, true
	}
	for k, r := range allowed {
		if p, ok := strings.CutSuffix(k, "/..."); ok && (rel == p || strings.HasPrefix(rel, p+"/")) {
			return r, true
		}
	}
	return nil, false
}

func TestImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	std := map[string]bool{}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	isStd := func(path string) bool {
		if v, ok := std[path]; ok {
			return v
		}
		first, _, _ := strings.Cut(path, "/")
		v := !strings.Contains(first, ".")
		std[path] = v
		return v
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rules, ok := rulesFor(rel)
		if !ok {
			t.Errorf("package %s has no import rule: add it to allowed", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if isStd(imp) {
				continue
			}
			okImp := false
			for _, prefix := range rules {
				if imp == prefix || strings.HasPrefix(imp, prefix) && (strings.HasSuffix(prefix, "/") || strings.HasPrefix(imp, prefix+"/")) {
					okImp = true
				}
			}
			if !okImp {
				t.Errorf("%s imports %s, which the design does not allow", p.ImportPath, imp)
			}
		}
	}
}
