package ctllite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

const ctlName = "termsprawlctl"

// Handoff asks for the full CLI: the invocation is the full CLI's to
// answer. Stdin holds what the hot path already read of standard input
// (Consumed), which the full CLI must read instead.
type Handoff struct {
	Stdin    []byte
	Consumed bool
}

// Main is termsprawlctl's main: the hot path, else the full CLI in place
// of this process. It returns the exit code.
func Main(args []string) int {
	code, h := Run(args, os.Stdin, os.Stdout, os.Stderr)
	if h == nil {
		return code
	}
	return runFull(args, h, os.Stderr)
}

// Run answers a hot invocation (h nil, code is the exit code) or returns
// the Handoff that makes the full CLI answer it. Run prints nothing when
// it hands off.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int, h *Handoff) {
	inv, ok := Parse(args)
	if !ok {
		return 0, &Handoff{}
	}
	if inv.Mode == "hook" {
		return runHook(inv, stdin, stdout, stderr)
	}
	return runCall(inv, stdout, stderr)
}

// runCall is call and doctor.
func runCall(inv Invocation, stdout, stderr io.Writer) (int, *Handoff) {
	if inv.Retry > 0 {
		return 0, &Handoff{}
	}
	session := sessionPath(inv.Session)
	if session == "" {
		return 0, &Handoff{}
	}
	tg, ok := readTarget(session)
	if !ok {
		return 0, &Handoff{}
	}
	op, args := "session_info", json.RawMessage("{}")
	if inv.Mode == "call" {
		op, args = inv.Op, normalizeArgs(inv.Args)
		if !json.Valid(args) {
			return 0, &Handoff{}
		}
	}
	res, err := call(tg, op, args, ReadOnly(op))
	if err != nil {
		return 0, &Handoff{}
	}
	if !res.OK && res.Kind == "usage" {
		// The orchestrator refused the arguments and did nothing; the
		// full CLI checks them against the table and says how to fix
		// them (exit 2), as it does before sending.
		return 0, &Handoff{}
	}
	out, err := res.pretty()
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: write result: %v\n", ctlName, err)
		return 1, nil
	}
	switch {
	case !res.OK:
		return 1, nil
	case res.waitTimedOut():
		return 4, nil
	}
	return 0, nil
}

// normalizeArgs is tools.NormalizeArgs.
func normalizeArgs(args string) json.RawMessage {
	t := strings.TrimSpace(args)
	if t == "" || t == "null" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// runHook is a state hook: read the agent's JSON, report its state.
// Permission requests, and every input the full CLI would refuse, are
// handed off.
func runHook(inv Invocation, stdin io.Reader, stdout, stderr io.Writer) (int, *Handoff) {
	if os.Getenv("TERMSPRAWL_HOOK_DIALOG_TIMEOUT") != "" || inv.Retry > 0 || inv.Wait > 0 ||
		IsPermissionHook(inv.Agent, inv.Event) {
		return 0, &Handoff{}
	}
	session := sessionPath(inv.Session)
	if session == "" {
		return 0, &Handoff{}
	}
	var (
		h            = &Handoff{}
		state, msg   string
		known        bool
		in           HookInput
		err          error
		printsObject bool
	)
	switch {
	case inv.Agent == "codex" && inv.Event == "notify":
		if in, err = ParseHookInput([]byte(inv.Payload)); err != nil || in.Type != "agent-turn-complete" {
			return 0, h
		}
		state, msg = CodexIdle, in.LastAssistantMsg
	default:
		h.Stdin, err = ReadHookInput(stdin)
		h.Consumed = true
		if err != nil {
			return 0, h
		}
		if in, err = ParseHookInput(h.Stdin); err != nil || (in.Event != "" && in.Event != inv.Event) || in.Event == "PermissionRequest" {
			return 0, h
		}
		switch inv.Agent {
		case "claude":
			state, known = ClaudeStates[inv.Event]
			msg = ClaudeMessage(inv.Event, in)
		case "codex":
			state, known = CodexStates[inv.Event]
			msg = ClaudeMessage(inv.Event, in)
		case "opencode":
			state, known = OpencodeStates[inv.Event]
			msg = ClaudeMessage(inv.Event, in)
		default:
			state, known = GeminiStates[inv.Event]
			msg = GeminiMessage(inv.Event, in)
			printsObject = true
		}
		if !known {
			return 0, h
		}
	}
	tg, ok := readTarget(session)
	if !ok {
		return 0, h
	}
	if bad := BadConversation(in.Conversation()); bad != "" {
		fmt.Fprintf(stderr, "%s hook %s %s: %s\n", ctlName, inv.Agent, inv.Event, bad)
	}
	event := inv.Event
	if inv.Agent == "claude" {
		event, state = ClaudeEvent(inv.Event, in)
	}
	res, err := call(tg, "agent_report", ReportArgs(inv.Agent, event, state, msg, in.Conversation()), false)
	if err != nil {
		return 0, h
	}
	code := 0
	if !res.OK {
		fmt.Fprintf(stderr, "%s hook %s %s: agent_report %s failed: %s\n", ctlName, inv.Agent, inv.Event, state, res.Error)
		code = 1
	}
	if printsObject {
		fmt.Fprintln(stdout, "{}")
	}
	return code, nil
}

// humanBinary is the binary that carries the full CLI.
const humanBinary = "termsprawl"

// FindTermsprawl finds the termsprawl binary: next to this executable
// (symlinks resolved), else on $PATH.
func FindTermsprawl() (string, error) {
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), humanBinary)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		looked = append(looked, p)
	}
	if p, err := exec.LookPath(humanBinary); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
		return p, nil
	}
	looked = append(looked, "$PATH")
	return "", fmt.Errorf("the %s binary was not found (looked at %s); install both binaries side by side: go install github.com/termsprawl/termsprawl/cmd/...@latest (or go build -o bin/ ./cmd/... and run bin/termsprawlctl)",
		humanBinary, strings.Join(looked, " and "))
}

// runFull runs the full CLI (`termsprawl __termsprawlctl ARGS…`): in
// place of this process, or, when the hot path read standard input, as a
// child fed what was read.
func runFull(args []string, h *Handoff, stderr io.Writer) int {
	bin, err := FindTermsprawl()
	if err != nil {
		fmt.Fprintf(stderr, "%s: everything but call, doctor and the state hooks is answered by termsprawl: %v\n", ctlName, err)
		if inv, ok := Parse(args); ok && inv.Mode == "hook" && IsPermissionHook(inv.Agent, inv.Event) {
			return 2 // a permission is denied, never allowed
		}
		return 1
	}
	argv := append([]string{bin, FullCommand}, args...)
	if !h.Consumed {
		err = syscall.Exec(bin, argv, os.Environ())
		fmt.Fprintf(stderr, "%s: cannot run %s: %v\n", ctlName, bin, err)
		return 1
	}
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Stdin = bytes.NewReader(h.Stdin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	fmt.Fprintf(stderr, "%s: cannot run %s: %v\n", ctlName, bin, err)
	return 1
}
