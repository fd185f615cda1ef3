package toolserver

import (
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// The per-token rate limit of /mcp (CONTRACT §15): a token bucket per
// authenticated identity, consulted only after the bearer was accepted,
// so requests with invalid credentials (refused with 401 before) cannot
// drain a real caller's budget. Each element of a JSON-RPC batch counts
// as one request.
const (
	mcpRatePerSecond = 50
	mcpRateBurst     = 200
)

type rateLimiter = tools.RateLimiter

func newRateLimiter(now func() time.Time, perSecond, burst int) *rateLimiter {
	return tools.NewRateLimiter(now, perSecond, burst)
}
