package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// OneShotTransport is an http.RoundTripper for a process that makes one
// call and exits (`termsprawlctl call`, `doctor`): it dials, writes the
// request and reads the reply on the calling goroutine, with no
// connection pool and none of http.Transport's per-connection goroutines,
// whose start-up and hand-offs cost a short-lived process milliseconds on
// a busy machine (docs/PERFORMANCE.md, "A lean termsprawlctl"). The
// request's context bounds the dial and the exchange. Only plain http.
var OneShotTransport http.RoundTripper = oneShot{}

type oneShot struct{}

func (oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("one-shot transport: scheme %q is not supported", req.URL.Scheme)
	}
	ctx := req.Context()
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", req.URL.Host)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// A cancelled context ends the exchange at once.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	req.Close = true // Connection: close; the server ends it after replying
	if err := req.Write(conn); err != nil {
		stop()
		conn.Close()
		return nil, ctxErr(ctx, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		stop()
		conn.Close()
		return nil, ctxErr(ctx, err)
	}
	resp.Body = &connBody{ReadCloser: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// ctxErr prefers the context's error when it ended the exchange.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// connBody closes the connection with the body.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
	once sync.Once
}

func (b *connBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() {
		b.stop()
		b.conn.Close()
	})
	return err
}
