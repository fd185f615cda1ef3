package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/config"
)

func layer(t *testing.T, scope Scope, r Rules) Layer {
	t.Helper()
	l, err := NewLayer(scope, r)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func bash(cmd string) Request {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return Request{Tool: "Bash", Input: b, Dir: "/work/node", Home: "/home/u"}
}

func TestParseRuleRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rule, want string }{
		{"Bash(", "no closing \")\""},
		{"Bash()", "empty pattern"},
		{"", "empty"},
		{" Bash", "spaces"},
		{"Ba sh(x)", "not a tool name"},
		{"Bash)", "no \"(\""},
		{"(x)", "not a tool name"},
		{"Edit(src/[)", "bad glob"},
		{"WebFetch(domain:)", "no domain"},
		{"Bash(a\nb)", "line break"},
	} {
		_, err := ParseRule(tc.rule)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRule(%q) = %v, want an error with %q", tc.rule, err, tc.want)
		}
	}
	for _, ok := range []string{"Bash", "Bash(git status)", "Bash(npm run test:*)", "Edit(src/**)", "Read(./.env)", "mcp__server__tool", "mcp__server", "WebFetch(domain:example.com)", "Read(//etc/**)", "Read(~/.ssh/**)"} {
		if _, err := ParseRule(ok); err != nil {
			t.Errorf("ParseRule(%q): %v", ok, err)
		}
	}
}

// TestCompoundCommands is the compound-command table: with git status,
// ls, echo, cat and npm test allowed and rm denied, a line is allowed
// only when every simple command is, and never with substitutions, eval
// or a redirection out of the node's directory.
func TestCompoundCommands(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{
		Allow: []string{"Bash(git status)", "Bash(ls:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(npm run test:*)", "Bash(grep:*)", "Bash(wc:*)", "Bash(cd:*)", "Bash(pushd:*)"},
		Deny:  []string{"Bash(rm:*)"},
	})}
	for _, tc := range []struct {
		cmd  string
		want Verdict
		why  string // part of Why
	}{
		{"git status", Allow, "git status"},
		{"git status --short", Undecided, "git status --short"},
		{"npm run test", Allow, ""},
		{"npm run test -- --watch", Allow, ""},
		{"npm run testing", Undecided, ""},
		{"git status; ls -la", Allow, "each of its 2 commands"},
		{"git status; rm -rf ~", Deny, "rm:*"},
		{"git status; whoami", Undecided, "whoami"},
		{"git status && ls", Allow, ""},
		{"git status && whoami", Undecided, "whoami"},
		{"git status || whoami", Undecided, "whoami"},
		{"ls | grep x | wc -l", Allow, ""},
		{"ls | sh", Undecided, "\"sh\""},
		{"echo $(whoami)", Undecided, "command substitution"},
		{"echo `whoami`", Undecided, "command substitution"},
		{"echo \"$(ls)\"", Undecided, "command substitution"},
		{"cat <(ls)", Undecided, "process substitution"},
		{"ls >(cat)", Undecided, "process substitution"},
		{"eval ls", Undecided, "eval"},
		{"eval 'rm -rf ~'", Undecided, "eval"},
		{"source ./x.sh", Undecided, "source"},
		{". ./x.sh", Undecided, "runs ."},
		{"echo hi > out.txt", Allow, ""},
		{"echo hi > ./sub/out.txt", Allow, ""},
		{"echo hi >> /work/node/log", Allow, ""},
		{"echo hi > /etc/passwd", Undecided, "outside the node's directory"},
		{"echo hi > ../other/x", Undecided, "outside"},
		{"echo hi > ~/.bashrc", Undecided, "cannot know"},
		{"echo hi > $HOME/x", Undecided, "cannot know"},
		{"cat < /etc/shadow", Undecided, "outside"},
		{"cat < in.txt", Allow, ""},
		{"cd /etc; echo hi > passwd", Undecided, "changes directory"},
		{"cd sub && cat < in.txt", Undecided, "changes directory"},
		{"cd sub && echo hi > /work/node/x", Allow, ""},
		{"pushd /tmp; ls > x", Undecided, "changes directory"},
		{"cd sub && ls 2>&1", Allow, ""},
		{"ls 2>&1", Allow, ""},
		{"ls 2>/dev/null", Allow, ""},
		{"git status\nls", Allow, ""},
		{"git status\nwhoami", Undecided, "whoami"},
		{"git status # rm -rf ~", Allow, ""},
		{"# only a comment", Undecided, "no simple command"},
		{"ls & whoami", Undecided, "whoami"},
		{"(ls; whoami)", Undecided, "whoami"},
		{"{ ls; }", Allow, ""},
		{"if ls; then echo y; fi", Allow, ""},
		{"if ls; then whoami; fi", Undecided, "whoami"},
		{"for f in a b; do echo $f; done", Allow, ""},
		{"f() { whoami; }; f", Undecided, "whoami"},
		{"ls() { rm -rf ~; }; ls", Deny, "rm"},
		{"PATH=/tmp/evil git status", Undecided, "PATH=/tmp/evil git status"},
		{"X=1", Undecided, "X=1"},
		{"export X=1", Undecided, "export"},
		{"/bin/rm -rf /", Deny, "rm -rf /"},
		{"sudo rm -rf /", Deny, "rm"},
		{"exec rm x", Deny, "rm"},
		{"env -i FOO=1 rm x", Deny, "rm"},
		{"xargs rm < list", Deny, "rm"},
		{"bash -c 'rm -rf ~'", Deny, "rm"},
		{"command eval ls", Undecided, "eval"},
		{"echo $((1+2))", Undecided, "arithmetic"},
		{"coproc ls", Undecided, "coprocess"},
		{"trap 'rm -rf ~' EXIT", Undecided, "trap"},
		{"echo 'a; rm -rf ~'", Allow, ""},
		{"echo \"a && whoami\"", Allow, ""},
		{"ls 'unclosed", Undecided, "bash can parse"},
		{"cat <<EOF\nhi\nEOF", Allow, ""},
		{"cat <<EOF\n$(whoami)\nEOF", Undecided, "command substitution"},
		{"ls ;", Allow, ""},
		{"", Undecided, "no simple command"},
	} {
		d := Decide(layers, bash(tc.cmd))
		if d.Verdict != tc.want || !strings.Contains(d.Why, tc.why) {
			t.Errorf("%q: %s (%s), want %s with %q", tc.cmd, d.Verdict, d.Why, tc.want, tc.why)
		}
	}
}

