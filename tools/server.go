package tools

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Identity is who a token belongs to: the caller's node and role. It comes
// from the token alone, never from arguments.
type Identity struct {
	Node string
	Role string
	// Incarnation names one life of the node (its id and creation time):
	// per-node state is keyed by it, so a later node that reuses the id
	// inherits nothing. The operator's is OperatorNode.
	Incarnation string
}

// Backend is what the orchestrator implements behind NewHandler.
type Backend interface {
	// Authenticate maps a well-formed token (64 lowercase hex) to its
	// identity. Compare with TokenEqual.
	Authenticate(token string) (Identity, bool)
	// Handle runs a validated operation. args is a JSON object that passed
	// op.Validate ({} when the request had none). ctx ends when the client
	// goes away.
	Handle(ctx context.Context, id Identity, op *Operation, args json.RawMessage) Result
}

// TokenEqual compares two tokens in constant time.
func TokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// NewHandler returns the POST /call handler with every guard of CONTRACT
// §3, in this order:
//
//  1. an Origin header → 403 forbidden (no browsers);
//  2. Host other than hostPort() ("127.0.0.1:PORT") → 403 forbidden (DNS
//     rebinding), and a non-loopback peer → 403;
//  3. a path other than /call → 404 not_found; a method other than POST →
//     405 usage;
//  4. a missing or malformed bearer token → 401, a token Authenticate
//     does not know → 401 unauthorized;
//  5. a Content-Type other than application/json → 415 usage; a body over
//     MaxBodyBytes → 413 usage;
//  6. malformed JSON or unknown top-level fields → 400 usage; an unknown
//     operation or args that fail Validate → 400 usage;
//
// then Backend.Handle. Every reply is the JSON envelope with Content-Type
// application/json and status HTTPStatus(kind) (200 on success). A panic in
// the backend becomes an internal error. A reply sent before the token was
// accepted (steps 1–4) carries Connection: close, so unauthenticated
// clients cannot hold idle keep-alive connections; behind NewHTTPServer
// and ListenLoopback a connection whose request passed step 4 keeps its
// slot under MaxConnections.
//
// Between steps 4 and 5 the caller's per-token limits (CallSlots: requests
// in flight, /call's rate) refuse a request over them with 429, kind
// rejected, before it runs. A Backend with a CallSlots() *CallSlots method
// shares its slots (with /mcp); else the handler has its own.
func NewHandler(b Backend, hostPort func() string) http.Handler {
	h := &handler{backend: b, hostPort: hostPort}
	if sb, ok := b.(interface{ CallSlots() *CallSlots }); ok {
		h.slots = sb.CallSlots()
	}
	if h.slots == nil {
		h.slots = NewCallSlots(MaxConnections)
	}
	return h
}

