package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// CallOptions tunes Call. The zero value is the contract's behaviour: 45 s
// timeout, no waiting, no retries.
type CallOptions struct {
	// HTTPClient is used for the request (a copy of it: redirects are
	// always refused and cookies never kept). Nil: a private client that
	// ignores proxies.
	HTTPClient *http.Client
	// Timeout caps one HTTP round trip (0: ClientTimeout).
	Timeout time.Duration
	// Wait > 0: when the orchestrator is down (endpoint.json missing or
	// invalid, connection refused), wait up to this long for a fresh
	// endpoint.json (fsnotify, no polling) and call it.
	Wait time.Duration
	// Retry > 0: repeat a call that failed with kind unavailable or
	// in_progress up to Retry times, but only a mutation that carries an
	// idempotency_key, or a read-only operation. Other calls are never
	// repeated.
	Retry int
}

// retryBaseDelay is the first pause between retries; it doubles up to
// retryMaxDelay.
var (
	retryBaseDelay = 200 * time.Millisecond
	retryMaxDelay  = 2 * time.Second
)

// errRedirect is returned by CheckRedirect: the token must never follow a
// redirect anywhere.
var errRedirect = errors.New("redirect refused")

// defaultTransport ignores proxy settings: the endpoint is always loopback.
var defaultTransport = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	MaxIdleConns:        64,
	MaxIdleConnsPerHost: 64,
	IdleConnTimeout:     30 * time.Second,
	DisableCompression:  true,
}

func httpClientFor(opts CallOptions) *http.Client {
	var c http.Client
	if opts.HTTPClient != nil {
		c = *opts.HTTPClient
	} else {
		c.Transport = defaultTransport
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	c.Jar = nil
	c.Timeout = 0 // each attempt has its own context deadline
	return &c
}

// UnavailableMessage is the contract's text for every transport failure.
func UnavailableMessage(reason string) string {
	reason = strings.TrimRight(strings.TrimSpace(reason), ".")
	return "Tool connection unavailable: " + reason + ". Check that termsprawl is running. Mutations are not automatically retried."
}

// Unavailable builds the unavailable result of CONTRACT §4 for reason.
func Unavailable(reason string, retryable bool) Result {
	return Result{OK: false, Kind: KindUnavailable, Error: UnavailableMessage(reason), Retryable: retryable,
		Details: map[string]any{"reason": reason}}
}

// attemptInfo describes a failed attempt for the wait and retry logic.
type attemptInfo struct {
	down     bool   // the orchestrator looks down: nothing was sent; waiting for a fresh endpoint may help
	instance string // instance_id of the endpoint that was tried, if any
}

// Call performs one operation for the node of sessionFile and never panics.
//
// It validates the operation and args against the table first (a usage
// result, no I/O), then on every call re-reads the session file and
// dirname(dirname(sessionFile))/endpoint.json, validates the endpoint URL
// before attaching the token, and POSTs with the bearer token, refusing
// redirects, within opts.Timeout (default 45 s). Every transport failure
// is a KindUnavailable result with the contract's text; those that mean
// no orchestrator answers (endpoint.json missing, unreadable or invalid,
// connection refused) also satisfy errors.Is(res.Err(), ErrNotRunning).
// The reply envelope is decoded whatever the HTTP status. See CallOptions
// for waiting and retries.
func Call(ctx context.Context, sessionFile string, req Request, opts CallOptions) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = ErrResult(Errorf(KindInternal, "internal error in the tool client: %v", r))
		}
	}()
	if ctx == nil {
		ctx = context.Background()
	}
	op, err := ValidateRequest(req)
	if err != nil {
		return ErrResult(err)
	}
	body, err := json.Marshal(Request{Operation: op.Name, Args: NormalizeArgs(req.Args)})
	if err != nil {
		return ErrResult(Errorf(KindUsage, "encode request: %w", err))
	}
	if len(body) > MaxBodyBytes {
		return ErrResult(Errorf(KindUsage, "%s: request is %d bytes, over the %d-byte limit; send less text per call", op.Name, len(body), MaxBodyBytes))
	}
	mayRetry := op.Annotations.ReadOnly || (op.Mutation && hasIdempotencyKey(req.Args))
	client := httpClientFor(opts)
	var deadline time.Time
	if opts.Wait > 0 {
		deadline = time.Now().Add(opts.Wait)
	}
	retries := 0
	for {
		res, info := attempt(ctx, client, sessionFile, op, body, opts)
		if res.OK {
			return res
		}
		if info.down && opts.Wait > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
			stale := info.instance
			wctx, cancel := context.WithDeadline(ctx, deadline)
			_, werr := WaitForEndpoint(wctx, EndpointPathFor(sessionFile), func(ep Endpoint) bool {
				return ep.InstanceID != stale && ValidateEndpointURL(ep.URL) == nil
			})
			cancel()
			if werr == nil {
				continue
			}
			waited := Unavailable(strings.TrimRight(res.reason(), ".")+fmt.Sprintf(" (waited %s for termsprawl to start)", opts.Wait), res.Retryable)
			waited.cause = res.cause // still not running
			return waited
		}
		if mayRetry && retries < opts.Retry && (res.Kind == KindUnavailable || res.Kind == KindInProgress) {
			delay := retryBaseDelay << retries
			if delay > retryMaxDelay || delay <= 0 {
				delay = retryMaxDelay
			}
			retries++
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return res
			case <-t.C:
			}
			continue
		}
		return res
	}
}