// TestPrecedence: deny over ask over allow, whatever the scope; a
// repository's allow never overrules a fleet or kind deny.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	fleet := layer(t, "fleet", Rules{Allow: []string{"Bash(make:*)"}, Ask: []string{"Bash(make deploy)"}})
	kind := layer(t, "kind:codex", Rules{Deny: []string{"Bash(make clean)"}})
	repo := layer(t, "repository:/r", Rules{Allow: []string{"Bash(make clean)", "Bash(go test:*)"}})
	node := layer(t, "node:ci", Rules{Allow: []string{"Bash(make deploy)"}, Deny: []string{"Bash(go test ./secret/...)"}})
	layers := []Layer{fleet, kind, repo, node}
	for _, tc := range []struct {
		cmd   string
		want  Verdict
		scope Scope
	}{
		{"make all", Allow, "fleet"},
		{"make deploy", Ask, "fleet"},
		{"make clean", Deny, "kind:codex"},
		{"go test ./...", Allow, "repository:/r"},
		{"go test ./secret/...", Deny, "node:ci"},
		{"make all && go test ./...", Allow, "fleet,repository:/r"},
		{"cargo build", Undecided, ""},
	} {
		d := Decide(layers, bash(tc.cmd))
		if d.Verdict != tc.want || d.Scope != tc.scope {
			t.Errorf("%q: %s from %q (%s), want %s from %q", tc.cmd, d.Verdict, d.Scope, d.Why, tc.want, tc.scope)
		}
	}
}

