package toolserver

import (
	"sync"
	"time"
)

// The per-token rate limit of /mcp (CONTRACT §15): a token bucket per
// authenticated identity, consulted only after the bearer was accepted,
// so requests with invalid credentials (refused with 401 before) cannot
// drain a real caller's budget.
const (
	mcpRatePerSecond = 50
	mcpRateBurst     = 200
)

type rateLimiter struct {
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

func newRateLimiter(now func() time.Time, perSecond, burst int) *rateLimiter {
	return &rateLimiter{now: now, rate: float64(perSecond), burst: float64(burst), buckets: map[string]*bucket{}}
}

// allow takes one request from key's bucket; when it is empty it returns
// false and how long until the next request would be allowed.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
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

// prune drops the buckets that have refilled completely: they hold no
// state a fresh bucket would not (so the map does not grow with every
// node that ever called).
func (l *rateLimiter) prune() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
