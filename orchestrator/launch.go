package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/lostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Size limits a launch or resize accepts: the operation table's.
const (
	MinColumns, MaxColumns = tools.MinColumns, tools.MaxColumns
	MinRows, MaxRows       = tools.MinRows, tools.MaxRows
)

// LaunchSpec is a terminal_launch (or agent_launch) request
// (statefile.LaunchSpec: a node's kept launch carries it).
type LaunchSpec = statefile.LaunchSpec

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// checkSize refuses a terminal size outside the accepted range.
func checkSize(columns, rows int) error {
	if columns < MinColumns || columns > MaxColumns || rows < MinRows || rows > MaxRows {
		return usage("size %dx%d is out of range: columns %d..%d, rows %d..%d", columns, rows, MinColumns, MaxColumns, MinRows, MaxRows)
	}
	return nil
}

// checkEnv refuses a launch's bad env_mode or env names, and makes the
// operator the owner when none is given: the checks local and remote
// launches share.
func checkEnv(spec *LaunchSpec) error {
	if err := launchenv.Check(spec.EnvMode, spec.Env); err != nil {
		return err
	}
	if spec.Owner == "" {
		spec.Owner = tools.OperatorNode
	}
	return nil
}

// launchTarget is where a launch puts its node, and all a launch needs to
// know about the difference between this machine and a host: the
// defaults, the checks, the environment, the files on the far side and
// the errors. Launch has one sequence for both (localTarget here,
// hostTarget in remote.go).
type launchTarget interface {
	// host names the machine ("" for this one).
	host() string
	// defaultShell is the program of a launch without a command.
	defaultShell() string
	// defaultCwd is the directory of a launch without a cwd.
	defaultCwd() string
	// check refuses, before anything exists, what cannot start there (cwd,
	// program, logs); it returns the resolved logs.
	check(ctx context.Context, spec LaunchSpec) ([]tools.LogSpec, error)
	// server picks the tmux server (recorded in r) and makes sure it is
	// reachable.
	server(ctx context.Context, r *reservation) (hosts.Server, error)
	// env is the new-session -e list of node id.
	env(spec LaunchSpec, id string, srv hosts.Server) []string
	// writeFiles puts the node's files on the far side (its session file
	// on a host); removeFiles undoes it.
	writeFiles(ctx context.Context, id string) error
	removeFiles(ctx context.Context, id string)
	// wrap puts the node's program (argv) in its sandbox (spec.Sandbox),
	// or refuses.
	wrap(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error)
	// retry says whether a create that failed with err may be tried once
	// more after srv was brought up again.
	retry(ctx context.Context, srv hosts.Server, err error) bool
	// fail is err as the caller should see it.
	fail(err error) error
}

// target chooses the launch's Server: the only place a launch tells a
// local node from a remote one.
func (o *Orchestrator) target(ctx context.Context, spec LaunchSpec) (launchTarget, error) {
	if o.hooks.target != nil {
		if t := o.hooks.target(o, spec); t != nil {
			return t, nil
		}
	}
	if spec.Host == "" {
		return localTarget{o}, nil
	}
	if len(spec.Logs) > 0 {
		return nil, usage("logs are followed on this machine only, and host %s is another: launch without logs, or tail the log in a node on that host", spec.Host)
	}
	t, err := o.hosts.Target(ctx, spec.Host)
	if err != nil {
		return nil, err
	}
	return hostTarget{t}, nil
}

// Launch creates a node: its files first (so TERMSPRAWL_SESSION_FILE is
// valid before the program starts), then the tmux session, then the
// control client and the seeded mirror. Only the node's server's
// lifecycle lock is held while the session is created and attached; the
// early-exit watch runs after every lock is released.
func (o *Orchestrator) Launch(ctx context.Context, spec LaunchSpec) (tools.NodeInfo, error) {
	return o.launch(ctx, spec, nil)
}