func TestOtherTools(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{
		Allow: []string{"Edit(src/**)", "Read", "mcp__github", "WebFetch(domain:example.com)", "mcp__db__query"},
		Deny:  []string{"Read(./.env)", "Read(~/.ssh/**)", "Edit(//etc/**)", "Read(*.pem)"},
		Ask:   []string{"Edit(src/secret/**)"},
	})}
	req := func(tool string, in map[string]any) Request {
		b, _ := json.Marshal(in)
		return Request{Tool: tool, Input: b, Dir: "/work/node", Home: "/home/u"}
	}
	for _, tc := range []struct {
		tool string
		in   map[string]any
		want Verdict
	}{
		{"Edit", map[string]any{"file_path": "/work/node/src/a/b.go"}, Allow},
		{"Write", map[string]any{"file_path": "src/new.go"}, Allow},
		{"MultiEdit", map[string]any{"file_path": "/work/node/src/x.go"}, Allow},
		{"Edit", map[string]any{"file_path": "/work/node/src/../main.go"}, Undecided},
		{"Edit", map[string]any{"file_path": "/work/node/src/secret/k.go"}, Ask},
		{"Edit", map[string]any{"file_path": "/etc/hosts"}, Deny},
		{"Read", map[string]any{"file_path": "/work/node/.env"}, Deny},
		{"Read", map[string]any{"file_path": "/work/node/sub/.env"}, Allow},
		{"Read", map[string]any{"file_path": "/work/node/deep/dir/key.pem"}, Deny},
		{"Read", map[string]any{"file_path": "/home/u/.ssh/id_rsa"}, Deny},
		{"Read", map[string]any{"file_path": "/work/node/README"}, Allow},
		{"Grep", map[string]any{"path": "/work/node/.env"}, Deny},
		{"mcp__github__create_issue", map[string]any{}, Allow},
		{"mcp__githubx__y", map[string]any{}, Undecided},
		{"mcp__db__query", map[string]any{}, Allow},
		{"mcp__db__drop", map[string]any{}, Undecided},
		{"WebFetch", map[string]any{"url": "https://example.com/x"}, Allow},
		{"WebFetch", map[string]any{"url": "https://evil.com/?example.com"}, Undecided},
		{"Task", map[string]any{}, Undecided},
	} {
		d := Decide(layers, req(tc.tool, tc.in))
		if d.Verdict != tc.want {
			t.Errorf("%s %v: %s (%s), want %s", tc.tool, tc.in, d.Verdict, d.Why, tc.want)
		}
	}
}

// TestKindAgnostic: other agents' shell tools are governed by Bash
// rules, their argv commands parsed the same way.
func TestKindAgnostic(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{Allow: []string{"Bash(git status)"}, Deny: []string{"Bash(rm:*)"}})}
	for _, tc := range []struct {
		tool string
		in   any
		want Verdict
	}{
		{"shell", map[string]any{"command": []string{"bash", "-lc", "git status"}}, Allow},
		{"shell", map[string]any{"command": []string{"bash", "-lc", "git status; rm -rf ~"}}, Deny},
		{"shell", map[string]any{"command": []string{"git", "status"}}, Allow},
		{"run_shell_command", map[string]any{"command": "git status && whoami"}, Undecided},
		{"bash", map[string]any{"command": "rm x"}, Deny},
	} {
		b, _ := json.Marshal(tc.in)
		d := Decide(layers, Request{Tool: tc.tool, Input: b, Dir: "/w"})
		if d.Verdict != tc.want {
			t.Errorf("%s %s: %s (%s), want %s", tc.tool, b, d.Verdict, d.Why, tc.want)
		}
	}
}

func TestRepoFile(t *testing.T) {
	t.Parallel()
	r, err := ParseRepoFile([]byte("allow = [\"Bash(make:*)\"]\ndeny = []\n"))
	if err != nil || len(r.Allow) != 1 {
		t.Fatalf("%v %v", r, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"allow = [\"Bash(\"]\n", "no closing"},
		{"allow = [\"x\"]\nextra = 1\n", "unknown key extra"},
		{"allow = 3\n", "line 1"},
		{"allow = [\n", "line"},
	} {
		_, err := ParseRepoFile([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestRequestFromRule(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{Allow: []string{"Bash(git status)"}})}
	req, err := RequestFromRule("Bash(git status; rm -rf ~)", "/w", "/h")
	if err != nil {
		t.Fatal(err)
	}
	if d := Decide(layers, req); d.Verdict != Undecided {
		t.Fatalf("%+v", d)
	}
	if _, err := RequestFromRule("Bash(", "/w", "/h"); err == nil {
		t.Fatal("Bash( accepted")
	}
}

// FuzzDecide: no input panics the parser or the matcher, and an allow
// of a line with only `echo:*` allowed never lets through text that
// bash would run as another command.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"git status; rm -rf ~", "echo $(id)", "echo `id`", "cat <(ls)", "eval x", "echo a > /etc/x", "echo a\nid", "echo 'a;b'", "echo \"$(id)\"", "a=1 echo", "echo ${x:-$(id)}"} {
		f.Add(s)
	}
	layers := []Layer{{Scope: "fleet", allow: []Rule{mustRule("Bash(echo:*)")}, deny: []Rule{mustRule("Bash(rm:*)")}}}
	f.Fuzz(func(t *testing.T, cmd string) {
		d := Decide(layers, bash(cmd))
		if d.Verdict != Allow {
			return
		}
		for _, bad := range []string{"$(", "`", "<(", ">(", "eval"} {
			if strings.Contains(cmd, bad) && !strings.ContainsAny(cmd, "'\\") {
				t.Fatalf("%q allowed though it has %q: %+v", cmd, bad, d)
			}
		}
	})
}

