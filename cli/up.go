package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
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

// printServing prints where termsprawl serves and how to use it.
func printServing(w io.Writer, ep tools.Endpoint, stateDir, socket, operator string, nodes int) {
	nodeText := ""
	if nodes >= 0 {
		nodeText = fmt.Sprintf(" (%d nodes)", nodes)
	}
	fmt.Fprintf(w, "termsprawl %s is running (pid %d, instance %s)\n", ep.Version, ep.PID, ep.InstanceID)
	fmt.Fprintf(w, "  endpoint:          %s\n", ep.URL)
	fmt.Fprintf(w, "  state dir:         %s\n", stateDir)
	fmt.Fprintf(w, "  tmux socket:       %s%s\n", socket, nodeText)
	fmt.Fprintf(w, "  operator session:  %s\n", operator)
	fmt.Fprintf(w, "attach to a node:    termsprawl attach NODE   (or: tmux -L %s attach -t ts-NODE)\n", socket)
	fmt.Fprintf(w, "an agent calls:      termsprawlctl --session %s call terminal_list\n", operator)
	fmt.Fprintf(w, "stop:                termsprawl down   (tmux sessions keep running)\n")
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
	}
}

// up runs the orchestrator in the foreground until SIGINT or SIGTERM.
func (h *human) up() int {
	logger := slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signalContext(h.ctx)
	defer stop()
	cfg := h.config(logger)
	if cfg.CtlPath == "" {
		logger.Warn("termsprawlctl not found next to this binary or on PATH: agent nodes get no TERMSPRAWL_CTL and no MCP registration; build both with `go build -o bin/ ./cmd/...` and run bin/termsprawl up")
	}
	err := toolserver.Serve(ctx, cfg, func(info toolserver.ServeInfo) {
		printServing(h.stdout, info.Endpoint, info.StateDir, info.Socket, info.OperatorSession, info.Nodes)
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

	cmd := exec.Command(exe, "--state-dir", h.stateDir, "--tmux-socket", h.socket, "up",
		"--max-nodes", strconv.Itoa(h.upOpts.MaxNodes), "--idle-after", h.upOpts.IdleAfter.String())
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
			fmt.Fprintf(h.stderr, "%s: up --detach: termsprawl exited during startup (%v); its log (%s):\n%s", humanName, waitErr, logPath, logTail(logPath, logStart))
		default:
			fmt.Fprintf(h.stderr, "%s: up --detach: termsprawl (pid %d) did not serve within %s; see %s\n", humanName, pid, detachStartTimeout, logPath)
		}
		return ExitNo
	}
	printServing(h.stdout, ep, h.stateDir, h.socket, tools.OperatorSessionPath(h.stateDir), -1)
	fmt.Fprintf(h.stdout, "log:                 %s\n", logPath)
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
// (bounded) until it is gone.
func (h *human) down() int {
	li, err := readLock(h.stateDir)
	if err != nil {
		fmt.Fprintf(h.stderr, "termsprawl is not running (state dir %s: %v)\n", h.stateDir, shortErr(err))
		return ExitNotRunning
	}
	if !pidAlive(li.PID) {
		fmt.Fprintf(h.stderr, "termsprawl is not running (server.lock names pid %d, which is gone)\n", li.PID)
		return ExitNotRunning
	}
	if !looksLikeTermsprawl(h.stateDir, li.PID) {
		fmt.Fprintf(h.stderr, "termsprawl is not running: server.lock names pid %d, which is not termsprawl (stale lock); not signalling it\n", li.PID)
		return ExitNotRunning
	}
	if err := syscall.Kill(li.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(h.stderr, "termsprawl is not running (pid %d is gone)\n", li.PID)
			return ExitNotRunning
		}
		fmt.Fprintf(h.stderr, "%s: down: signal pid %d: %v\n", humanName, li.PID, err)
		return ExitNo
	}
	// There is no portable event for "an unrelated process exited": poll,
	// bounded.
	deadline := time.Now().Add(downTimeout)
	t := time.NewTicker(downPollInterval)
	defer t.Stop()
	for pidAlive(li.PID) {
		if time.Now().After(deadline) {
			fmt.Fprintf(h.stderr, "%s: down: termsprawl (pid %d) did not stop within %s; kill -9 %d stops it (tmux sessions keep running)\n", humanName, li.PID, downTimeout, li.PID)
			return ExitNo
		}
		select {
		case <-h.ctx.Done():
			return ExitNo
		case <-t.C:
		}
	}
	socket := h.socket
	if s, err := tools.ReadSession(tools.OperatorSessionPath(h.stateDir)); err == nil && s.Socket != "" {
		socket = s.Socket // the socket that orchestrator ran on
	}
	fmt.Fprintf(h.stdout, "termsprawl stopped (pid %d); tmux sessions keep running (tmux -L %s ls)\n", li.PID, socket)
	return ExitOK
}

// shortErr drops the path noise of a missing file.
func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "no server.lock"
	}
	return err.Error()
}
