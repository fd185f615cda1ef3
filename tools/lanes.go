package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"sync"
)

// Heavy calls and their lanes (CONTRACT §31: the operator is always
// served). A heavy call — a screenshot, a trace opened or replayed, a
// scrollback, a diff or a search over many nodes — costs tens to
// thousands of times a terminal_list in CPU and memory; one agent making
// 64 of them at once had two cores drawing PNGs and pushed an operator's
// terminal_list to 2.1 s. So heavy calls run in lanes:
//
//   - an agent token runs at most HeavyPerAgent heavy calls at once; its
//     others wait in its own lane (FIFO-ish, bounded by MaxCallsPerToken
//     requests in flight), never in another agent's;
//   - agents together run at most one heavy call a core, less one core
//     kept for everything else (at least one);
//   - the operator has a lane of its own (HeavyOperator at once), which
//     no agent's call ever waits in or holds.
//
// Light calls (everything else) take no lane.
const (
	HeavyPerAgent = 1
	HeavyOperator = 4
)

// heavyOperations are the operations that are always heavy; a call with
// screenshot: true (terminal_snapshot, trace_frame_at) is heavy too.
// Fleet-wide searches belong here (fleet_search, grep).
var heavyOperations = map[string]bool{
	"trace_open": true, "trace_frame_at": true, "trace_diff": true,
	"terminal_scrollback": true, "worktree_diff": true,
	"fleet_search": true, "grep": true,
}

// IsHeavy says whether a call of op with args runs in a heavy lane.
func IsHeavy(op string, args json.RawMessage) bool {
	if heavyOperations[op] {
		return true
	}
	if !bytes.Contains(args, []byte(`"screenshot"`)) {
		return false // the common case, without decoding the arguments
	}
	var a struct {
		Screenshot bool `json:"screenshot"`
	}
	return json.Unmarshal(args, &a) == nil && a.Screenshot
}

// Lanes holds the heavy calls in flight. Its zero value is not usable;
// see NewLanes.
type Lanes struct {
	agents   chan struct{} // a slot per agents' heavy call running, all tokens
	operator chan struct{} // the operator's lane
	perAgent int

	mu      sync.Mutex // guards byToken
	byToken map[string]*lane
}

type lane struct {
	slots chan struct{}
	users int // calls holding or waiting for a slot
}

// NewLanes sizes the lanes for this machine: agents together at most
// GOMAXPROCS−1 heavy calls at once (at least one).
func NewLanes() *Lanes {
	return NewLanesSized(max(1, runtime.GOMAXPROCS(0)-1), HeavyPerAgent, HeavyOperator)
}

// NewLanesSized is NewLanes with explicit sizes (tests).
func NewLanesSized(agents, perAgent, operator int) *Lanes {
	return &Lanes{agents: make(chan struct{}, max(agents, 1)), operator: make(chan struct{}, max(operator, 1)),
		perAgent: max(perAgent, 1), byToken: map[string]*lane{}}
}

// Enter waits for a heavy slot for a call of id: the operator's in its
// own lane, an agent's in its token's lane and then among the agents'.
// It returns ctx's error if the call ends first; release must be called
// once the call is done.
func (l *Lanes) Enter(ctx context.Context, id Identity) (release func(), err error) {
	if id.Role == RoleOperator {
		select {
		case l.operator <- struct{}{}:
			return sync.OnceFunc(func() { <-l.operator }), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	key := slotKey(id)
	l.mu.Lock()
	ln := l.byToken[key]
	if ln == nil {
		ln = &lane{slots: make(chan struct{}, l.perAgent)}
		l.byToken[key] = ln
	}
	ln.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if ln.users--; ln.users == 0 {
			delete(l.byToken, key)
		}
		l.mu.Unlock()
	}
	select {
	case ln.slots <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	select {
	case l.agents <- struct{}{}:
	case <-ctx.Done():
		<-ln.slots
		leave()
		return nil, ctx.Err()
	}
	return sync.OnceFunc(func() {
		<-l.agents
		<-ln.slots
		leave()
	}), nil
}

// Waiting is the number of calls of id's token holding or waiting for a
// heavy slot (0 for the operator).
func (l *Lanes) Waiting(id Identity) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.byToken[slotKey(id)]; ln != nil {
		return ln.users
	}
	return 0
}
