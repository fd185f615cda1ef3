package tools

import (
	"bytes"
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limits of the tool server (ListenLoopback with NewHTTPServer).
const (
	// MaxConnections caps the tool server's open connections. When a new
	// connection arrives at the cap, the oldest connection that has not
	// carried an authenticated request (new, half-sent or idle) is closed
	// to make room, so a flood of idle local connections cannot keep a
	// real call out; when every open connection is authenticated the
	// oldest idle one is closed, and when none is idle the new connection
	// is refused.
	MaxConnections = 512
	// UnauthenticatedIdleTimeout caps every read deadline of a connection
	// that has not carried an authenticated request (the handler also
	// closes such a connection after its reply). It is not below the
	// server's ReadTimeout, so it never cuts a request short.
	UnauthenticatedIdleTimeout = 30 * time.Second
)

// connLimitListener is the listener ListenLoopback returns: it enforces
// MaxConnections and wraps every connection in a *serverConn.
type connLimitListener struct {
	net.Listener
	max        int
	unauthIdle time.Duration

	mu    sync.Mutex // guards conns and every serverConn.elem
	conns list.List  // *serverConn, oldest first
}

func newConnLimitListener(l net.Listener, max int) *connLimitListener {
	return &connLimitListener{Listener: l, max: max, unauthIdle: UnauthenticatedIdleTimeout}
}

// Accept returns the next connection, closing another one first when the
// cap is reached (see MaxConnections).
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		sc := &serverConn{Conn: c, l: l}
		l.mu.Lock()
		var victim *serverConn
		if l.conns.Len() >= l.max {
			victim = l.victimLocked()
			if victim == nil {
				l.mu.Unlock()
				_ = c.Close() // every slot carries an authenticated request in flight
				continue
			}
			l.conns.Remove(victim.elem)
			victim.elem = nil
		}
		sc.elem = l.conns.PushBack(sc)
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
		}
		return sc, nil
	}
}

// victimLocked picks the connection to close at the cap: the oldest one
// not authenticated, else the oldest idle one, else nil.
func (l *connLimitListener) victimLocked() *serverConn {
	var idle *serverConn
	for e := l.conns.Front(); e != nil; e = e.Next() {
		sc := e.Value.(*serverConn)
		if !sc.authenticated.Load() {
			return sc
		}
		if idle == nil && sc.idle.Load() {
			idle = sc
		}
	}
	return idle
}

// count returns the number of open connections.
func (l *connLimitListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns.Len()
}

func (l *connLimitListener) remove(sc *serverConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sc.elem != nil {
		l.conns.Remove(sc.elem)
		sc.elem = nil
	}
}

// serverConn is one accepted connection of a connLimitListener. It knows
// whether it carried an authenticated request (the handler tells it,
// through the request context that NewHTTPServer's ConnContext sets up),
// keeps short read deadlines until then, and rewrites the plain-text error
// replies net/http writes on its own into the JSON envelope.
type serverConn struct {
	net.Conn
	l    *connLimitListener
	elem *list.Element // guarded by l.mu; nil once removed

	authenticated atomic.Bool // a request on it passed Authenticate
	idle          atomic.Bool // http.StateIdle (ConnState)
	// served: NewHTTPServer's ConnContext saw it, so the handler can mark
	// it authenticated; only then are its deadlines capped.
	served atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Close closes the connection and frees its slot; it may be called more
// than once.
func (c *serverConn) Close() error {
	c.closeOnce.Do(func() {
		c.l.remove(c)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// CloseWrite lets net/http half-close after a 431 so the client reads it.
func (c *serverConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Write passes p through, except the fixed plain-text error replies that
// net/http writes before any handler ran: those go out as the JSON
// envelope with the same status (see jsonFixedReply).
func (c *serverConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("HTTP/1.")) {
		if q, ok := jsonFixedReply(p); ok {
			if _, err := c.Conn.Write(q); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// SetReadDeadline caps the deadline while the connection is not
// authenticated (UnauthenticatedIdleTimeout), when served by
// NewHTTPServer.
func (c *serverConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}

// SetDeadline caps the deadline while the connection is not
// authenticated.
func (c *serverConn) SetDeadline(t time.Time) error {
	return c.Conn.SetDeadline(c.clamp(t))
}

func (c *serverConn) clamp(t time.Time) time.Time {
	if !c.served.Load() || c.authenticated.Load() {
		return t
	}
	limit := time.Now().Add(c.l.unauthIdle)
	if t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// serverConnKey carries the *serverConn in a request's context.
type serverConnKey struct{}

// connContext is NewHTTPServer's ConnContext.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*serverConn); ok {
		sc.served.Store(true)
		return context.WithValue(ctx, serverConnKey{}, sc)
	}
	return ctx
}

// connState is NewHTTPServer's ConnState: it tracks idle connections.
func connState(c net.Conn, s http.ConnState) {
	if sc, ok := c.(*serverConn); ok {
		sc.idle.Store(s == http.StateIdle)
	}
}

// markAuthenticated records that the connection of ctx's request carried an
// authenticated request: it keeps its slot and its normal timeouts.
func markAuthenticated(ctx context.Context) {
	if sc, ok := ctx.Value(serverConnKey{}).(*serverConn); ok {
		sc.authenticated.Store(true)
	}
}
