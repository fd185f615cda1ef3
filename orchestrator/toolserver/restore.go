package toolserver

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/orchestrator/usage"
	"github.com/termsprawl/termsprawl/tools"
)

// Surviving a reboot (CONTRACT §25): terminal_restore and terminal_forget,
// operator only. The engine keeps the launches and the last screens
// (orchestrator/lost.go); here an agent's restore gets its resume.

func restoreHandlers() map[string]handler {
	return map[string]handler{
		"terminal_restore": mutator(terminalRestore),
		"terminal_forget":  mutator(terminalForget),
	}
}

// restoreArgs name a lost node: the drive rule lets only the operator
// act on one (mustDrive).
type restoreArgs struct {
	terminalArg
	Cwd string `json:"cwd"`
}

func (c *call) operatorOnly() error {
	if c.caller.Role != tools.RoleOperator {
		return tools.Errorf(tools.KindForbidden, "%s is for the operator (termsprawl %s): agents do not start or drop lost terminals", c.op.Name, map[string]string{"terminal_restore": "restore", "terminal_forget": "forget"}[c.op.Name])
	}
	return nil
}

func terminalRestore(c *call, a restoreArgs) (tools.RestoreResult, any, error) {
	if err := c.operatorOnly(); err != nil {
		return tools.RestoreResult{}, nil, err
	}
	res, err := c.s.restoreNode(c.ctx, a.Terminal, a.Cwd)
	if err != nil {
		return res, nil, err
	}
	return res, c.stateOf(res.Terminal), nil
}

