package tools

import "context"

// MarkAuthenticated tells the connection limiter (ListenLoopback) that the
// request in ctx passed authentication, so its connection keeps its slot
// and its normal timeouts. Handlers other than NewHandler's (the tool
// server's /mcp) call it once they accepted the bearer token.
func MarkAuthenticated(ctx context.Context) { markAuthenticated(ctx) }
