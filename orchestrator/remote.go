package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Nodes on hosts: launch, adoption after a (re)connect, their files on the
// remote side, signals and attach. The connection itself is host.go's.

// hostFor returns the connected host of a launch, or the error to answer.
func (o *Orchestrator) hostFor(ctx context.Context, name string) (*remoteHost, *tmuxServer, error) {
	h := o.host(name)
	if h == nil {
		known := strings.Join(o.hostNames(), ", ")
		if known == "" {
			known = "none"
		}
		return nil, nil, tools.Errorf(tools.KindUsage, "no host %q (known hosts: %s): add it with `termsprawl up --host %s=[user@]machine`", name, known, name).
			WithDetails("host", name)
	}
	if srv := h.server(); srv != nil {
		return h, srv, nil
	}
	// Not connected: try now, so the caller hears why not.
	cctx, cancel := context.WithTimeout(ctx, hostConnectTimeout)
	defer cancel()
	if err := h.connect(cctx); err != nil {
		h.kickHost()
		e := tools.Errorf(tools.KindUnavailable, "%w", err).WithDetails("host", name)
		var he *HostError
		if errors.As(err, &he) {
			e.WithDetails("reason", he.Reason)
		}
		e.Retryable = true
		return nil, nil, e
	}
	h.adoptSessions(cctx)
	if srv := h.server(); srv != nil {
		return h, srv, nil
	}
	return nil, nil, tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", name).WithDetails("host", name)
}

// launchRemote is Launch for spec.Host: the same steps, with the checks,
// files and environment of the remote side.
func (o *Orchestrator) launchRemote(ctx context.Context, spec LaunchSpec) (tools.NodeInfo, error) {
	h, srv, err := o.hostFor(ctx, spec.Host)
	if err != nil {
		return tools.NodeInfo{}, err
	}
	h.mu.Lock()
	probe, rdir := h.probe, h.rdir
	h.mu.Unlock()
	if len(spec.Command) == 0 {
		spec.Command = []string{cmp.Or(probe.shell, "/bin/sh")}
	}
	if spec.Command[0] == "" {
		return tools.NodeInfo{}, usage("command[0] is empty: give the program to run, e.g. [\"bash\"]")
	}
	spec.Columns, spec.Rows = cmp.Or(spec.Columns, DefaultColumns), cmp.Or(spec.Rows, DefaultRows)
	if err := checkSize(spec.Columns, spec.Rows); err != nil {
		return tools.NodeInfo{}, err
	}
	if spec.Cwd == "" {
		spec.Cwd = probe.home
	}
	if !strings.HasPrefix(spec.Cwd, "/") {
		return tools.NodeInfo{}, usage("cwd %q is not an absolute path on host %s", spec.Cwd, spec.Host)
	}
	if err := checkEnv(&spec); err != nil {
		return tools.NodeInfo{}, err
	}
	if err := h.checkProgram(ctx, spec); err != nil {
		return tools.NodeInfo{}, err
	}

	o.lifecycleMu.Lock()
	defer o.lifecycleMu.Unlock()
	o.mu.Lock()
	count, closing := len(o.nodes), o.closing
	o.mu.Unlock()
	if closing {
		return tools.NodeInfo{}, tools.Errorf(tools.KindUnavailable, "the orchestrator is shutting down")
	}
	if count >= o.cfg.MaxNodes {
		return tools.NodeInfo{}, tools.Errorf(tools.KindRejected, "node limit reached (%d): close terminals with terminal_close first", o.cfg.MaxNodes)
	}
	id := o.allocateID(spec.Name)
	name := cmp.Or(spec.Name, id)
	meta := NodeMeta{ID: id, Name: name, Command: spec.Command, Cwd: spec.Cwd, Owner: spec.Owner, Parent: spec.Parent,
		Agent: spec.Agent, Created: time.Now().UTC(), Ancestors: spec.Ancestors, Socket: srv.socket, Host: spec.Host}
	undo := func() {
		o.stillborn(meta)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.exec(ctx, "rm -f "+tmuxctl.ShellQuote(remoteSessionPath(rdir, id)), nil)
		srv.adminClient().Run(ctx, tmuxctl.Command("kill-session", "-t", "=ts-"+id))
	}
	if err := tools.WriteJSONAtomic(o.metaPath(id), meta); err != nil {
		return tools.NodeInfo{}, fmt.Errorf("write node metadata: %w", err)
	}
	if err := o.writeSessionFile(meta); err != nil {
		o.removeFiles(id)
		return tools.NodeInfo{}, err
	}
	if err := h.writeRemoteSession(ctx, o, id); err != nil {
		undo()
		return tools.NodeInfo{}, tools.Errorf(tools.KindUnavailable, "host %s: write the session file of %s: %w", spec.Host, id, err)
	}
	args := []string{"new-session", "-d", "-s", "ts-" + id, "-x", strconv.Itoa(spec.Columns), "-y", strconv.Itoa(spec.Rows), "-c", spec.Cwd}
	for _, kv := range h.launchEnv(spec, id, probe, rdir) {
		args = append(args, "-e", kv)
	}
	args = append(args, "--")
	argv := spec.Command
	if len(argv) == 1 {
		argv = []string{"env", "--", argv[0]} // verbatim, no shell
	}
	args = append(args, argv...)
	if _, err := srv.adminClient().RunMany(ctx, tmuxctl.Command(args[0], args[1:]...),
		tmuxctl.Command("set-option", "-t", "=ts-"+id+":", "@termsprawl_node", id)); err != nil {
		undo()
		return tools.NodeInfo{}, o.remoteErr(h, fmt.Errorf("create tmux session for %s on host %s: %w", id, spec.Host, err))
	}
	n := o.newNode(meta)
	n.recordOnAttach = spec.Record
	if err := n.attach(ctx); err != nil {
		undo()
		return tools.NodeInfo{}, o.remoteErr(h, err)
	}
	o.mu.Lock()
	o.nodes[id] = n
	o.mu.Unlock()
	o.log.Info("launched node", "node", id, "host", spec.Host, "command", spec.Command[0], "owner", spec.Owner)
	info := n.info(0)
	info.Exited = n.earlyExit(ctx, o.cfg.LaunchWatch)
	info.Ready = n.launchReady(ctx)
	return info, nil
}