type handler struct {
	backend  Backend
	hostPort func() string
	slots    *CallSlots
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			writeResult(w, http.StatusInternalServerError, ErrResult(Errorf(KindInternal, "internal error: %v", p)))
		}
	}()
	fail := func(status int, kind Kind, format string, a ...any) {
		writeResult(w, status, ErrResult(Errorf(kind, format, a...)))
	}
	// Until the token is accepted, every reply ends the connection.
	refuse := func(status int, kind Kind, format string, a ...any) {
		w.Header().Set("Connection", "close")
		fail(status, kind, format, a...)
	}

	if len(r.Header.Values("Origin")) > 0 {
		refuse(http.StatusForbidden, KindForbidden, "requests with an Origin header are refused: the termsprawl tool server does not serve browsers")
		return
	}
	if want := h.hostPort(); r.Host != want {
		refuse(http.StatusForbidden, KindForbidden, "Host %q is refused: the tool server only answers to %s", clip(r.Host, 100), want)
		return
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			refuse(http.StatusForbidden, KindForbidden, "requests from %s are refused: loopback only", host)
			return
		}
	}
	if r.URL.Path != "/call" {
		refuse(http.StatusNotFound, KindNotFound, "no such endpoint %q: POST /call", clip(r.URL.Path, 100))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, KindUsage, "method %s is not allowed: POST /call", clip(r.Method, 20))
		return
	}

	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl"`)
		refuse(http.StatusUnauthorized, KindUnauthorized, "missing or malformed Authorization header: send \"Authorization: Bearer <token>\" with the token of your session file")
		return
	}
	id, ok := h.backend.Authenticate(token)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl", error="invalid_token"`)
		refuse(http.StatusUnauthorized, KindUnauthorized, "unknown or revoked token: its node may have been closed; use the session file of a live node")
		return
	}
	// Over a per-token limit: refused before anything runs, and the
	// connection is not marked authenticated (its slot is freed).
	if wait, lerr := h.slots.AllowCall(id); lerr != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		writeLimited(w, lerr)
		return
	}
	release, lerr := h.slots.Acquire(id)
	if lerr != nil {
		w.Header().Set("Retry-After", "1")
		writeLimited(w, lerr)
		return
	}
	defer release()
	markAuthenticated(r.Context())

	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			fail(http.StatusUnsupportedMediaType, KindUsage, "Content-Type %q is refused: send application/json", clip(ct, 100))
			return
		}
	}
	if r.ContentLength > MaxBodyBytes {
		fail(http.StatusRequestEntityTooLarge, KindUsage, "request body of %d bytes is over the %d-byte limit; send less per call", r.ContentLength, MaxBodyBytes)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(http.StatusRequestEntityTooLarge, KindUsage, "request body is over the %d-byte limit; send less per call", MaxBodyBytes)
			return
		}
		fail(http.StatusBadRequest, KindUsage, "read request body: %v", err)
		return
	}
	req, argsDup, err := decodeRequest(data)
	if err != nil {
		writeResult(w, http.StatusBadRequest, ErrResult(err))
		return
	}
	op, err := ValidateRequest(req)
	if err == nil && argsDup != nil {
		// Validate refuses duplicate keys itself (with the operation's
		// name, as the client does); this is the safety net.
		err = Errorf(KindUsage, "%s: %w", req.Operation, argsDup)
	}
	if err != nil {
		writeResult(w, HTTPStatus(KindUsage), ErrResult(err))
		return
	}
	res := h.handle(r.Context(), id, op, op.CanonicalArgs(req.Args))
	status := http.StatusOK
	if !res.OK {
		status = HTTPStatus(res.Kind)
	}
	writeResult(w, status, res)
}

func (h *handler) handle(ctx context.Context, id Identity, op *Operation, args json.RawMessage) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = ErrResult(Errorf(KindInternal, "internal error in %s: %v", op.Name, p))
		}
	}()
	return h.backend.Handle(ctx, id, op, args)
}

// decodeRequest parses a request body strictly: one JSON object with only
// the keys "operation" and "args", exactly so spelled (encoding/json alone
// would accept "Operation"), and no object anywhere in it naming a key
// twice (CheckStrictJSON). A duplicate key inside args is returned apart
// (argsDup, its path relative to args) so that it is reported like the
// operation's own validation reports it; the caller must refuse it.
func decodeRequest(data []byte) (req Request, argsDup *DuplicateKeyError, err error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return Request{}, nil, Errorf(KindUsage, "request body must be a JSON object {\"operation\":\"…\",\"args\":{…}}, got %s", jsonKindOf(t))
	}
	if err := CheckStrictJSON(t); err != nil {
		var dup *DuplicateKeyError
		if !errors.As(err, &dup) {
			return Request{}, nil, Errorf(KindUsage, "request body is not a valid {\"operation\",\"args\"} object: %w", err)
		}
		rel, inArgs := strings.CutPrefix(dup.Path, "args")
		if !inArgs || (rel != "" && rel[0] != '.' && rel[0] != '[') {
			return Request{}, nil, Errorf(KindUsage, "request body: %w", err)
		}
		argsDup = &DuplicateKeyError{Key: dup.Key, Path: strings.TrimPrefix(rel, ".")}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(t, &fields); err != nil {
		return Request{}, nil, Errorf(KindUsage, "request body is not a valid {\"operation\",\"args\"} object: %w", err)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "operation" || k == "args" {
			continue
		}
		hint := ""
		for _, want := range []string{"operation", "args"} {
			if strings.EqualFold(k, want) {
				hint = fmt.Sprintf(" (keys are case-sensitive: write %q)", want)
			}
		}
		return Request{}, nil, Errorf(KindUsage, "request body has an unknown key %q%s: send exactly {\"operation\":\"…\",\"args\":{…}}", clip(k, 100), hint)
	}
	if raw, ok := fields["operation"]; ok {
		if err := json.Unmarshal(raw, &req.Operation); err != nil {
			return Request{}, nil, Errorf(KindUsage, "request body: \"operation\" must be a string naming an operation, got %s", jsonKindOf(raw))
		}
	}
	req.Args = fields["args"]
	if req.Operation == "" {
		return Request{}, nil, Errorf(KindUsage, "request body is missing \"operation\"")
	}
	return req, argsDup, nil
}