func mustRule(s string) Rule {
	r, err := ParseRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	_, err := config.Parse("/s/config.toml", []byte("[policy]\nallow = [\"Bash(git status)\"]\n\n[policy.kind.codex]\ndeny = [\"Bash(\"]\n"), CheckConfig)
	if err == nil || !strings.Contains(err.Error(), "config.toml") || !strings.Contains(err.Error(), ":5") && !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("Bash( in [policy.kind.codex]: %v", err)
	}
	if _, err := config.Parse("/s/config.toml", []byte("[policy]\nallow = [\"Bash(git status)\"]\n[policy.named.ci]\nallow = [\"Bash(make:*)\"]\n"), CheckConfig); err != nil {
		t.Fatal(err)
	}
}

// TestRedirectThroughSymlink: a redirection beneath the node's directory
// that a symbolic link (or one that leads nowhere yet) takes outside is
// never allowed by a rule; a real file or directory inside is.
func TestRedirectThroughSymlink(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "new"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	layers := []Layer{layer(t, "fleet", Rules{Allow: []string{"Bash(echo:*)"}})}
	for _, tc := range []struct {
		cmd  string
		want Verdict
	}{
		{"echo hi > out/x", Undecided},
		{"echo hi > ./out", Undecided},
		{"echo hi > dangling", Undecided},
		{"echo hi > sub/x", Allow},
		{"echo hi > new/deeper/x", Allow},
		{"echo hi > " + filepath.Join(dir, "sub", "y"), Allow},
	} {
		r := bash(tc.cmd)
		r.Dir = dir
		if d := Decide(layers, r); d.Verdict != tc.want {
			t.Errorf("%q: %s (%s), want %s", tc.cmd, d.Verdict, d.Why, tc.want)
		}
	}
}

// TestUsageDocExamples: the table of docs/USAGE.md, as written there.
func TestUsageDocExamples(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{Allow: []string{"Bash(git status)", "Bash(ls:*)"}, Deny: []string{"Bash(rm:*)"}})}
	for cmd, want := range map[string]Verdict{
		"git status && ls -la": Allow, "git status # rm -rf ~": Allow,
		"git status; rm -rf ~": Deny, "ls | xargs rm": Deny,
		"git status; make": Undecided, "ls $(git status)": Undecided, "ls `pwd`": Undecided, "cat <(ls)": Undecided, "eval ls": Undecided,
		"ls > out.txt": Allow, "ls > /tmp/out.txt": Undecided, "ls > ../x": Undecided,
	} {
		if d := Decide(layers, bash(cmd)); d.Verdict != want {
			t.Errorf("%q: %s (%s), want %s", cmd, d.Verdict, d.Why, want)
		}
	}
}

// TestRedirectFromCwd: a relative redirection lands from where the
// agent's shell is (its hook's cwd), and must still stay beneath the
// node's directory.
func TestRedirectFromCwd(t *testing.T) {
	t.Parallel()
	layers := []Layer{layer(t, "fleet", Rules{Allow: []string{"Bash(echo:*)"}})}
	for _, tc := range []struct {
		cwd, cmd string
		want     Verdict
	}{
		{"/etc", "echo hi > passwd", Undecided},
		{"/etc", "echo hi > /work/node/x", Allow},
		{"/work/node/sub", "echo hi > x", Allow},
		{"/work/node/sub", "echo hi > ../x", Allow},
		{"/work/node/sub", "echo hi > ../../x", Undecided},
		{"sub", "echo hi > x", Allow}, // not absolute: the node's directory
		{"", "echo hi > ../x", Undecided},
	} {
		r := bash(tc.cmd)
		r.Cwd = tc.cwd
		if d := Decide(layers, r); d.Verdict != tc.want {
			t.Errorf("cwd %q, %q: %s (%s), want %s", tc.cwd, tc.cmd, d.Verdict, d.Why, tc.want)
		}
	}
}
