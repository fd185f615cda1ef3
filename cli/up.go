package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/toolserver"
	"github.com/termsprawl/termsprawl/tools"
)

// LogFile is the log of a detached orchestrator, in the state directory.
const LogFile = "termsprawl.log"

// Bounds of up --detach and down.
var (
	detachStartTimeout = 30 * time.Second
	downTimeout        = 10 * time.Second
	downPollInterval   = 50 * time.Millisecond
)

// ctlPath finds termsprawlctl for agent nodes: next to this executable,
// else on PATH ("" if neither).
func ctlPath() string {
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), "termsprawlctl")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath("termsprawlctl"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// ctlMissing is up's warning when termsprawlctl is not found, saying what
// to do (`go run` builds termsprawl alone).
const ctlMissing = "termsprawlctl was not found next to this termsprawl or on PATH, so nodes get no termsprawlctl: agents cannot call termsprawl, and agent nodes get no MCP registration. " +
	"`go run` builds termsprawl alone: stop this one (Ctrl-C) and run the pair instead: go build -o bin/ ./cmd/... && bin/termsprawl up (or put both on PATH: go install ./cmd/...)"

// nodesText is "no nodes", "1 node" or "N nodes".
func nodesText(n int) string {
	switch n {
	case 0:
		return "no nodes"
	case 1:
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// printServing prints where termsprawl serves and how to use it (nodes < 0:
// the count is unknown).
func printServing(w io.Writer, ep tools.Endpoint, stateDir, socket, operator string, nodes int, detach, answer string) {
	nodeText := ""
	if nodes >= 0 {
		nodeText = " (" + nodesText(nodes) + ")"
	}
	fmt.Fprintf(w, "termsprawl %s is running (pid %d, instance %s)\n", ep.Version, ep.PID, ep.InstanceID)
	fmt.Fprintf(w, "  endpoint:          %s\n", ep.URL)
	fmt.Fprintf(w, "  state dir:         %s\n", stateDir)
	fmt.Fprintf(w, "  tmux socket:       %s%s\n", socket, nodeText)
	fmt.Fprintf(w, "  operator session:  %s\n", operator)
	fmt.Fprintf(w, "launch a node:       termsprawl new --name build -- bash\n")
	fmt.Fprintf(w, "attach to a node:    termsprawl attach NODE   (also while termsprawl is down; %s detaches, %s answers dialogs, also inside your own tmux)\n", detach, answer)
	// Nodes are spread over shards: the tmux command names the node's own.
	fmt.Fprintf(w, "without termsprawl:  tmux -L SOCKET attach -t ts-NODE   (SOCKET: the node's tmux_socket in termsprawl ls --json: %s, %s-2, …)\n", socket, socket)
	fmt.Fprintf(w, "an agent calls:      termsprawlctl --session %s call terminal_list\n", operator)
	fmt.Fprintf(w, "stop:                termsprawl down   (nodes keep running; down --all ends them)\n")
}

// isTerminal reports whether w is a terminal (a character device other
// than /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if dn, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, dn) {
		return false
	}
	return true
}

// logLevel is up's --log-level: auto is warn on a terminal (the banner
// stays readable) and info otherwise (a log file, a service manager).
func logLevel(flag string, stderr io.Writer) slog.Level {
	switch flag {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	if isTerminal(stderr) {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

func (h *human) config(logger *slog.Logger) orchestrator.Config {
	return orchestrator.Config{
		StateDir:  h.stateDir,
		Socket:    h.socket,
		Tmux:      "tmux",
		Version:   version(),
		CtlPath:   ctlPath(),
		Logger:    logger,
		MaxNodes:  h.upOpts.MaxNodes,
		IdleAfter: h.upOpts.IdleAfter,

		MCPAllowOrigins: h.upOpts.MCPAllowOrigin,
		Notify:          h.upOpts.Notify,
		NotifyMode:      h.upOpts.NotifyMode,
		Picker:          h.pickerCommand(),
		ShardSize:       h.upOpts.ShardSize,
		RestoreLost:     h.upOpts.Restore,
	}
}

// hostsConfig sets cfg.Hosts from hosts.json and up's --host flags.
func (h *human) hostsConfig(cfg *orchestrator.Config) bool {
	hosts, err := h.resolveHosts()
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, err)
		return false
	}
	cfg.Hosts = hosts
	return true
}

// up runs the orchestrator in the foreground until SIGINT or SIGTERM.
func (h *human) up() int {
	logger := slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: logLevel(h.upOpts.LogLevel, h.stderr)}))
	ctx, stop := signalContext(h.ctx)
	defer stop()
	cfg := h.config(logger)
	if !h.hostsConfig(&cfg) || !h.keysConfig(&cfg) {
		return ExitNo
	}
	cfg.DetachKey, cfg.AnswerKey = orDefaultKeys(cfg.DetachKey, cfg.AnswerKey)
	if cfg.CtlPath == "" {
		logger.Warn(ctlMissing)
	}
	if stopProfile := startCPUProfile(logger); stopProfile != nil {
		defer stopProfile()
	}
	err := toolserver.Serve(ctx, cfg, func(info toolserver.ServeInfo) {
		printServing(h.stdout, info.Endpoint, info.StateDir, info.Socket, info.OperatorSession, info.Nodes, cfg.DetachKey, cfg.AnswerKey)
		printHosts(h.stdout, info.Hosts)
		printLost(h.stdout, info.Restored, info.RestoreErrors, info.Lost)
		if h.upOpts.Monitor || h.upOpts.NoOpen {
			fmt.Fprintf(h.stdout, "monitor (read-only): %s\n", info.MonitorURL)
			if !h.upOpts.NoOpen {
				h.openBrowser(info.MonitorURL)
			}
		}
	})
	if err != nil {
		var le *toolserver.LockError
		if errors.As(err, &le) {
			fmt.Fprintf(h.stderr, "%s: %v\n", humanName, err)
			return ExitNo
		}
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, err)
		return ExitNo
	}
	return ExitOK
}