// bearerToken extracts a well-formed token from an Authorization header.
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, ValidToken(token)
}

// writeLimited refuses a request over a per-token limit: 429, and the
// connection closes.
func writeLimited(w http.ResponseWriter, err *Error) {
	w.Header().Set("Connection", "close")
	writeResult(w, http.StatusTooManyRequests, ErrResult(err))
}

func writeResult(w http.ResponseWriter, status int, res Result) {
	body, err := json.Marshal(res)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(ErrResult(Errorf(KindInternal, "encode result: %w", err)))
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Length", fmt.Sprint(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// Server timeouts and header cap (NewHTTPServer).
const (
	serverReadHeaderTimeout = 5 * time.Second
	serverReadTimeout       = 30 * time.Second
	serverWriteTimeout      = 60 * time.Second
	// serverIdleTimeout applies to authenticated keep-alive connections;
	// it is longer than the client's idle timeout (30 s), so the client
	// always retires a pooled connection first and never sends a call on
	// one the server is closing. Unauthenticated connections are closed
	// after their reply and capped at UnauthenticatedIdleTimeout.
	serverIdleTimeout = 120 * time.Second
	// MaxHeaderBytes caps a request's header block; more gets 431 (with
	// the JSON envelope when served on ListenLoopback's listener).
	MaxHeaderBytes = 64 << 10
)

// NewHTTPServer wraps h in an http.Server with the timeouts the contract
// needs: read-header 5 s, read 30 s, write 60 s (a 40 s wait plus margin),
// idle 120 s for authenticated connections (UnauthenticatedIdleTimeout
// for the others), headers ≤ 64 KiB. Serve it on ListenLoopback's
// listener, which enforces MaxConnections and turns net/http's own
// plain-text error replies (400 malformed request, 431 headers too large,
// 501, 505, 417) into the JSON envelope; its ConnContext and ConnState
// hooks connect the handler to that listener, so keep them.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: serverReadHeaderTimeout,
		ReadTimeout:       serverReadTimeout,
		WriteTimeout:      serverWriteTimeout,
		IdleTimeout:       serverIdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext:       connContext,
		ConnState:         connState,
		// "OPTIONS *" goes to the handler (a JSON reply), not net/http's.
		DisableGeneralOptionsHandler: true,
	}
}

// ListenLoopback listens on 127.0.0.1 with a kernel-chosen port. Its
// Addr() is the *net.TCPAddr, whose String() is the hostPort for
// NewHandler and EndpointURL. The listener holds at most MaxConnections
// open connections (see there) and rewrites net/http's plain-text error
// replies into the JSON envelope; serve it with NewHTTPServer.
func ListenLoopback() (net.Listener, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	return newConnLimitListener(l, MaxConnections), nil
}