// remoteErr is err as the caller should see it: unavailable (retryable)
// when the host's connection is what failed.
func (o *Orchestrator) remoteErr(h *remoteHost, err error) error {
	if e := sessionRefused(h, err); e != nil {
		return e
	}
	if errors.Is(err, tmuxctl.ErrClosed) || !h.alive() {
		h.kickHost()
		e := tools.Errorf(tools.KindUnavailable, "host %s is unreachable: %w", h.spec.Name, err).WithDetails("host", h.spec.Name)
		e.Retryable = true
		return e
	}
	return err
}

// checkProgram refuses, before anything exists, a cwd or program the host
// does not have (one round trip).
func (h *remoteHost) checkProgram(ctx context.Context, spec LaunchSpec) error {
	q := tmuxctl.ShellQuote
	script := "cd -- " + q(spec.Cwd) + " 2>/dev/null || exit 3\n" +
		"p=" + q(spec.Command[0]) + "\ncase $p in */*) [ -f \"$p\" ] && [ -x \"$p\" ] || exit 4;; *) command -v -- \"$p\" >/dev/null 2>&1 || exit 4;; esac"
	_, err := h.exec(ctx, script, nil)
	switch code := exitCode(err); {
	case err == nil:
		return nil
	case code == 3:
		return usage("cwd %q does not exist on host %s or is not a directory", spec.Cwd, spec.Host)
	case code == 4:
		return tools.Errorf(tools.KindUsage, "program %q is not on host %s's PATH or not executable there: install it on %s, or give its absolute path as command[0]", spec.Command[0], spec.Host, spec.Host).
			WithDetails("program", spec.Command[0])
	default:
		if e := sessionRefused(h, err); e != nil {
			return e
		}
		return tools.Errorf(tools.KindUnavailable, "host %s: check the program: %w", spec.Host, err)
	}
}

// sessionRefused is the error to answer when the host's sshd refused one
// more session on our connection (its MaxSessions), else nil.
func sessionRefused(h *remoteHost, err error) error {
	if err == nil || !strings.Contains(err.Error(), "open refused") {
		return nil
	}
	return tools.Errorf(tools.KindRejected, "host %s refused one more ssh session: its sshd allows MaxSessions sessions on one connection (default 10) and every node there takes one, plus two for termsprawl: close a node on %s, or raise MaxSessions in its sshd_config", h.spec.Name, h.spec.Name).
		WithDetails("host", h.spec.Name).WithDetails("reason", "max-sessions")
}

