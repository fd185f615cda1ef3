package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/willabides/kongplete"

	"github.com/termsprawl/termsprawl/tools"
)

// Exit codes shared by both binaries (CONTRACT §5, §7, §10).
const (
	ExitOK          = 0 // success
	ExitNo          = 1 // the app said no: a tool result with ok:false
	ExitUsage       = 2 // usage error: nothing was done
	ExitNotRunning  = 3 // termsprawl is not running: no orchestrator answers
	ExitWaitTimeout = 4 // the input was sent but its wait timed out (result.wait.timed_out)
)

// waitTimedOut reports whether an input operation's receipt says its wait
// ran out of time (CONTRACT §10: ok:true, the input was sent).
func waitTimedOut(res tools.Result) bool {
	if !res.OK {
		return false
	}
	var r struct {
		Result struct {
			Wait *tools.WaitResult `json:"wait"`
		} `json:"result"`
	}
	return json.Unmarshal(res.Value, &r) == nil && r.Result.Wait != nil && r.Result.Wait.TimedOut
}

// Version is the version both binaries report. It can be set with
// -ldflags "-X github.com/termsprawl/termsprawl/cli.Version=…"; otherwise
// the module version from the build info is used when there is one.
var Version = ""

// Commit is the commit the binaries were built from. It can be set with
// -ldflags "-X github.com/termsprawl/termsprawl/cli.Commit=…"; otherwise
// it is the build info's vcs.revision (go build in a git checkout records
// it unless -buildvcs=false).
var Commit = ""

// buildInfo is what the version command reports.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readBuildInfo() buildInfo {
	info := buildInfo{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		// A build from a checkout: name the commit.
		info.Version = "dev"
		if len(info.Commit) >= 12 {
			info.Version += "+" + info.Commit[:12]
		}
		if info.Modified {
			info.Version += "-dirty"
		}
	}
	return info
}

// version is the short version string (endpoint.json, session_info, MCP).
func version() string { return readBuildInfo().Version }

// commitFlagHint says how to name the commit in a build without VCS
// information (the Justfile's bin recipe does it). No commas: the
// version line is "(commit …, GO, PLATFORM)".
const commitFlagHint = `name it with go build -ldflags "-X github.com/termsprawl/termsprawl/cli.Commit=$(git rev-parse HEAD)" as just bin does`

// versionLine is what `NAME version` and `NAME --version` print:
// "termsprawl dev+0123456789ab (commit 0123456…, go1.26.8, linux/amd64)".
func versionLine(name string) string {
	bi := readBuildInfo()
	commit := "commit unknown: built without VCS information (-buildvcs=false or outside a git checkout); " + commitFlagHint
	if bi.Commit != "" {
		commit = "commit " + bi.Commit
		if bi.Modified {
			commit += " with local changes"
		}
	}
	return fmt.Sprintf("%s %s (%s, %s, %s)", name, bi.Version, commit, bi.GoVersion, bi.Platform)
}

// kongExit carries kong's exit code out of Parse (kong calls Exit for
// --help and --version).
type kongExit int

// exampler is a command with examples for its --help.
type exampler interface{ Examples() string }

// helpPrinter is kong's help followed by the command's examples.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	if options.Summary {
		return nil
	}
	node := ctx.Selected()
	if node == nil {
		node = ctx.Model.Node
	}
	if ex := examplesOf(node); ex != "" {
		ex = strings.ReplaceAll(ex, "{{name}}", ctx.Model.Name)
		fmt.Fprintf(ctx.Stdout, "\nExamples:\n%s", indentLines(ex, "  "))
	}
	return nil
}

// examplesOf returns the examples of a command node ("" if none).
func examplesOf(node *kong.Node) string {
	if node == nil || !node.Target.IsValid() {
		return ""
	}
	t := node.Target
	if t.Kind() != reflect.Pointer && t.CanAddr() {
		t = t.Addr()
	}
	if e, ok := t.Interface().(exampler); ok {
		return e.Examples()
	}
	return ""
}