// errorHeadersOfGo is what net/http's server puts between the status line
// and the body of the error replies it writes itself, before any handler
// runs (net/http/server.go, (*conn).serve).
const errorHeadersOfGo = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonFixedReply recognises a reply that net/http wrote on its own and
// returns the same status with the JSON envelope of CONTRACT §3 (kind
// usage, Connection: close). They are, exactly (one Write each):
//
//	HTTP/1.1 400 Bad Request<errorHeadersOfGo>400 Bad Request
//	HTTP/1.1 431 Request Header Fields Too Large<…>431 Request Header Fields Too Large
//	HTTP/1.1 501 Not Implemented<…>Unsupported transfer encoding
//	HTTP/1.1 <code> <text>: <detail><…><code> <text>: <detail>   (400 with a detail, 505)
//	HTTP/1.1 417 Expectation Failed\r\n…Content-Length: 0\r\n\r\n  (an Expect other than 100-continue)
//
// Handler replies never match: they carry Date and Content-Length headers
// and this handler's are application/json.
func jsonFixedReply(p []byte) ([]byte, bool) {
	const maxFixed = 1024
	if len(p) > maxFixed || !bytes.HasPrefix(p, []byte("HTTP/1.")) {
		return nil, false
	}
	if code, ok := expectationFailedReply(p); ok {
		return envelopeReply(code, "unsupported Expect header: only \"Expect: 100-continue\" is understood; drop the header"), true
	}
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok {
		return nil, false
	}
	line, body, ok := bytes.Cut(rest, []byte(errorHeadersOfGo))
	if !ok || len(line) < 5 || line[3] != ' ' {
		return nil, false
	}
	code, err := strconv.Atoi(string(line[:3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	after, ok := strings.CutPrefix(string(line[4:]), http.StatusText(code))
	if !ok || http.StatusText(code) == "" {
		return nil, false
	}
	detail := strings.TrimPrefix(after, ": ")
	if after != "" && detail == after {
		return nil, false
	}
	if !bytes.Equal(body, line) && !(code == http.StatusNotImplemented && string(body) == "Unsupported transfer encoding") {
		return nil, false
	}
	var msg string
	switch {
	case code == http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("request headers are over the %d-byte limit: send fewer or smaller headers", MaxHeaderBytes)
	case code == http.StatusNotImplemented:
		msg = "unsupported Transfer-Encoding: send the body with Content-Length or chunked encoding"
	case code == http.StatusHTTPVersionNotSupported:
		msg = "unsupported HTTP version: the tool server speaks HTTP/1.1; send POST /call with a JSON body"
	case code == http.StatusBadRequest && detail == "":
		msg = "malformed HTTP request: the tool server takes an HTTP/1.1 POST /call with a JSON body"
	case detail != "":
		msg = fmt.Sprintf("bad HTTP request: %s; the tool server takes an HTTP/1.1 POST /call with a JSON body", detail)
	default:
		msg = fmt.Sprintf("bad HTTP request (%d %s): the tool server takes an HTTP/1.1 POST /call with a JSON body", code, http.StatusText(code))
	}
	return envelopeReply(code, msg), true
}

// expectationFailedReply recognises net/http's bodiless 417 reply to an
// Expect header other than 100-continue.
func expectationFailedReply(p []byte) (int, bool) {
	_, rest, ok := bytes.Cut(p, []byte(" "))
	if !ok || !bytes.HasPrefix(rest, []byte("417 Expectation Failed\r\n")) || !bytes.HasSuffix(p, []byte("\r\n\r\n")) {
		return 0, false
	}
	hdr := bytes.ToLower(p)
	if !bytes.Contains(hdr, []byte("\r\ncontent-length: 0\r\n")) || bytes.Contains(hdr, []byte("\r\ncontent-type:")) {
		return 0, false
	}
	if bytes.Index(p, []byte("\r\n\r\n")) != len(p)-4 {
		return 0, false
	}
	return http.StatusExpectationFailed, true
}

// envelopeReply is a complete HTTP/1.1 reply (Connection: close) carrying
// the usage envelope with msg.
func envelopeReply(code int, msg string) []byte {
	body, _ := json.Marshal(ErrResult(Errorf(KindUsage, "%s", msg)))
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	b.WriteString("Content-Type: application/json\r\n")
	b.WriteString("Cache-Control: no-store\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\n")
	b.WriteString("Connection: close\r\n")
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}