// upDetached re-executes `termsprawl up` in a new session with its output
// in <state>/termsprawl.log, waits for the fresh endpoint.json it writes
// and prints the same information as up.
func (h *human) upDetached() int {
	if err := tools.EnsureStateDir(h.stateDir); err != nil {
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, err)
		return ExitNo
	}
	if _, err := h.resolveHosts(); err != nil { // saved for the child; errors shown here
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, err)
		return ExitNo
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up --detach: find this executable: %v\n", humanName, err)
		return ExitNo
	}
	logPath := filepath.Join(h.stateDir, LogFile)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up --detach: open log: %v\n", humanName, err)
		return ExitNo
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		logf.Close()
		fmt.Fprintf(h.stderr, "%s: up --detach: %v\n", humanName, err)
		return ExitNo
	}
	stale := ""
	epPath := tools.EndpointPath(h.stateDir)
	if ep, err := tools.ReadEndpoint(epPath); err == nil {
		stale = ep.InstanceID
	}

	// Every value goes as --flag=VALUE: a value that starts with "-" (a
	// negative --idle-after turns sleeping off) is not read as a flag.
	cmd := exec.Command(exe, "--state-dir="+h.stateDir, "--tmux-socket="+h.socket, "up",
		"--max-nodes="+strconv.Itoa(h.upOpts.MaxNodes), "--idle-after="+h.upOpts.IdleAfter.String())
	if lvl := h.upOpts.LogLevel; lvl != "" && lvl != "auto" {
		cmd.Args = append(cmd.Args, "--log-level="+lvl)
	}
	for _, o := range h.upOpts.MCPAllowOrigin {
		cmd.Args = append(cmd.Args, "--mcp-allow-origin="+o)
	}
	for _, n := range h.upOpts.Notify {
		cmd.Args = append(cmd.Args, "--notify="+n)
	}
	if h.upOpts.NotifyMode != "" {
		cmd.Args = append(cmd.Args, "--notify-mode="+h.upOpts.NotifyMode)
	}
	if h.upOpts.ShardSize > 0 {
		cmd.Args = append(cmd.Args, "--shard-size="+strconv.Itoa(h.upOpts.ShardSize))
	}
	if h.upOpts.Restore {
		cmd.Args = append(cmd.Args, "--restore")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logf.Close()
	devnull.Close()
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up --detach: start %s: %v\n", humanName, exe, err)
		return ExitNo
	}
	pid := cmd.Process.Pid

	wctx, cancel := context.WithTimeout(h.ctx, detachStartTimeout)
	defer cancel()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-wctx.Done():
		}
	}()
	ep, err := tools.WaitForEndpoint(wctx, epPath, func(ep tools.Endpoint) bool {
		return ep.PID == pid && ep.InstanceID != stale
	})
	if err != nil {
		select {
		case <-exited:
			fmt.Fprintf(h.stderr, "%s: up --detach: termsprawl exited during startup (%v); its log (%s):\n%s", humanName, waitErr, logPath, tools.VisibleText(logTail(logPath, logStart)))
		default:
			fmt.Fprintf(h.stderr, "%s: up --detach: termsprawl (pid %d) did not serve within %s; see %s\n", humanName, pid, detachStartTimeout, logPath)
		}
		return ExitNo
	}
	detach, answer := h.keys()
	printServing(h.stdout, ep, h.stateDir, h.socket, tools.OperatorSessionPath(h.stateDir), -1, detach, answer)
	fmt.Fprintf(h.stdout, "log:                 %s\n", logPath)
	if h.upOpts.Monitor || h.upOpts.NoOpen {
		// Asked of the child, so its log never holds the capability URL.
		return h.monitor(h.upOpts.NoOpen)
	}
	return ExitOK
}