// launch is Launch; restore is the lost node a restore starts again
// (lost.go): its id, recording and kept launch.
func (o *Orchestrator) launch(ctx context.Context, spec LaunchSpec, restore *lostnodes.Entry) (tools.NodeInfo, error) {
	// Choosing a host may connect it and adopt its sessions: counted as
	// an op, so Close waits for it (reserve counts the rest).
	if !o.beginOp() {
		return tools.NodeInfo{}, errShuttingDown()
	}
	t, err := o.target(ctx, spec)
	o.ops.Done()
	if err != nil {
		return tools.NodeInfo{}, err
	}
	where := ""
	if h := t.host(); h != "" {
		where = " on host " + h
	}
	if len(spec.Command) == 0 {
		spec.Command = []string{t.defaultShell()}
	}
	if spec.Command[0] == "" {
		return tools.NodeInfo{}, usage("command[0] is empty: give the program to run, e.g. [\"bash\"]")
	}
	spec.Columns, spec.Rows = cmp.Or(spec.Columns, DefaultColumns), cmp.Or(spec.Rows, DefaultRows)
	if err := checkSize(spec.Columns, spec.Rows); err != nil {
		return tools.NodeInfo{}, err
	}
	spec.Cwd = cmp.Or(spec.Cwd, t.defaultCwd())
	if !strings.HasPrefix(spec.Cwd, "/") {
		return tools.NodeInfo{}, usage("cwd %q is not an absolute path%s", spec.Cwd, where)
	}
	if err := checkEnv(&spec); err != nil {
		return tools.NodeInfo{}, err
	}
	logs, err := t.check(ctx, spec)
	if err != nil {
		return tools.NodeInfo{}, err
	}

	fixed := ""
	if restore != nil {
		fixed = restore.Meta.ID
	}
	r, err := o.reserve(spec.Name, fixed)
	if err != nil {
		return tools.NodeInfo{}, err
	}
	srv, err := t.server(ctx, r)
	if err != nil {
		r.release()
		return tools.NodeInfo{}, err
	}
	r.on(srv) // a shard a launch is under way on is not reclaimed
	id := r.id
	meta := NodeMeta{ID: id, Name: cmp.Or(spec.Name, id), Command: spec.Command, Cwd: spec.Cwd, Owner: spec.Owner,
		Parent: spec.Parent, Agent: spec.Agent, Policy: spec.Policy, Created: time.Now().UTC(), Ancestors: spec.Ancestors, Socket: srv.Socket(), Logs: logs, Host: t.host(),
		Sandbox: node.SandboxName(spec.Sandbox)}
	if l := restore; l != nil {
		// A new incarnation; revisions above the old node's; its
		// recording goes on (with a gap).
		meta.Epoch, meta.Recording = l.Meta.Epoch+1, l.Meta.Recording
	}
	n, err := o.create(ctx, t, srv, spec, meta, restore)
	if err != nil {
		r.release()
		if t.host() == "" {
			// A shard it may have started for itself goes again.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeDeadline)
			o.reclaimShards(rctx)
			cancel()
		}
		return tools.NodeInfo{}, err
	}
	r.register(n)
	srv.Life().Unlock()
	o.log.Info("launched node", "node", id, "host", meta.Host, "command", spec.Command[0], "owner", spec.Owner)
	info := n.Info(0)
	info.Exited = n.EarlyExit(ctx, o.cfg.LaunchWatch)
	info.Ready = n.LaunchReady(ctx)
	return info, nil
}

// create writes the node's files, creates its session and attaches its
// mirror, under srv's lifecycle lock: it returns with the lock held on
// success (the caller registers the node, then unlocks), released on
// failure after everything it made was undone.
func (o *Orchestrator) create(ctx context.Context, t launchTarget, srv hosts.Server, spec LaunchSpec, meta NodeMeta, restore *lostnodes.Entry) (*node.Node, error) {
	id := meta.ID
	srv.Life().Lock()
	ok := false
	defer func() {
		if !ok {
			srv.Life().Unlock()
		}
	}()
	if o.isClosing() {
		return nil, errShuttingDown()
	}
	if err := tools.WriteJSONAtomic(o.metaPath(id), meta); err != nil {
		o.removeFiles(id)
		return nil, fmt.Errorf("write node metadata: %w", err)
	}
	if err := o.writeLaunch(id, spec, srv.Socket(), restore); err != nil {
		o.removeFiles(id)
		return nil, err
	}
	if err := o.writeSessionFile(meta); err != nil {
		o.removeFiles(id)
		return nil, err
	}
	// undo rolls back a launch the way a close ends a node: never a
	// kill-session on a live pane (docs/TMUX-CRASHES.md).
	undo := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeDeadline)
		defer cancel()
		o.stillborn(meta)
		t.removeFiles(uctx, id)
		hosts.EndSession(uctx, srv, "ts-"+id, 0, o.log)
	}
	if err := t.writeFiles(ctx, id); err != nil {
		undo()
		return nil, err
	}
	args := []string{"new-session", "-d", "-s", "ts-" + id, "-x", strconv.Itoa(spec.Columns), "-y", strconv.Itoa(spec.Rows), "-c", spec.Cwd}
	for _, kv := range t.env(spec, id, srv) {
		args = append(args, "-e", kv)
	}
	args = append(args, "--")
	argv := spec.Command
	if len(argv) == 1 {
		// One argument would go through the shell: exec it via env so it
		// runs verbatim, with no shell interpretation.
		argv = []string{"env", "--", argv[0]}
	}
	argv, err := t.wrap(ctx, spec, id, argv)
	if err != nil {
		undo()
		return nil, err
	}
	args = append(args, argv...)
	create := func() error {
		_, err := srv.Admin().RunMany(ctx,
			tmuxctl.Command(args[0], args[1:]...),
			tmuxctl.Command("set-option", "-t", "=ts-"+id+":", "@termsprawl_node", id))
		return err
	}
	err = create()
	if err != nil && t.retry(ctx, srv, err) {
		err = create()
	}
	if err != nil {
		undo()
		return nil, t.fail(fmt.Errorf("create tmux session for %s: %w", id, err))
	}
	n := o.newNode(meta)
	n.RecordOnAttach = spec.Record
	if err := n.Attach(ctx); err != nil {
		undo()
		return nil, t.fail(err)
	}
	if o.hooks.beforeRegister != nil {
		o.hooks.beforeRegister(id)
	}
	if err := ctx.Err(); err != nil {
		// Its caller gave up: nobody would know of this node. Rolled
		// back like a close (our client leaves first).
		n.Detach()
		undo()
		o.log.Info("launch rolled back: its caller gave up before the node was registered", "node", id)
		return nil, tools.Errorf(tools.KindNotRun, "launch of %s: the request ended before the node was registered, so it was rolled back (nothing runs): %w", id, err)
	}
	ok = true
	return n, nil
}

