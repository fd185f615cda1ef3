package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"
	"github.com/termsprawl/termsprawl/tools"
)

// doctorTmuxTimeout bounds each tmux command doctor runs.
var doctorTmuxTimeout = 5 * time.Second

// doctorCheck is one line of doctor.
type doctorCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// doctorReport is doctor --json.
type doctorReport struct {
	OK bool `json:"ok"`
	// Running is false when no orchestrator answers (exit 3).
	Running bool          `json:"running"`
	Checks  []doctorCheck `json:"checks"`
}

// doctor prints one line per check, "ok NAME: detail" or "FAIL NAME:
// detail" (or the report as JSON), and returns 3 when termsprawl is not
// running, else 1 if any check failed (CONTRACT §7, §10).
func (h *human) doctor(asJSON bool) int {
	rep := h.doctorChecks()
	if asJSON {
		_ = prettyJSON(h.stdout, rep)
	} else {
		for _, c := range rep.Checks {
			status := "ok"
			if !c.OK {
				status = "FAIL"
			}
			fmt.Fprintf(h.stdout, "%s %s: %s\n", status, c.Name, tools.VisibleText(c.Detail))
		}
	}
	switch {
	case !rep.Running:
		if !asJSON {
			h.printNotRunning()
		}
		return ExitNotRunning
	case !rep.OK:
		return ExitNo
	}
	return ExitOK
}