// logTail returns what was appended to the log since offset (at most the
// last 4 KiB).
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || offset > fi.Size() {
		return ""
	}
	start := max(offset, fi.Size()-4096)
	data := make([]byte, fi.Size()-start)
	n, _ := f.ReadAt(data, start)
	s := string(data[:n])
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// readLock reads server.lock and refuses one without a pid.
func readLock(stateDir string) (tools.LockInfo, error) {
	li, err := tools.ReadLock(stateDir)
	if err != nil {
		return li, err
	}
	if li.PID <= 0 {
		return li, fmt.Errorf("%s has no pid", tools.LockPath(stateDir))
	}
	return li, nil
}

// pidAlive reports whether pid is a live process (a zombie is not).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) STATE …; comm may contain spaces and parentheses.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) && data[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// looksLikeTermsprawl guards against signalling an unrelated process that
// reused the pid of a stale lock: the pid must be the endpoint's, or its
// executable must be called termsprawl (when /proc tells).
func looksLikeTermsprawl(stateDir string, pid int) bool {
	if ep, err := tools.ReadEndpoint(tools.EndpointPath(stateDir)); err == nil && ep.PID == pid {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true // cannot tell (no /proc): trust the lock
	}
	argv0, _, _ := strings.Cut(string(data), "\x00")
	base := filepath.Base(argv0)
	return strings.HasPrefix(base, "termsprawl") && base != "termsprawlctl"
}

// down sends SIGTERM to the orchestrator named by server.lock and waits
// (bounded) until it is gone. Nothing running is success (CONTRACT §10).
// With all, it then ends the private tmux servers (the socket and its
// shards), and every node with them.
func (h *human) down(all bool) int {
	// The socket the last orchestrator of this state dir ran on.
	socket := h.socket
	if s, err := tools.ReadSession(tools.OperatorSessionPath(h.stateDir)); err == nil && s.Socket != "" {
		socket = s.Socket
	}
	// The nodes and their sockets, while the orchestrator can still say.
	var nodeSockets []string
	remote := map[string]string{} // host → its socket there
	nodes, listed := -1, -1       // running and listed nodes; -1: unknown
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	res := tools.Call(ctx, h.sessionFile(), tools.Request{Operation: "terminal_list"}, tools.CallOptions{})
	cancel()
	var l tools.NodeList
	if res.OK && tools.DecodeValue(res.Value, &l) == nil {
		nodes, listed = 0, len(l.Terminals)
		for _, n := range l.Terminals {
			if n.Status != tools.StatusLost && n.Status != tools.StatusExited {
				nodes++ // lost and exited nodes do not keep running
			}
			if n.Host != "" {
				// Not a server of this machine: ended on its host.
				remote[n.Host] = n.TmuxSocket
				continue
			}
			nodeSockets = append(nodeSockets, n.TmuxSocket)
		}
	}
	if all && res.OK {
		h.endDialogs()
	}
	pid, code := h.stop()
	if code != ExitOK {
		return code
	}
	if !all {
		if pid > 0 {
			fmt.Fprintf(h.stdout, "termsprawl stopped (pid %d)%s\n", pid, keepText(nodes, listed))
		}
		return ExitOK
	}
	if pid > 0 {
		fmt.Fprintf(h.stdout, "termsprawl stopped (pid %d)\n", pid)
	}
	code = h.killTmuxServers(shardSockets(socket, nodeSockets))
	code = max(code, h.killRemoteServers(remote))
	if code == ExitOK {
		// Ended on purpose, not lost: the next up forgets them (restore.go).
		forgetLaunches(h.stateDir)
	}
	return code
}

// endDialogs denies every open dialog before down --all ends the nodes:
// a permission hook waiting on a human ends with a deny whose reason says
// why (CONTRACT §26) instead of waiting on a termsprawl that is gone.
func (h *human) endDialogs() {
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	res := tools.Call(ctx, h.sessionFile(), tools.Request{Operation: "dialog_list"}, tools.CallOptions{})
	var l tools.DialogList
	if !res.OK || tools.DecodeValue(res.Value, &l) != nil {
		return
	}
	for _, d := range l.Dialogs {
		args, _ := json.Marshal(map[string]any{"dialog": d.ID, "mode": tools.AnswerDeny, "reason": tools.DialogEndDownAll})
		tools.Call(ctx, h.sessionFile(), tools.Request{Operation: "dialog_answer", Args: args}, tools.CallOptions{})
	}
}

// keepText is what down says of the nodes it leaves running (nodes < 0:
// the count is unknown); listed counts the exited and lost ones too,
// which never keep running (CONTRACT §26).
func keepText(nodes, listed int) string {
	const next = ": the next `termsprawl up` adopts them, `termsprawl down --all` ends them"
	switch {
	case nodes == 0 && listed > 0:
		return "; none of its nodes was running (the exited and lost ones stay listed: `termsprawl up` shows them again)"
	case nodes == 0:
		return "; it ran no nodes"
	case nodes == 1:
		return "; its node keeps running: the next `termsprawl up` adopts it, `termsprawl down --all` ends it"
	case nodes > 1:
		return fmt.Sprintf("; its %d nodes keep running%s", nodes, next)
	}
	return "; its nodes keep running" + next
}

// tmuxSocketDir is where tmux keeps the sockets of `tmux -L NAME`.
func tmuxSocketDir() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()))
}

// shardSockets are the private tmux servers of socket, as the engine
// finds them when it adopts: socket itself, SOCKET-N for every N whose
// socket file exists, and the sockets nodes were listed on.
func shardSockets(socket string, nodeSockets []string) []string {
	seen := map[string]bool{socket: true}
	out := []string{socket}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	entries, _ := os.ReadDir(tmuxSocketDir())
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), socket+"-"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			add(e.Name())
		}
	}
	for _, s := range nodeSockets {
		add(s)
	}
	sort.Strings(out[1:])
	return out
}

// stop stops the orchestrator of the state dir and returns its pid (0
// when none was running).
func (h *human) stop() (pid int, code int) {
	notRunning := func(why string) (int, int) {
		fmt.Fprintf(h.stdout, "termsprawl is not running (state dir %s%s): nothing to stop\n", h.stateDir, why)
		return 0, ExitOK
	}
	li, err := readLock(h.stateDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return notRunning("")
		}
		return notRunning(": " + shortErr(err))
	}
	if !pidAlive(li.PID) {
		return notRunning(fmt.Sprintf(": server.lock names pid %d, which is gone", li.PID))
	}
	if !looksLikeTermsprawl(h.stateDir, li.PID) {
		return notRunning(fmt.Sprintf(": server.lock names pid %d, which is not termsprawl; not signalling it", li.PID))
	}
	if err := syscall.Kill(li.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return notRunning(fmt.Sprintf(": pid %d is gone", li.PID))
		}
		fmt.Fprintf(h.stderr, "%s: cannot signal termsprawl (pid %d): %v\n", h.prefix(), li.PID, err)
		return 0, ExitNo
	}
	// There is no portable event for "an unrelated process exited": poll,
	// bounded.
	deadline := time.Now().Add(downTimeout)
	t := time.NewTicker(downPollInterval)
	defer t.Stop()
	for pidAlive(li.PID) {
		if time.Now().After(deadline) {
			fmt.Fprintf(h.stderr, "%s: termsprawl (pid %d) did not stop within %s; `kill -9 %d` stops it (nodes keep running)\n", h.prefix(), li.PID, downTimeout, li.PID)
			return 0, ExitNo
		}
		select {
		case <-h.ctx.Done():
			return 0, ExitNo
		case <-t.C:
		}
	}
	return li.PID, ExitOK
}

