package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// A host's own operations, which need no node: its table (Set), what a
// launch checks and writes there, signals, the agent's files, its
// host_list row, its removal from hosts.json and the errors as a caller
// should see them. The engine keeps what is about its nodes (adoption,
// placeholders, closes).

// Set is the engine's hosts by name, the tool server's endpoint and the
// host servers whose panes are being listed after a death.
type Set struct {
	mu       sync.Mutex // guards byName, endpoint and listing
	byName   map[string]*SSH
	endpoint *tools.Endpoint // the tool server's, once it listens (SetEndpoint)
	// listing holds the host servers whose panes are being listed after a
	// death, each with whether to list again.
	listing map[*Tmux]bool
}

// NewSet is an empty host table.
func NewSet() *Set { return &Set{byName: map[string]*SSH{}, listing: map[*Tmux]bool{}} }

// Add puts a host in the table.
func (s *Set) Add(name string, h *SSH) {
	s.mu.Lock()
	s.byName[name] = h
	s.mu.Unlock()
}

// Remove takes a host out of the table (no more adoption).
func (s *Set) Remove(name string) {
	s.mu.Lock()
	delete(s.byName, name)
	s.mu.Unlock()
}

// Get returns the host of name, or nil. A nil Set has no host.
func (s *Set) Get(name string) *SSH {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[name]
}

// Names lists the hosts, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Servers returns the tmux servers of the connected hosts.
func (s *Set) Servers() []*Tmux {
	var out []*Tmux
	for _, name := range s.Names() {
		if srv := s.Get(name).Server(); srv != nil {
			out = append(out, srv)
		}
	}
	return out
}

// Statuses reports every host's connection.
func (s *Set) Statuses() []Status {
	var out []Status
	for _, name := range s.Names() {
		out = append(out, s.Get(name).Status())
	}
	return out
}

// Endpoint is the tool server's endpoint, once SetEndpoint told it.
func (s *Set) Endpoint() *tools.Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint
}

// SetEndpoint tells the hosts where the tool server listens: each gets
// the reverse forward and its endpoint.json now and after every reconnect.
func (s *Set) SetEndpoint(ep tools.Endpoint) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.endpoint = &ep
	s.mu.Unlock()
	for _, name := range s.Names() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		s.Get(name).Publish(ctx)
		cancel()
	}
}

// StopAll stops every supervisor; idempotent.
func (s *Set) StopAll() {
	for _, name := range s.Names() {
		s.Get(name).Stop()
	}
}

// ShutdownAll ends every connection.
func (s *Set) ShutdownAll() {
	for _, name := range s.Names() {
		s.Get(name).Shutdown()
	}
}

// BeginListing claims the pane list of srv after a death: false when one
// is in flight already (it is marked to list again when it ends).
func (s *Set) BeginListing(srv *Tmux) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.listing[srv]; busy {
		s.listing[srv] = true // again, when the one in flight ends
		return false
	}
	s.listing[srv] = false
	return true
}

// EndListing ends a pane list of srv: true when another was asked for
// meanwhile (the claim is kept for it), false when the claim is dropped.
func (s *Set) EndListing(srv *Tmux) (again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	again = s.listing[srv]
	if again {
		s.listing[srv] = false
	} else {
		delete(s.listing, srv)
	}
	return again
}

// DropListing gives up a claim that never listed.
func (s *Set) DropListing(srv *Tmux) {
	s.mu.Lock()
	delete(s.listing, srv)
	s.mu.Unlock()
}

// Unknown is the usage error of a host name that is not in the table,
// with a hint (after the known hosts) for the caller.
func (s *Set) Unknown(name, hint string) *tools.Error {
	known := strings.Join(s.Names(), ", ")
	if known == "" {
		known = "none"
	}
	return tools.Errorf(tools.KindUsage, "no host %q (known hosts: %s)%s", name, known, hint).WithDetails("host", name)
}

// RoundTripTimeout bounds host_list's round trip to one host: a slow host
// is reported without one, and never delays the others (asked at once).
const RoundTripTimeout = 2 * time.Second