// reason returns the transport reason of an unavailable result.
func (r Result) reason() string {
	if s, ok := r.Details["reason"].(string); ok {
		return s
	}
	return r.Error
}

func hasIdempotencyKey(args json.RawMessage) bool { return IdempotencyKey(args) != "" }

// attempt performs one HTTP round trip.
func attempt(ctx context.Context, client *http.Client, sessionFile string, op *Operation, body []byte, opts CallOptions) (Result, attemptInfo) {
	sess, err := ReadSession(sessionFile)
	if err != nil {
		return Unavailable(err.Error(), true), attemptInfo{}
	}
	epPath := EndpointPathFor(sessionFile)
	ep, err := ReadEndpoint(epPath)
	if err != nil {
		// Missing, unreadable, not a regular file, unparsable: nobody
		// published an endpoint that could answer.
		return notRunning(Unavailable(err.Error(), true), err), attemptInfo{down: true}
	}
	info := attemptInfo{instance: ep.InstanceID}
	if err := ValidateEndpointURL(ep.URL); err != nil {
		info.down = true
		return notRunning(Unavailable(err.Error()+" (in "+epPath+")", true), err), info
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = ClientTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		info.down = true
		return notRunning(Unavailable("Invalid local endpoint: "+err.Error(), true), err), info
	}
	hreq.Header.Set("Authorization", "Bearer "+sess.Token)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "termsprawl-client")

	// Whether a failed request may be repeated without doing anything twice.
	safe := op.Annotations.ReadOnly

	resp, err := client.Do(hreq)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		switch {
		case errors.Is(err, errRedirect):
			loc := ""
			if resp != nil {
				loc = " to " + clip(resp.Header.Get("Location"), 200)
			}
			return Unavailable(fmt.Sprintf("%s answered with a redirect%s; refusing to follow it", ep.URL, loc), safe), info
		case errors.Is(err, syscall.ECONNREFUSED):
			// The endpoint's listener is gone: nothing was sent.
			info.down = true
			return notRunning(Unavailable(fmt.Sprintf("connection to %s refused", ep.URL), true), unwrapURLError(err)), info
		case ctx.Err() != nil:
			return Unavailable(fmt.Sprintf("the call to %s was canceled: %v", ep.URL, ctx.Err()), safe), info
		case actx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
			// The attempt's deadline (the caller's context is not done).
			return Unavailable(fmt.Sprintf("no reply from %s within %s", ep.URL, timeout), safe), info
		}
		return Unavailable(fmt.Sprintf("request to %s failed: %v", ep.URL, unwrapURLError(err)), safe), info
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes+1))
	if err != nil {
		if (actx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) && ctx.Err() == nil {
			return Unavailable(fmt.Sprintf("no complete reply from %s within %s", ep.URL, timeout), safe), info
		}
		return Unavailable(fmt.Sprintf("reading the reply from %s failed: %v", ep.URL, err), safe), info
	}
	if len(data) > MaxReplyBytes {
		return Unavailable(fmt.Sprintf("the reply from %s is over %d bytes", ep.URL, MaxReplyBytes), safe), info
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if ct == "" {
			ct = "no content type"
		}
		return Unavailable(fmt.Sprintf("the reply from %s is not a tool result (HTTP %d, %s)", ep.URL, resp.StatusCode, ct), safe), info
	}
	if !res.OK && !res.Kind.Valid() {
		res.Kind = KindInternal
	}
	return res, info
}

// unwrapURLError drops the `Post "URL":` prefix (the URL is in our text).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