// killTmuxServers ends the private tmux servers of sockets (only
// those): every node's session, and the admin sessions.
func (h *human) killTmuxServers(sockets []string) int {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: tmux is not on PATH, so the tmux servers of socket %s cannot be ended: %v\n", h.prefix(), sockets[0], err)
		return ExitNo
	}
	var ended []string
	code := ExitOK
	for _, socket := range sockets {
		ctx, cancel := context.WithTimeout(h.ctx, downTimeout)
		cmd := exec.CommandContext(ctx, tmux, "-L", socket, "kill-server")
		cmd.Env = tools.EnvWithoutTmux(os.Environ())
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			text := strings.TrimSpace(string(out))
			if strings.Contains(text, "no server running") || strings.Contains(text, "error connecting to") {
				continue
			}
			fmt.Fprintf(h.stderr, "%s: tmux -L %s kill-server: %v: %s\n", h.prefix(), socket, err, text)
			code = ExitNo
			continue
		}
		ended = append(ended, socket)
	}
	switch {
	case len(ended) == 1:
		fmt.Fprintf(h.stdout, "ended every node and the tmux server on socket %s\n", ended[0])
	case len(ended) > 1:
		fmt.Fprintf(h.stdout, "ended every node and the tmux servers on sockets %s\n", strings.Join(ended, ", "))
	case code == ExitOK:
		fmt.Fprintf(h.stdout, "no tmux server was running on socket %s: no nodes to end\n", sockets[0])
	}
	return code
}

// shortErr drops the path noise of a missing file.
func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "no server.lock"
	}
	return err.Error()
}

// printHosts adds the hosts to up's banner: each connected, or why not.
func printHosts(w io.Writer, hosts []orchestrator.HostStatus) {
	for _, st := range hosts {
		if st.State == orchestrator.HostConnected {
			fmt.Fprintf(w, "host %s (%s): connected, %s; `termsprawl new --host %s` launches there\n", st.Name, st.Dest, st.Tmux, st.Name)
			continue
		}
		fmt.Fprintf(w, "host %s (%s): %s, retrying in the background: %s\n", st.Name, st.Dest, st.State, st.Error)
	}
}

// startCPUProfile writes the orchestrator's CPU profile to the file
// $TERMSPRAWL_CPUPROFILE names, for the scale measurements
// (docs/PERFORMANCE.md); nil when it is not set or cannot be written.
func startCPUProfile(logger *slog.Logger) func() {
	path := os.Getenv("TERMSPRAWL_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		logger.Warn("no CPU profile", "err", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		logger.Warn("no CPU profile", "err", err)
		f.Close()
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// keys returns the detach and answer keys of termsprawl's tmux servers
// (CONTRACT §26): config.toml's [keys], or the defaults (also when the
// file cannot be read: up refuses such a file and says why).
func (h *human) keys() (detach, answer string) {
	if c, err := config.Load(h.stateDir); err == nil {
		detach, answer = c.Keys.Detach, c.Keys.Answer
	}
	return orDefaultKeys(detach, answer)
}

func orDefaultKeys(detach, answer string) (string, string) {
	if detach == "" {
		detach = tools.DefaultDetachKey
	}
	if answer == "" {
		answer = tools.DefaultAnswerKey
	}
	return detach, answer
}

// keysConfig opens config.toml with every room's checks for the run (the
// store Serve watches) and sets cfg's keys from it; a file up cannot use
// is refused with its lines, their fixes and what to run next.
func (h *human) keysConfig(cfg *orchestrator.Config) bool {
	st, err := config.Open(h.stateDir, toolserver.ConfigChecks()...)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, &toolserver.ConfigError{Err: err})
		return false
	}
	c := st.Current()
	cfg.Settings = st
	cfg.DetachKey, cfg.AnswerKey = c.Keys.Detach, c.Keys.Answer
	return true
}

// detachKey is h.keys()'s detach key.
func detachKey(h *human) string {
	d, _ := h.keys()
	return d
}

// configChecks are the rooms' checks of config.toml that up applies, for
// the commands that judge the file as up would (termsprawl config).
func configChecks() []config.Check { return toolserver.ConfigChecks() }