func (h *human) doctorChecks() doctorReport {
	rep := doctorReport{OK: true, Running: true}
	report := func(ok bool, name, format string, a ...any) {
		if !ok {
			rep.OK = false
		}
		rep.Checks = append(rep.Checks, doctorCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}

	// tmux present and its version.
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		report(false, "tmux", "not found on PATH: install tmux")
	} else if out, err := h.tmuxOutput(tmux, "-V"); err != nil {
		report(false, "tmux", "%s -V: %v", tmux, err)
	} else {
		report(true, "tmux", "%s (%s)", strings.TrimSpace(out), tmux)
	}

	// bwrap: present, its version, and usable (it starts a trivial
	// sandbox); agents need it unless config.toml's default is none
	// (CONTRACT §27).
	if info, err := sandbox.Probe(h.ctx); err == nil {
		report(true, "sandbox", "bubblewrap %s (%s) starts a sandbox: agents run in it", info.Version, info.Path)
	} else if cfg, cerr := config.Load(h.stateDir); cerr == nil && cfg.Sandbox.Default == config.SandboxNone {
		report(true, "sandbox", "%v; agents run unsandboxed (default = \"none\" under [sandbox] in config.toml)", err)
	} else {
		report(false, "sandbox", "%v: agent launches are refused; %s", err, sandbox.Fix)
	}

	// State directory: exists, ours, not group/world writable (never created here).
	if err := tools.CheckStateDir(h.stateDir); err != nil {
		report(false, "state dir", "%v", err)
	} else {
		report(true, "state dir", "%s (owned by you, not group or world writable)", h.stateDir)
	}

	// Lock: server.lock names a live process.
	if li, err := readLock(h.stateDir); err != nil {
		report(false, "lock", "%s: termsprawl is not running (start it with `termsprawl up`)", shortErr(err))
	} else if !pidAlive(li.PID) {
		report(false, "lock", "server.lock names pid %d, which is gone (stale: termsprawl was killed; `termsprawl up` takes over)", li.PID)
	} else {
		report(true, "lock", "held by pid %d (instance %s)", li.PID, li.InstanceID)
	}

	// Endpoint: a real session_info call.
	res := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: "session_info"}, tools.CallOptions{})
	socket := h.socket
	if !res.OK {
		if h.notRunning(res) {
			rep.Running = false
			report(false, "endpoint", "no orchestrator answers: %s (start it with `termsprawl up`)", transportReason(res))
		} else {
			report(false, "endpoint", "%s", humanize(res.Error))
		}
		report(false, "nodes", "not checked: the endpoint does not answer")
		return rep
	}
	var info tools.SessionInfo
	_ = tools.DecodeValue(res.Value, &info)
	if info.TmuxSocket != "" {
		socket = info.TmuxSocket
	}
	url := ""
	if ep, err := tools.ReadEndpoint(tools.EndpointPath(h.stateDir)); err == nil {
		url = ep.URL
	}
	report(true, "endpoint", "%s answers (instance %s, version %s)", url, info.InstanceID, info.Version)
	// Informational: how often mirrors were rebuilt from tmux, and how
	// often a quiet mirror was found to differ from tmux (healed).
	report(true, "mirrors", "%s", mirrorsText(info.MirrorReseeds, info.MirrorHeals))

	// Every node's tmux session, and its program.
	lres := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: "terminal_list"}, tools.CallOptions{})
	var list tools.NodeList
	err = tools.DecodeValue(lres.Value, &list)
	rows := list.Terminals
	switch {
	case !lres.OK:
		report(false, "nodes", "%s", humanize(lres.Error))
	case err != nil:
		report(false, "nodes", "%v", err)
	case len(rows) == 0:
		report(true, "nodes", "none running")
	case tmux == "":
		report(false, "nodes", "%s, but tmux is missing", nodesText(len(rows)))
	default:
		var open []string
		for _, r := range rows {
			if r.Agent != "" && r.Sandbox == "none" && r.Status != tools.StatusExited {
				open = append(open, r.Terminal)
			}
		}
		if len(open) > 0 {
			report(true, "sandbox", "unsandboxed agents (they can use your termsprawl's authority and files): %s", strings.Join(open, ", "))
		}
		for _, r := range rows {
			name := "node " + r.Terminal
			if r.Host != "" {
				// On another machine: termsprawl's own view of it (a check
				// from here would be one more ssh login).
				ok := r.Status == tools.StatusRunning
				report(ok, name, "%s", remoteNodeText(r))
				continue
			}
			if r.Status == tools.StatusLost || r.SavedAt != "" {
				// Its tmux server was gone at start (CONTRACT §25).
				report(false, name, "%s: its tmux server was gone (a reboot?); `termsprawl snapshot %s` shows its last screen, `termsprawl restore %s` starts it again, `termsprawl forget %s` drops it", r.Status, r.Terminal, r.Terminal, r.Terminal)
				continue
			}
			sock := r.TmuxSocket // the node's shard
			if sock == "" {
				sock = socket
			}
			if _, err := h.tmuxOutput(tmux, "-L", sock, "has-session", "-t", "=ts-"+r.Terminal); err != nil {
				report(false, name, "tmux session ts-%s is missing on socket %s: %v", r.Terminal, sock, err)
				continue
			}
			switch {
			case r.Status == tools.StatusExited && r.ExitCode != nil && *r.ExitCode != 0:
				report(false, name, "its program failed: exited with code %d (`termsprawl snapshot %s` shows its last screen, `termsprawl kill %s` closes it)", *r.ExitCode, r.Terminal, r.Terminal)
			case r.Status == tools.StatusExited && r.ExitCode == nil:
				report(false, name, "its program exited with an unknown code (`termsprawl kill %s` closes it)", r.Terminal)
			default:
				// The profile is shown wherever a node is (CONTRACT §27).
				report(true, name, "tmux session ts-%s alive (%s, %s)", r.Terminal, statusText(r), sandboxWords(r))
			}
		}
	}
	return rep
}

// tmuxOutput runs tmux with TMUX and TMUX_PANE removed, bounded.
func (h *human) tmuxOutput(tmux string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(h.ctx, doctorTmuxTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tmux, args...)
	cmd.Env = tools.EnvWithoutTmux(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return string(out), fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return string(out), err
	}
	return string(out), nil
}

// mirrorsText says in a new user's words what the mirrors' counters
// mean: how often termsprawl read a node's screen again from tmux, and
// how often it found its copy wrong and corrected it.
func mirrorsText(reseeds, heals int) string {
	times := func(n int) string {
		if n == 1 {
			return "once"
		}
		return fmt.Sprintf("%d times", n)
	}
	s := "termsprawl keeps a copy of each node's screen; it read them again from tmux " + times(reseeds) + " (after a start, a wake or a burst of output: normal)"
	if heals == 0 {
		return s + ", and never found a copy that differed from tmux"
	}
	return s + ", and corrected a copy that differed from tmux " + times(heals) + " (harmless; many corrections may mean a program tmux and termsprawl read differently)"
}