// RestoreLost restores every lost node (`up --restore`); it returns the
// results and the errors of those that could not be restored.
func (s *Server) RestoreLost(ctx context.Context) ([]tools.RestoreResult, []error) {
	var out []tools.RestoreResult
	var errs []error
	for _, id := range s.eng.lost.LostIDs() {
		r, err := s.restoreNode(ctx, id, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errs
}

// restoreNode starts lost node id again; an agent with a conversation id
// resumes it.
func (s *Server) restoreNode(ctx context.Context, id, cwd string) (tools.RestoreResult, error) {
	meta, rec, err := s.eng.lost.LostLaunch(id)
	if err != nil {
		return tools.RestoreResult{}, err
	}
	spec := rec.Launch()
	var wt *wtEntry
	if w := spec.Worktree; w != nil && w.Path != "" && cwd == "" {
		// Back in its worktree, the setup not run again (CONTRACT §25).
		if st, err := os.Stat(w.Path); err != nil || !st.IsDir() {
			return tools.RestoreResult{}, tools.Errorf(tools.KindUsage, "cannot restore %s: its worktree %s is gone: restore it with --cwd DIR (terminal_restore {cwd}) to start it in another directory", id, w.Path).
				WithDetails("cwd", w.Path)
		}
		if wt, err = s.reuseWorktree(&spec); err != nil {
			return tools.RestoreResult{}, fmt.Errorf("restore %s: %w", id, err)
		}
	}
	cmd, fresh := resumeCommand(rec.Agent, spec.Command, rec.Conversation)
	if cmd == nil && spec.Worktree != nil && spec.Worktree.Path != "" {
		cmd = spec.Command // the program, not its setup's wrapper
	}
	if rec.Agent != "" && len(spec.Command) > 0 && isAgentProgram(rec.Agent, spec.Command[0]) {
		// Its program may be gone since (uninstalled): said as a launch says it.
		if err := checkAgentProgram(rec.Agent, spec.Command[0]); err != nil {
			return tools.RestoreResult{}, fmt.Errorf("restore %s: %w", id, err)
		}
	}
	info, err := s.eng.lost.Restore(ctx, id, orchestrator.RestoreOptions{Cwd: cwd, Command: cmd})
	if err != nil {
		return tools.RestoreResult{}, err
	}
	if wt != nil {
		s.attachWorktree(wt, info.Terminal)
	}
	// Its telemetry token is in its kept environment: it counts again
	// (usage.go).
	if h, ok := strings.CutPrefix(rec.ExtraEnv["OTEL_EXPORTER_OTLP_HEADERS"], usage.Header+"="); ok && h != "" {
		s.usage.Adopt(h, info.Terminal, rec.Agent)
	}
	if m, ok := s.eng.lost.Meta(info.Terminal); ok {
		s.loadToken(m)
		if m.Agent != "" {
			s.evidence(info.Terminal, m.Incarnation(), tools.Evidence{Source: tools.SourceProcess, Event: agentstate.ProcLaunched}, "restored", "")
			s.watchExit(info.Terminal, m.Incarnation())
			s.watchRules(info.Terminal, m.Incarnation(), m.Agent)
		}
		meta = m
	}
	res := tools.RestoreResult{NodeInfo: info, Cwd: meta.Cwd, FreshStart: fresh}
	if fresh == "" && rec.Agent != "" {
		res.Resumed = rec.Conversation
	}
	return res, nil
}

// resumeCommand is the command that resumes an agent's conversation, or
// nil (the kept command) with why it starts fresh. Only the agent's own
// program is resumed: a wrapper's arguments are the user's business.
//
// The kept id is checked again (a launch record written before the check
// existed, or by hand, may hold anything): a restore adds nothing to the
// launch's argv but the resume form with a checked id (CONTRACT §26).
func resumeCommand(agent string, cmd []string, kept string) ([]string, string) {
	if agent == "" {
		return nil, ""
	}
	if len(cmd) == 0 || !isAgentProgram(agent, cmd[0]) {
		return nil, fmt.Sprintf("started fresh: %q is not %s's own program, so termsprawl does not know how it resumes", firstWord(cmd), agent)
	}
	conversation := kept
	if conversation == "" {
		switch agent {
		case "claude", "gemini", "codex":
			return nil, fmt.Sprintf("started fresh: %s never reported its conversation id to termsprawl (its hooks did not run)", agent)
		default:
			return nil, fmt.Sprintf("started fresh: %s reports no conversation id to termsprawl, so its conversation cannot be resumed", agent)
		}
	}
	id, err := checkedConversation(conversation)
	if err != nil {
		return nil, fmt.Sprintf("started fresh: the kept %v", err)
	}
	if k, known := agentKinds[agent]; known && k.Resume != nil {
		return k.Resume(cmd, id), ""
	}
	return nil, fmt.Sprintf("started fresh: termsprawl knows no resume for %s", agent)
}

// forkCommand is the command that continues an agent's conversation as a
// branch of it in a new node (agent_fork, CONTRACT §30), beside
// resumeCommand's resume form: each kind's fork form, or why there is
// none. Only the agent's own program is forked.
func forkCommand(agent string, cmd []string, conversation string) ([]string, string) {
	refuse := func(format string, a ...any) ([]string, string) {
		return nil, fmt.Sprintf(format, a...)
	}
	if agent == "" {
		return refuse("it is a shell, not an agent: only an agent's conversation can be forked (launch one with termsprawl agent)")
	}
	if len(cmd) == 0 || !isAgentProgram(agent, cmd[0]) {
		return refuse("%q is not %s's own program, so termsprawl does not know how it forks", firstWord(cmd), agent)
	}
	switch agent {
	case "claude", "codex", "opencode":
	case "gemini":
		return refuse("Gemini CLI has no way to start a branch of a conversation from its command line (only --resume, which continues the same one): use /chat save and /chat resume inside it")
	default:
		return refuse("termsprawl knows no fork form for agent kind %s", agent)
	}
	if conversation == "" {
		return refuse("%s has not reported its conversation id to termsprawl yet (its hooks report it once it runs a turn): try again after its first turn", agent)
	}
	switch agent {
	case "claude":
		return append(slices.Clone(cmd), "--resume", conversation, "--fork-session"), ""
	case "codex":
		return append([]string{cmd[0], "fork", conversation}, cmd[1:]...), ""
	default: // opencode
		return append(slices.Clone(cmd), "--session", conversation, "--fork"), ""
	}
}

func firstWord(cmd []string) string {
	if len(cmd) == 0 {
		return ""
	}
	return cmd[0]
}

func terminalForget(c *call, a terminalArg) (tools.ForgetResult, any, error) {
	if err := c.operatorOnly(); err != nil {
		return tools.ForgetResult{}, nil, err
	}
	if err := c.s.eng.lost.Forget(a.Terminal); err != nil {
		return tools.ForgetResult{}, nil, err
	}
	return tools.ForgetResult{Terminal: a.Terminal, Forgotten: true}, tools.ClosedState{Terminal: a.Terminal, Status: "closed"}, nil
}