// exitCode is the exit status in err's chain, or -1.
func exitCode(err error) int {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// launchEnv is the -e list of a remote node: the launch's env, then
// TERMSPRAWL_* with paths on the host. The remote tmux server's own
// environment (the ssh login's) is the base in both env modes.
func (h *remoteHost) launchEnv(spec LaunchSpec, id string, p hostProbe, rdir string) []string {
	var out []string
	keys := sortedKeys(spec.Env)
	for _, k := range keys {
		out = append(out, k+"="+spec.Env[k])
	}
	if p.ctl != "" {
		out = append(out, "PATH="+path.Dir(p.ctl)+":"+p.path, "TERMSPRAWL_CTL="+p.ctl)
	}
	out = append(out, "TERMSPRAWL_SESSION_FILE="+remoteSessionPath(rdir, id), "TERMSPRAWL_NODE="+id,
		"TERMSPRAWL_HOME="+rdir, "TERMSPRAWL_TMUX_SOCKET="+h.spec.RemoteSocket(), "TERMSPRAWL_HOST="+h.spec.Name)
	for _, k := range sortedKeys(spec.ExtraEnv) {
		out = append(out, k+"="+spec.ExtraEnv[k])
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func remoteSessionPath(rdir, id string) string { return rdir + "/sessions/" + id + ".json" }

// writeRemoteSession copies the node's session file (its token) to the
// host, with the host's socket.
func (h *remoteHost) writeRemoteSession(ctx context.Context, o *Orchestrator, id string) error {
	s, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, id))
	if err != nil {
		return err
	}
	b, err := jsonBytes(s)
	if err != nil {
		return err
	}
	h.mu.Lock()
	rdir := h.rdir
	h.mu.Unlock()
	_, err = h.exec(ctx, writeFileScript(rdir, "sessions/"+id+".json"), b)
	return err
}

func jsonBytes(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// adoptSessions runs after every (re)connect: nodes whose sessions still
// run on the host are mirrored again (a new mirror life, reseeded), nodes
// known from metadata are adopted, and nodes whose sessions ended are
// gone.
func (h *remoteHost) adoptSessions(ctx context.Context) {
	o := h.o
	srv := h.server()
	if srv == nil {
		return
	}
	live, err := o.liveSessions(ctx, srv)
	if err != nil {
		o.log.Warn("host: list sessions", "host", h.spec.Name, "err", err)
		return
	}
	h.mu.Lock()
	serverWasUp := h.probe.serverUp
	h.mu.Unlock()
	var again []*node
	o.lifecycleMu.Lock()
	metas := o.readMetas()
	for _, n := range o.sortedNodes() {
		if n.meta.Host != h.spec.Name || n.isClosing() {
			continue
		}
		delete(metas, n.meta.ID)
		if _, _, gone := n.state(); gone {
			continue // already lost, listed until closed
		}
		if n.client == nil && live[n.meta.ID] {
			// Listed from its metadata while the host was not reached:
			// adopted now like any session known from metadata.
			if meta, err := o.readMeta(n.meta.ID); err == nil {
				o.mu.Lock()
				delete(o.nodes, n.meta.ID)
				o.mu.Unlock()
				n.markGone()
				h.adoptOne(ctx, meta, srv)
				continue
			}
		}
		if live[n.meta.ID] {
			if n.srv != srv {
				again = append(again, n) // not yet mirrored on this connection
			}
			continue
		}
		if !serverWasUp {
			// The remote tmux server itself ended (the machine restarted,
			// or tmux died): as for a local server's death, the node stays
			// listed as exited with the reason.
			n.markLost("the tmux server on host " + h.spec.Name + " ended (the machine restarted or tmux died): the program is gone; terminal_close removes the node")
			o.log.Warn("remote tmux server ended: node lost", "node", n.meta.ID, "host", h.spec.Name)
			continue
		}
		o.log.Info("remote session ended while the host was unreachable", "node", n.meta.ID, "host", h.spec.Name)
		n.markGone()
		o.forget(n.meta.ID)
	}
	for id, read := range metas {
		if read.Host != h.spec.Name {
			continue
		}
		if !live[id] {
			o.log.Info("remote session gone: forgetting the node", "node", id, "host", h.spec.Name)
			o.removeFiles(id)
			continue
		}
		h.adoptOne(ctx, read.NodeMeta, srv)
		delete(live, id)
	}
	o.lifecycleMu.Unlock()
	for _, n := range again {
		o.reattach(n)
		if nn := o.node(n.meta.ID); nn != nil && nn != n {
			if err := h.writeRemoteSession(ctx, o, n.meta.ID); err != nil {
				o.log.Debug("rewrite remote session file", "node", n.meta.ID, "err", err)
			}
		}
	}
	if testHookHostAdopted != nil {
		testHookHostAdopted(h.spec.Name)
	}
}

// adoptOne mirrors a session of the host known from its metadata (after
// an orchestrator restart). Call with lifecycleMu held.
func (h *remoteHost) adoptOne(ctx context.Context, meta NodeMeta, srv *tmuxServer) {
	o := h.o
	if o.node(meta.ID) != nil {
		return
	}
	meta.Epoch++
	meta.Socket = srv.socket
	if err := tools.WriteJSONAtomic(o.metaPath(meta.ID), meta); err != nil {
		o.log.Warn("adopt remote node: write metadata", "node", meta.ID, "err", err)
		return
	}
	if _, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, meta.ID)); err != nil {
		if err := o.writeSessionFile(meta); err != nil {
			o.log.Warn("adopt remote node: session file", "node", meta.ID, "err", err)
			return
		}
	}
	if err := h.writeRemoteSession(ctx, o, meta.ID); err != nil {
		o.log.Warn("adopt remote node: remote session file", "node", meta.ID, "err", err)
	}
	srv.adminClient().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "=ts-"+meta.ID+":", "remain-on-exit", "on"))
	n := o.newNode(meta)
	if err := n.attach(ctx); err != nil {
		o.log.Warn("cannot adopt remote node", "node", meta.ID, "host", h.spec.Name, "err", err)
		return
	}
	o.mu.Lock()
	o.nodes[meta.ID] = n
	o.mu.Unlock()
	o.log.Info("adopted node", "node", meta.ID, "host", h.spec.Name)
}