// Info is the host's host_list row with nodes, its live node count, and a
// round trip measured now when it is connected.
func (h *SSH) Info(ctx context.Context, nodes int) tools.HostInfo {
	st := h.Status()
	info := tools.HostInfo{Name: h.Spec().Name, Dest: st.Dest, State: st.Shown(), Nodes: nodes, Since: st.Since.UTC(),
		Socket: h.Spec().RemoteSocket(), Error: st.Error, Reconnects: st.Reconnects, Tmux: st.Tmux, Ctl: st.Ctl}
	if st.State == StateConnected {
		info.Error = ""
		rctx, cancel := context.WithTimeout(ctx, RoundTripTimeout)
		defer cancel()
		if d, err := h.RoundTrip(rctx); err == nil {
			ms := float64(d.Microseconds()) / 1000
			info.RoundTripMS = &ms
		}
	}
	return info
}

// RemoveFromFile drops host name from hosts.json (nothing to do when the
// file does not name it: a host given only by --host this run).
func RemoveFromFile(stateDir, name string) error {
	specs, err := tools.ReadHosts(stateDir)
	if err != nil {
		return err
	}
	kept := specs[:0]
	found := false
	for _, s := range specs {
		if s.Name == name {
			found = true
			continue
		}
		kept = append(kept, s)
	}
	if !found {
		return nil
	}
	if err := tools.WriteHosts(stateDir, kept); err != nil {
		return fmt.Errorf("save %s: %w", tools.HostsFile, err)
	}
	return nil
}

// Err is err as the caller should see it: unavailable (retryable) when
// the host's connection is what failed.
func (h *SSH) Err(err error) error {
	if e := h.sessionRefused(err); e != nil {
		return e
	}
	if errors.Is(err, tmuxctl.ErrClosed) || !h.Alive() {
		h.Kick()
		e := tools.Errorf(tools.KindUnavailable, "host %s is unreachable: %w", h.Spec().Name, err).WithDetails("host", h.Spec().Name)
		e.Retryable = true
		return e
	}
	return err
}

// CheckProgram refuses, before anything exists, a cwd or program the host
// does not have (one round trip).
func (h *SSH) CheckProgram(ctx context.Context, cwd, program string) error {
	q := tmuxctl.ShellQuote
	host := h.Spec().Name
	script := "cd -- " + q(cwd) + " 2>/dev/null || exit 3\n" +
		"p=" + q(program) + "\ncase $p in */*) [ -f \"$p\" ] && [ -x \"$p\" ] || exit 4;; *) command -v -- \"$p\" >/dev/null 2>&1 || exit 4;; esac"
	_, err := h.Exec(ctx, script, nil)
	switch code := ExitCode(err); {
	case err == nil:
		return nil
	case code == 3:
		return tools.Errorf(tools.KindUsage, "cwd %q does not exist on host %s or is not a directory", cwd, host)
	case code == 4:
		return tools.Errorf(tools.KindUsage, "program %q is not on host %s's PATH or not executable there: install it on %s, or give its absolute path as command[0]", program, host, host).
			WithDetails("program", program)
	default:
		if e := h.sessionRefused(err); e != nil {
			return e
		}
		return tools.Errorf(tools.KindUnavailable, "host %s: check the program: %w", host, err)
	}
}

// sessionRefused is the error to answer when the host's sshd refused one
// more session on our connection (its MaxSessions), else nil.
func (h *SSH) sessionRefused(err error) error {
	if err == nil || !strings.Contains(err.Error(), "open refused") {
		return nil
	}
	return tools.Errorf(tools.KindRejected, "host %s refused one more ssh session: its sshd allows MaxSessions sessions on one connection (default 10); termsprawl keeps 3 open (its admin, waiter and mirror clients, whatever the node count) and opens up to 5 more at once for short commands: raise MaxSessions to at least 4 in %s's sshd_config", h.Spec().Name, h.Spec().Name).
		WithDetails("host", h.Spec().Name).WithDetails("reason", "max-sessions")
}