// indentLines prefixes every non-empty line of s and ends it with a newline.
func indentLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l != "" {
			b.WriteString(prefix)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// parseArgs parses args into grammar. It never exits the process: --help
// and --version return (ExitOK, true); a parse error prints the error and a
// short usage to stderr and returns (ExitUsage, true) (kong's own exit
// code for it, 80, is never used). A shell asking for completions
// (COMP_LINE set, see completion.go) is answered on stdout and returns
// (ExitOK, true).
func parseArgs(name string, grammar any, args []string, stdout, stderr io.Writer, complete []kongplete.Option, opts ...kong.Option) (kctx *kong.Context, code int, stop bool) {
	opts = append([]kong.Option{
		kong.Name(name),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(kongExit(c)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(helpPrinter),
		kong.Vars{"version": versionLine(name)},
	}, opts...)
	parser, err := kong.New(grammar, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: internal error: %v\n", name, err)
		return nil, ExitUsage, true
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			kctx, stop = nil, true
			code = ExitOK
			if c != 0 {
				code = ExitUsage
			}
		}
	}()
	completeShell(parser, complete)
	kctx, err = parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v\n", name, err)
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			// Usage goes to stderr, not to kong's stdout.
			parser.Stdout = stderr
			fmt.Fprintln(stderr)
			_ = pe.Context.PrintUsage(true)
		}
		return nil, ExitUsage, true
	}
	return kctx, ExitOK, false
}

// showHelp prints the help of the command path (for `NAME help CMD…`).
func showHelp(name string, grammar any, path []string, stdout, stderr io.Writer, opts ...kong.Option) int {
	_, code, _ := parseArgs(name, grammar, append(append([]string(nil), path...), "--help"), stdout, stderr, nil, opts...)
	return code
}

// usageError prints a usage error (CONTRACT: usage on stderr, exit 2).
func usageError(stderr io.Writer, name string, err error, hint string) int {
	fmt.Fprintf(stderr, "%s: error: %v\n", name, err)
	if hint != "" {
		fmt.Fprintln(stderr, strings.TrimRight(hint, "\n"))
	}
	return ExitUsage
}

// prettyJSON writes v as indented JSON and a newline.
func prettyJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(escapeHidden(data), '\n'))
	return err
}

// escapeHidden escapes, as \uXXXX, the characters encoding/json leaves
// raw that a terminal may act on or that reorder text: C1 controls and
// the format characters tools.VisibleLine shows (CONTRACT §26: --json
// keeps the exact strings, JSON-escaped). They occur only inside JSON
// strings, so the JSON means the same.
func escapeHidden(data []byte) []byte {
	if !tools.NeedsVisible(strings.NewReplacer("\n", "", "\t", "").Replace(string(data))) {
		return data
	}
	var b bytes.Buffer
	for _, r := range string(data) {
		if r >= 0x80 && tools.NeedsVisible(string(r)) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// validateCall checks an operation and its JSON args against the table
// without any I/O. args may be empty (meaning {}).
func validateCall(opName string, args json.RawMessage) (*tools.Operation, json.RawMessage, error) {
	op, ok := tools.Lookup(opName)
	if !ok {
		return nil, nil, tools.UnknownOperationError(opName)
	}
	args = tools.NormalizeArgs(args)
	if !json.Valid(args) {
		var v any
		err := json.Unmarshal(args, &v)
		return op, nil, fmt.Errorf("%s: JSON_ARGS is not valid JSON (%v); pass an object such as '{\"terminal\":\"ID\"}'", op.Name, err)
	}
	if err := op.Validate(args); err != nil {
		return op, nil, err
	}
	return op, op.CanonicalArgs(args), nil
}

// printGuide prints a guide topic as plain text (both CLIs' `guide`).
func printGuide(stdout, stderr io.Writer, name, topic string) int {
	text, ok := tools.Guide(topic)
	if !ok {
		return usageError(stderr, name, fmt.Errorf("unknown guide topic %q", topic), "topics: "+strings.Join(tools.GuideTopics(), ", "))
	}
	fmt.Fprint(stdout, strings.TrimRight(text, "\n")+"\n")
	return ExitOK
}

// runShared runs cmd when it is one of the commands both binaries answer
// alike (help, version, completion, guide); ok is false for any other.
// help shows the binary's own grammar.
func runShared(cmd, name string, help func() int, version versionCmd, completion completionCmd, guideTopic string, stdout, stderr io.Writer) (code int, ok bool) {
	switch cmd {
	case "help":
		return help(), true
	case "version":
		return printVersion(stdout, name, version.JSON), true
	case "completion":
		return printCompletion(stdout, stderr, name, completion.Shell), true
	case "guide":
		return printGuide(stdout, stderr, name, guideTopic), true
	}
	return 0, false
}