// isClosing reports whether Close began.
func (o *Orchestrator) isClosing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closing
}

// localTarget is a launch on this machine's shards.
type localTarget struct{ o *Orchestrator }

func (localTarget) host() string         { return "" }
func (localTarget) defaultShell() string { return launchenv.DefaultShell() }

// defaultCwd: the caller's directory is the tool server's business (a
// node's pane path, the human CLI's own cwd); failing that, ours.
func (localTarget) defaultCwd() string {
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "/"
}

func (t localTarget) check(ctx context.Context, spec LaunchSpec) ([]tools.LogSpec, error) {
	if fi, err := os.Stat(spec.Cwd); err != nil || !fi.IsDir() {
		return nil, usage("cwd %q does not exist or is not a directory", spec.Cwd)
	}
	if err := t.o.checkProgram(spec); err != nil {
		return nil, err
	}
	if err := t.o.checkSandbox(ctx, spec); err != nil {
		return nil, err
	}
	return t.o.resolveLogs(spec.Logs, spec.Cwd)
}

func (t localTarget) server(ctx context.Context, r *reservation) (hosts.Server, error) {
	srv, err := t.o.shardFor(ctx, r)
	if err == nil {
		err = srv.Ensure(ctx)
	}
	if err != nil {
		return nil, tools.Errorf(tools.KindUnavailable, "the private tmux server is not reachable: %w", err)
	}
	return srv, nil
}

func (t localTarget) env(spec LaunchSpec, id string, srv hosts.Server) []string {
	return t.o.launchEnv(spec, id, srv.Socket())
}

func (t localTarget) wrap(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	return t.o.sandboxed(ctx, spec, id, argv)
}

func (localTarget) writeFiles(context.Context, string) error { return nil }
func (localTarget) removeFiles(context.Context, string)      {}

// retry: the server died under us (its death may not have been seen yet
// when ensure ran): start a new one and try once more.
func (localTarget) retry(ctx context.Context, srv hosts.Server, err error) bool {
	shard, ok := srv.(*tmuxServer)
	return ok && errors.Is(err, tmuxctl.ErrClosed) && shard.Ensure(ctx) == nil
}

func (localTarget) fail(err error) error { return err }

// checkProgram refuses, before anything exists, a program that cannot
// start: not on the PATH the node will have, not a regular executable file.
func (o *Orchestrator) checkProgram(spec LaunchSpec) error {
	return launchenv.CheckProgram(spec.Command[0], spec.Cwd, o.launchEnv(spec, "", o.cfg.Socket))
}

// launchEnv builds the -e list of a local node (launchenv.Local).
func (o *Orchestrator) launchEnv(spec LaunchSpec, id, socket string) []string {
	return launchenv.Local{Mode: spec.EnvMode, Env: spec.Env, Extra: spec.ExtraEnv, CtlPath: o.cfg.CtlPath,
		StateDir: o.cfg.StateDir, ID: id, Socket: socket, Sandbox: node.SandboxName(spec.Sandbox)}.List()
}

func (o *Orchestrator) metaPath(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Meta)
}

func (o *Orchestrator) removeFiles(id string) {
	os.Remove(o.metaPath(id))
	os.Remove(tools.SessionPath(o.cfg.StateDir, id))
	os.Remove(o.inputMarkPath(id))
	os.Remove(o.closeMarkPath(id))
	os.Remove(o.launchPath(id))
	os.Remove(o.screenPath(id))
	sandbox.RemoveCache(o.sandboxCacheDir(id))
	os.Remove(statefile.Path(o.cfg.StateDir, id, statefile.Exit))
}

func (o *Orchestrator) newNode(meta NodeMeta) *node.Node {
	return node.New(meta, o.serverFor(meta), nodeEnv{o}, o.log.With("node", meta.ID))
}

func (o *Orchestrator) writeSessionFile(meta NodeMeta) error {
	tok, err := tools.NewToken()
	if err != nil {
		return err
	}
	s := tools.Session{Node: meta.ID, Token: tok, Role: tools.RoleAgent, Name: meta.Name,
		Socket: cmp.Or(meta.Socket, o.cfg.Socket), TmuxSession: "ts-" + meta.ID, Parent: meta.Parent}
	if err := tools.WriteSession(tools.SessionPath(o.cfg.StateDir, meta.ID), s); err != nil {
		return fmt.Errorf("write session file of %s: %w", meta.ID, err)
	}
	o.born(meta)
	return nil
}