// ExitCode is the exit status in err's chain, or -1.
func ExitCode(err error) int {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// SessionPath is a node's session file (its token) on a host with
// remote dir rdir.
func SessionPath(rdir, id string) string { return rdir + "/sessions/" + id + ".json" }

// WriteSession copies the node's session file (its token) from the state
// dir to the host.
func (h *SSH) WriteSession(ctx context.Context, stateDir, id string) error {
	s, err := tools.ReadSession(tools.SessionPath(stateDir, id))
	if err != nil {
		return err
	}
	b, err := jsonBytes(s)
	if err != nil {
		return err
	}
	_, rdir := h.Probe()
	_, err = h.Exec(ctx, WriteFileScript(rdir, "sessions/"+id+".json"), b)
	return err
}

// RemoveSession removes a node's session file on the host.
func (h *SSH) RemoveSession(ctx context.Context, id string) error {
	_, rdir := h.Probe()
	_, err := h.Exec(ctx, "rm -f "+tmuxctl.ShellQuote(SessionPath(rdir, id)), nil)
	return err
}

func jsonBytes(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// SignalGroup sends sig to pid's process group on the host (to pid alone
// when it leads none): rejected when kill refused, else h.Err's answer.
func (h *SSH) SignalGroup(ctx context.Context, pid int, name string, sig syscall.Signal) error {
	s, p := strconv.Itoa(int(sig)), strconv.Itoa(pid)
	if _, err := h.Exec(ctx, "kill -"+s+" -- -"+p+" 2>/dev/null || kill -"+s+" "+p, nil); err != nil {
		if ExitCode(err) > 0 {
			return tools.Errorf(tools.KindRejected, "signal %s to pid %d on host %s: %w", name, pid, h.Spec().Name, err)
		}
		return h.Err(err)
	}
	return nil
}

// AgentConfig writes an agent's MCP registration on the host and returns
// the remote termsprawlctl and the registration's path there. Empty ctl:
// the host has no termsprawlctl.
func (h *SSH) AgentConfig(ctx context.Context) (ctl, mcpConfig string, err error) {
	p, rdir := h.Probe()
	ctl = p.Ctl
	if ctl == "" {
		return "", "", nil
	}
	reg := map[string]any{"mcpServers": map[string]any{"termsprawl": map[string]any{"command": ctl, "args": []string{"mcp"}}}}
	b, err := jsonBytes(reg)
	if err != nil {
		return "", "", err
	}
	if _, err := h.Exec(ctx, WriteFileScript(rdir, "agent-tools/mcp.json"), b); err != nil {
		return "", "", tools.Errorf(tools.KindUnavailable, "host %s: write the MCP registration: %w", h.Spec().Name, err)
	}
	return ctl, rdir + "/agent-tools/mcp.json", nil
}

// CtlMissing is what an agent launched on the host is told when it has no
// termsprawlctl (TERMSPRAWL_CTL_MISSING in its environment): its node runs
// and is driven, but it cannot call termsprawl. Empty when the host has
// one (or was never probed).
func (h *SSH) CtlMissing() string {
	if p, _ := h.Probe(); p.Ctl != "" || p.Tmux == "" {
		return ""
	}
	host := h.Spec().Name
	return "termsprawlctl is not installed on host " + host + " (not on its PATH, nor given with --host-ctl " + host + "=PATH): this terminal runs and is driven from termsprawl, but cannot call termsprawl itself; install termsprawlctl there to give it the tools"
}

// CheckSpecs refuses a bad host spec and a name given twice (one name per
// machine); it returns each name's destination.
func CheckSpecs(specs []tools.HostSpec) (map[string]string, error) {
	seen := map[string]string{}
	for _, spec := range specs {
		if err := tools.CheckHost(spec); err != nil {
			return nil, err
		}
		if d, ok := seen[spec.Name]; ok {
			return nil, fmt.Errorf("%w: host name %q is given twice (%s and %s): one name per machine", tools.ErrHost, spec.Name, d, spec.Dest)
		}
		seen[spec.Name] = spec.Dest
	}
	return seen, nil
}

// ConnectNow connects the host for a caller that needs it now, so the
// caller hears why not: unavailable and retryable, with the host's reason
// (the supervisor is kicked to keep trying).
func (h *SSH) ConnectNow(ctx context.Context) error {
	err := h.Connect(ctx)
	if err == nil {
		return nil
	}
	h.Kick()
	e := tools.Errorf(tools.KindUnavailable, "%w", err).WithDetails("host", h.Spec().Name)
	var he *Error
	if errors.As(err, &he) {
		e.WithDetails("reason", he.Reason)
	}
	e.Retryable = true
	return e
}