// serverFor is the tmux server a node's session is on.
func (o *Orchestrator) serverFor(meta NodeMeta) *tmuxServer {
	if meta.Host != "" {
		if h := o.host(meta.Host); h != nil {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.srv != nil {
				return h.srv
			}
			if h.lastSrv == nil {
				// Never reached: a server with no clients, so the node
				// is listed with the host's socket.
				h.lastSrv = &tmuxServer{bin: "tmux", socket: h.spec.RemoteSocket(), prefix: h.muxPrefix(), stop: make(chan struct{})}
			}
			return h.lastSrv
		}
	}
	if srv := o.server(meta.Socket); srv != nil && meta.Host == "" {
		return srv
	}
	return o.servers()[0]
}

// reachable is nil unless the node's host cannot be reached now.
func (n *node) reachable() error {
	if n.meta.Host == "" {
		return nil
	}
	if status, _, _ := n.state(); status != tools.StatusUnreachable {
		return nil
	}
	e := tools.Errorf(tools.KindUnavailable, "terminal %q is on host %s, which is unreachable now (the program keeps running there; termsprawl reconnects): %w", n.meta.ID, n.meta.Host, ErrHostUnreachable).
		WithDetails("host", n.meta.Host)
	e.Retryable = true
	return e
}

// remoteLost is clientEnded's hook: true when n's client ended because
// its host's connection is gone (the node is then unreachable and the
// host reconnects); false for a local node or a live connection.
func (o *Orchestrator) remoteLost(n *node) bool {
	if n.meta.Host == "" {
		return false
	}
	h := o.host(n.meta.Host)
	if h == nil {
		return false
	}
	if h.server() == n.srv && h.alive() {
		return false
	}
	n.setStatus(tools.StatusUnreachable, nil)
	h.kickHost()
	return true
}

// remoteSessionGone is sessionGone for a node on a host: certain only
// when the host answers.
func (o *Orchestrator) remoteSessionGone(ctx context.Context, m NodeMeta) bool {
	h := o.host(m.Host)
	if h == nil {
		return false
	}
	srv := h.server()
	if srv == nil {
		return false
	}
	_, err := srv.adminClient().Run(ctx, tmuxctl.Command("has-session", "-t", "=ts-"+m.ID))
	var ce *tmuxctl.CommandError
	return errors.As(err, &ce)
}

// remoteGone removes the remote copy of a gone node's session file.
func (o *Orchestrator) remoteGone(n *node) {
	if n.meta.Host == "" {
		return
	}
	h := o.host(n.meta.Host)
	if h == nil || h.server() == nil {
		return
	}
	h.mu.Lock()
	rdir := h.rdir
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.exec(ctx, "rm -f "+tmuxctl.ShellQuote(remoteSessionPath(rdir, n.meta.ID)), nil); err != nil {
		o.log.Debug("remove remote session file", "node", n.meta.ID, "err", err)
	}
}

// placeholders lists the nodes of a host that could not be reached at
// start-up, from their metadata, as unreachable (a blank mirror, no
// client) until the host answers and adoptSessions adopts them.
func (h *remoteHost) placeholders() {
	o := h.o
	for id, read := range o.readMetas() {
		if read.Host != h.spec.Name || read.err != nil || o.node(id) != nil {
			continue
		}
		n := o.newNode(read.NodeMeta)
		n.scr = screen.NewWithOptions(DefaultColumns, DefaultRows, screen.Options{BaseRevision: revisionBase(read.Epoch + 1)})
		n.status = tools.StatusUnreachable
		close(n.done)
		o.mu.Lock()
		o.nodes[id] = n
		o.mu.Unlock()
		o.log.Info("node listed as unreachable until its host answers", "node", id, "host", h.spec.Name)
	}
}
