package tools

import (
	"fmt"
	"sync"
	"time"
)

// Per-token limits of the tool server (POST /call, and /mcp which shares
// them): one agent cannot take the connections every caller shares, and
// the operator (the human's CLI) is always served.
//
//   - An agent token has at most MaxCallsPerToken requests in flight at
//     once (/call and /mcp together: a long terminal_wait_for or an MCP
//     event stream holds one); agent tokens together at most
//     MaxConnections − OperatorReserve. The operator's requests are not
//     counted: with agents held to that, at least OperatorReserve
//     connection slots are always idle, unauthenticated or the
//     operator's, and the listener makes room among the first two.
//   - An agent token makes at most CallRatePerSecond calls per second on
//     /call (bursts of CallRateBurst); /mcp has its own (the MCP door).
//
// A request over a limit is refused before it runs, kind rejected
// (retryable, details.quota "calls" or "rate"), HTTP 429 with
// Retry-After, and its connection is closed so its slot frees at once.
const (
	MaxCallsPerToken  = MaxConnections / 8 // 64
	OperatorReserve   = MaxConnections / 8 // 64
	CallRatePerSecond = 500
	CallRateBurst     = 1000
)

// CallSlots counts the requests in flight per token and takes /call's
// rate budget. Its zero value is not usable; see NewCallSlots.
type CallSlots struct {
	perToken, agents int
	rate             *RateLimiter

	mu       sync.Mutex // guards byToken, inFlight
	byToken  map[string]int
	inFlight int // agents' requests in flight
}

// NewCallSlots sizes the limits for a listener of maxConns connections
// (MaxConnections on ListenLoopback's).
func NewCallSlots(maxConns int) *CallSlots {
	return &CallSlots{perToken: max(1, maxConns/8), agents: max(1, maxConns-maxConns/8),
		rate: NewRateLimiter(time.Now, CallRatePerSecond, CallRateBurst), byToken: map[string]int{}}
}

func slotKey(id Identity) string { return id.Node + "\x00" + id.Incarnation }

// Acquire takes a slot for a request of id; the caller must call release
// when the request ends. The operator always gets one.
func (s *CallSlots) Acquire(id Identity) (release func(), err *Error) {
	if id.Role == RoleOperator {
		return func() {}, nil
	}
	key := slotKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch n := s.byToken[key]; {
	case n >= s.perToken:
		return nil, limitErr("calls", s.perToken, "node %s has %d requests in flight, the most one token may have at once (%d): wait for one to end (long waits hold a request each)", id.Node, n, s.perToken)
	case s.inFlight >= s.agents:
		return nil, limitErr("calls", s.agents, "agents have %d requests in flight together, the most termsprawl serves at once besides the operator's (%d): retry shortly", s.inFlight, s.agents)
	}
	s.byToken[key]++
	s.inFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inFlight--
			if s.byToken[key]--; s.byToken[key] <= 0 {
				delete(s.byToken, key)
			}
		})
	}, nil
}

// InFlight is the number of agent requests in flight of id's token.
func (s *CallSlots) InFlight(id Identity) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byToken[slotKey(id)]
}

// AllowCall takes one /call from id's rate budget (the operator's is
// unlimited).
func (s *CallSlots) AllowCall(id Identity) (time.Duration, *Error) {
	if id.Role == RoleOperator {
		return 0, nil
	}
	ok, wait := s.rate.Allow(slotKey(id))
	if ok {
		return 0, nil
	}
	return wait, limitErr("rate", CallRatePerSecond, "rate limit: at most %d calls per second per token on /call (bursts of %d); retry after %s", CallRatePerSecond, CallRateBurst, wait.Round(time.Millisecond))
}

// Prune forgets the rate state of tokens that have not called lately.
func (s *CallSlots) Prune() { s.rate.Prune() }

func limitErr(quota string, limit int, format string, a ...any) *Error {
	e := Errorf(KindRejected, "%s", fmt.Sprintf(format, a...)).WithDetails("quota", quota).WithDetails("limit", limit)
	e.Retryable = true
	return e
}

// RateLimiter is a token bucket per key: rate tokens a second, up to
// burst. Consult it only after authentication, so that requests with
// invalid credentials cannot drain a real caller's budget.
type RateLimiter struct {
	now   func() time.Time
	rate  float64 // tokens per second
	burst float64

	mu      sync.Mutex // guards buckets
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewRateLimiter returns a limiter of perSecond with bursts of burst.
func NewRateLimiter(now func() time.Time, perSecond, burst int) *RateLimiter {
	return &RateLimiter{now: now, rate: float64(perSecond), burst: float64(burst), buckets: map[string]*bucket{}}
}

// Allow takes one request from key's bucket; when it is empty it returns
// false and how long until the next request would be allowed.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// Prune drops the buckets that have refilled completely: they hold no
// state a fresh bucket would not (so the map does not grow with every
// node that ever called).
func (l *RateLimiter) Prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
