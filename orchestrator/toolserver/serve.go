package toolserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/monitor"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// ServeInfo is what Serve reports once it listens.
type ServeInfo struct {
	Endpoint        tools.Endpoint
	StateDir        string
	Socket          string
	OperatorSession string
	Nodes           int
	Hosts           []orchestrator.HostStatus // the machines driven over ssh
	MonitorURL      string                    // the read-only web monitor (CONTRACT §14)
	// Lost are the nodes still lost; Restored and RestoreErrors what
	// up --restore did (CONTRACT §25).
	Lost          []string
	Restored      []tools.RestoreResult
	RestoreErrors []error
}

// LockError means another live orchestrator owns the state dir.
type LockError struct {
	PID  int
	Path string
}

func (e *LockError) Error() string {
	return fmt.Sprintf("another termsprawl (pid %d) is running on this state dir (%s): stop it with `termsprawl down`", e.PID, e.Path)
}

// stateLock is the one-orchestrator-per-state-dir lock: an flock on a
// companion file (released by the kernel if the process dies, so a stale
// lock is taken over) plus server.lock, written atomically, that says who
// holds it.
type stateLock struct {
	f    *os.File
	path string
	id   string
}

func acquireLock(stateDir, instanceID string) (*stateLock, error) {
	path := tools.LockPath(stateDir)
	f, err := os.OpenFile(filepath.Join(stateDir, ".server.lock.flock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		li, _ := tools.ReadLock(stateDir)
		return nil, &LockError{PID: li.PID, Path: path}
	}
	if err := tools.WriteJSONAtomic(path, tools.LockInfo{PID: os.Getpid(), InstanceID: instanceID}); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &stateLock{f: f, path: path, id: instanceID}, nil
}

func (l *stateLock) release() {
	if li, err := tools.ReadLock(filepath.Dir(l.path)); err == nil && li.InstanceID == l.id {
		os.Remove(l.path)
	}
	// Unlock before the close: a child being forked at this moment holds
	// a copy of the descriptor until its exec, and the lock would live
	// on with that copy (a restart in the same process, as the tests do,
	// found it still held).
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

func newInstanceID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ensureOperatorSession keeps sessions/operator.json (its token survives
// restarts) or writes a new one.
func ensureOperatorSession(stateDir, socket string) (tools.Session, error) {
	path := tools.OperatorSessionPath(stateDir)
	if s, err := tools.ReadSession(path); err == nil && s.Node == tools.OperatorNode && s.Role == tools.RoleOperator {
		if s.Socket != socket {
			s.Socket = socket // the token stays; the socket is this run's
			if err := tools.WriteSession(path, s); err != nil {
				return tools.Session{}, fmt.Errorf("update operator session: %w", err)
			}
		}
		return s, nil
	}
	tok, err := tools.NewToken()
	if err != nil {
		return tools.Session{}, err
	}
	s := tools.Session{Node: tools.OperatorNode, Token: tok, Role: tools.RoleOperator, Socket: socket}
	if err := tools.WriteSession(path, s); err != nil {
		return tools.Session{}, fmt.Errorf("write operator session: %w", err)
	}
	return s, nil
}

// Serve runs the orchestrator: it takes the state dir's lock, starts or
// adopts the tmux server and its nodes, writes the operator session and
// endpoint.json, calls ready once listening and serves POST /call until
// ctx ends. Then it stops serving, removes endpoint.json if it is still
// its own and releases the lock. tmux sessions keep running.
func Serve(ctx context.Context, cfg orchestrator.Config, ready func(ServeInfo)) error {
	return serve(ctx, cfg, ready, nil)
}

// serve is Serve with the package tests' hooks (nil outside tests).
func serve(ctx context.Context, cfg orchestrator.Config, ready func(ServeInfo), h *hooks) error {
	if err := tools.EnsureStateDir(cfg.StateDir); err != nil {
		return err
	}
	instance := newInstanceID()
	lock, err := acquireLock(cfg.StateDir, instance)
	if err != nil {
		return err
	}
	defer lock.release()
	if cfg.Settings == nil {
		settings, err := config.Open(cfg.StateDir, ConfigChecks()...)
		if err != nil {
			return &ConfigError{Err: err}
		}
		cfg.Settings = settings
	}
	if cfg.Socket == "" {
		cfg.Socket = tools.DefaultSocket
	}
	op, err := ensureOperatorSession(cfg.StateDir, cfg.Socket)
	if err != nil {
		return err
	}
	o, err := orchestrator.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer o.Close()
	api, err := New(o, cfg, instance, op)
	if err != nil {
		return err
	}
	defer api.Close()
	if err := cfg.Settings.Watch(api.Context(), func(err error) {
		api.log.Warn("config.toml was not reloaded: the settings in force stay until it is fixed", "err", err)
		// The human who just saved the file hears of it where they are
		// (the first problem; termsprawl config lists them all). Within
		// the watcher's goroutine, bounded.
		first, _, _ := strings.Cut(err.Error(), "\n")
		ctx, cancel := context.WithTimeout(api.Context(), notifyTimeout)
		defer cancel()
		_, _ = o.NotifyHumans(ctx, "termsprawl: config.toml not reloaded, the settings in force stay: "+first+" (termsprawl config lists every problem)")
	}); err != nil {
		api.log.Warn("config.toml is not watched: changes count at the next `termsprawl up`", "err", err)
	}
	if h != nil {
		api.hooks = h
		if h.engine != nil {
			h.engine(o)
		}
	}
	if err := api.startUsage(api.Context()); err != nil {
		return err
	}
	mon, err := monitor.Load(cfg.StateDir)
	if err != nil {
		return err
	}
	// The port of the last run when free: an open monitor page reconnects.
	ln, err := tools.ListenLoopbackOn(mon.Port)
	if err != nil {
		ln, err = tools.ListenLoopback()
	}
	if err != nil {
		return err
	}
	hostPort := ln.Addr().(*net.TCPAddr).AddrPort().String()
	if err := monitor.SavePort(cfg.StateDir, mon, ln.Addr().(*net.TCPAddr).Port); err != nil {
		api.log.Warn("the monitor's port is not kept for the next run", "err", err)
	}
	page, handler, err := api.mountMonitor(mon, func() string { return hostPort }, tools.NewHandler(api, func() string { return hostPort }))
	if err != nil {
		return err
	}
	defer page.Close()
	srv := tools.NewHTTPServer(api.withMCP(handler, func() string { return hostPort }, MCPOptions{AllowOrigins: cfg.MCPAllowOrigins}))
	srv.BaseContext = func(net.Listener) context.Context { return api.Context() }
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	ep := tools.Endpoint{URL: tools.EndpointURL(hostPort), InstanceID: instance, PID: os.Getpid(), Version: cfg.Version}
	epPath := tools.EndpointPath(cfg.StateDir)
	if err := tools.WriteEndpoint(epPath, ep); err != nil {
		srv.Close()
		return fmt.Errorf("write endpoint: %w", err)
	}
	defer tools.RemoveEndpointIfOwned(epPath, instance)
	o.SetEndpoint(ep) // hosts: the reverse forward and their endpoint.json
	var restored []tools.RestoreResult
	var restoreErrs []error
	if cfg.RestoreLost {
		// up --restore (CONTRACT §25): served already, so restored agents'
		// hooks reach us.
		restored, restoreErrs = api.RestoreLost(ctx)
		for _, err := range restoreErrs {
			api.log.Warn("up --restore", "err", err)
		}
	}
	nodes := len(o.Nodes())
	api.log.Info("serving", "url", ep.URL, "state_dir", cfg.StateDir, "socket", o.Socket(), "nodes", nodes)
	if ready != nil {
		ready(ServeInfo{Endpoint: ep, StateDir: cfg.StateDir, Socket: o.Socket(),
			OperatorSession: tools.OperatorSessionPath(cfg.StateDir), Nodes: nodes, Hosts: o.Hosts(), MonitorURL: page.URL(),
			Lost: o.LostIDs(), Restored: restored, RestoreErrors: restoreErrs})
	}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	// Cancel waits in flight and end the monitor's streams so shutdown is
	// not held up by them.
	api.Close()
	page.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	api.log.Info("stopped; tmux sessions keep running")
	return nil
}

// ConfigChecks are the rooms' checks of config.toml's values beyond
// their types (a policy rule's syntax, a key name), run at `up` and at
// every reload.
func ConfigChecks() []config.Check {
	return []config.Check{policy.CheckConfig}
}

// ConfigError is a config.toml that `up` refused: it names the lines and
// the fixes, and says how to go on.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config.toml refused:\n%v\nfix the lines above and run `termsprawl up` again (`termsprawl config` shows the settings)", e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }
