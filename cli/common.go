package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/termsprawl/termsprawl/tools"
)

// Exit codes shared by both binaries (CONTRACT §5, §7).
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

func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	// A build from a git checkout: name the commit.
	v := "dev"
	dirty := false
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			v += "+" + s.Value[:12]
		case s.Key == "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		v += "-dirty"
	}
	return v
}

// kongExit carries kong's exit code out of Parse (kong calls Exit for
// --help and --version).
type kongExit int

// parseArgs parses args into grammar. It never exits the process: --help
// and --version return (ExitOK, true); a parse error prints the error and a
// short usage to stderr and returns (ExitUsage, true) (kong's own exit
// code for it, 80, is never used).
func parseArgs(name string, grammar any, args []string, stdout, stderr io.Writer, opts ...kong.Option) (kctx *kong.Context, code int, stop bool) {
	opts = append([]kong.Option{
		kong.Name(name),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(kongExit(c)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"version": name + " " + version()},
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
	_, err = w.Write(append(data, '\n'))
	return err
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
	return op, args, nil
}
