package toolserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// MCP sessions over HTTP (CONTRACT §15): Mcp-Session-Id is a routing id,
// never a credential. Each session belongs to the node incarnation whose
// token opened it; a request that names a session must carry that same
// identity's bearer. At most MaxMCPSessions per token; a session idle for
// MCPIdleTimeout (no request, none in flight) is torn down.
const (
	MaxMCPSessions = 16
	MCPIdleTimeout = 10 * time.Minute
)

// errNoSession: the id is unknown, expired, ended, or another caller's.
var errNoSession = errors.New("no such MCP session")

// mcpSession is one open session.
type mcpSession struct {
	owner    string // identity incarnation
	node     string
	created  time.Time
	lastUsed time.Time
	inFlight int // requests being served (a GET stream counts while open)
}

// mcpSessions is the session table of /mcp.
type mcpSessions struct {
	log *slog.Logger
	now func() time.Time // the clock (tests move it)
	ttl time.Duration

	mu       sync.Mutex // guards byID and reserved
	byID     map[string]*mcpSession
	reserved map[string]int // owner → initialize requests admitted, not yet done
}

func newMCPSessions(log *slog.Logger, now func() time.Time, ttl time.Duration) *mcpSessions {
	return &mcpSessions{log: log, now: now, ttl: ttl, byID: map[string]*mcpSession{}, reserved: map[string]int{}}
}

// countLocked is the owner's open sessions plus admitted initializes.
func (t *mcpSessions) countLocked(owner string) int {
	n := t.reserved[owner]
	for _, s := range t.byID {
		if s.owner == owner {
			n++
		}
	}
	return n
}

// admit reserves room for one new session of owner; false when the owner
// has MaxMCPSessions already. release must follow once the initialize
// was served.
func (t *mcpSessions) admit(owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.countLocked(owner) >= MaxMCPSessions {
		return false
	}
	t.reserved[owner]++
	return true
}

func (t *mcpSessions) release(owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reserved[owner] <= 1 {
		delete(t.reserved, owner)
	} else {
		t.reserved[owner]--
	}
}

// begin marks a request on session id by owner as in flight; false when
// the session does not exist for owner. end must follow.
func (t *mcpSessions) begin(id, owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byID[id]
	if !ok || s.owner != owner {
		return false
	}
	s.inFlight++
	s.lastUsed = t.now()
	return true
}

func (t *mcpSessions) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.byID[id]; ok {
		s.inFlight--
		s.lastUsed = t.now()
	}
}

// open reports the number of open sessions of owner.
func (t *mcpSessions) open(owner string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.byID {
		if s.owner == owner {
			n++
		}
	}
	return n
}

// allIdle reports whether none of the sessions has a request in flight.
func (t *mcpSessions) allIdle(ids []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if s, ok := t.byID[id]; ok && s.inFlight > 0 {
			return false
		}
	}
	return true
}

// sweep tears down sessions idle for ttl and returns how many.
func (t *mcpSessions) sweep() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	n := 0
	for id, s := range t.byID {
		if s.inFlight == 0 && now.Sub(s.lastUsed) >= t.ttl {
			delete(t.byID, id)
			n++
			t.log.Info("mcp session expired", "session", id, "node", s.node, "idle", now.Sub(s.lastUsed).Round(time.Second), "age", now.Sub(s.created).Round(time.Second))
		}
	}
	return n
}

// manager is the mcp-go SessionIdManager of one caller (owner ""
// manages every session: mcp-go's own housekeeping).
type manager struct {
	t           *mcpSessions
	owner, node string
}

// forRequest returns the session manager of the identity in r's context.
func (t *mcpSessions) forRequest(r *http.Request) manager {
	if r == nil {
		return manager{t: t}
	}
	id, _ := identityFrom(r.Context())
	return manager{t: t, owner: id.Incarnation, node: id.Node}
}

// Generate mints the id of a session initialize opens (admit came first).
func (m manager) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	now := m.t.now()
	m.t.byID[id] = &mcpSession{owner: m.owner, node: m.node, created: now, lastUsed: now}
	m.t.log.Info("mcp session opened", "session", id, "node", m.node)
	return id
}

// Validate accepts only an open session of this caller.
func (m manager) Validate(id string) (bool, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	s, ok := m.t.byID[id]
	if !ok || (m.owner != "" && s.owner != m.owner) {
		return false, errNoSession
	}
	return false, nil
}

// Terminate ends a session (DELETE, or mcp-go's housekeeping).
func (m manager) Terminate(id string) (bool, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	s, ok := m.t.byID[id]
	if !ok || (m.owner != "" && s.owner != m.owner) {
		return false, nil
	}
	delete(m.t.byID, id)
	m.t.log.Info("mcp session ended", "session", id, "node", s.node)
	return false, nil
}
