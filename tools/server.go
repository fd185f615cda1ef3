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
// the backend becomes an internal error.
func NewHandler(b Backend, hostPort func() string) http.Handler {
	return &handler{backend: b, hostPort: hostPort}
}

type handler struct {
	backend  Backend
	hostPort func() string
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

	if len(r.Header.Values("Origin")) > 0 {
		fail(http.StatusForbidden, KindForbidden, "requests with an Origin header are refused: the termsprawl tool server does not serve browsers")
		return
	}
	if want := h.hostPort(); r.Host != want {
		fail(http.StatusForbidden, KindForbidden, "Host %q is refused: the tool server only answers to %s", clip(r.Host, 100), want)
		return
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			fail(http.StatusForbidden, KindForbidden, "requests from %s are refused: loopback only", host)
			return
		}
	}
	if r.URL.Path != "/call" {
		fail(http.StatusNotFound, KindNotFound, "no such endpoint %q: POST /call", clip(r.URL.Path, 100))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, KindUsage, "method %s is not allowed: POST /call", clip(r.Method, 20))
		return
	}

	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl"`)
		fail(http.StatusUnauthorized, KindUnauthorized, "missing or malformed Authorization header: send \"Authorization: Bearer <token>\" with the token of your session file")
		return
	}
	id, ok := h.backend.Authenticate(token)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl", error="invalid_token"`)
		fail(http.StatusUnauthorized, KindUnauthorized, "unknown or revoked token: its node may have been closed; use the session file of a live node")
		return
	}

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
	req, err := decodeRequest(data)
	if err != nil {
		writeResult(w, http.StatusBadRequest, ErrResult(err))
		return
	}
	op, err := ValidateRequest(req)
	if err != nil {
		writeResult(w, HTTPStatus(KindUsage), ErrResult(err))
		return
	}
	res := h.handle(r.Context(), id, op, NormalizeArgs(req.Args))
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
// "operation" and "args".
func decodeRequest(data []byte) (Request, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return Request{}, Errorf(KindUsage, "request body must be a JSON object {\"operation\":\"…\",\"args\":{…}}, got %s", jsonKindOf(t))
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return Request{}, Errorf(KindUsage, "request body is not a valid {\"operation\",\"args\"} object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, Errorf(KindUsage, "request body has data after the JSON object")
	}
	if req.Operation == "" {
		return Request{}, Errorf(KindUsage, "request body is missing \"operation\"")
	}
	return req, nil
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

// NewHTTPServer wraps h in an http.Server with the timeouts the contract
// needs: read-header 5 s, read 30 s, write 60 s (a 40 s wait plus margin),
// idle 120 s, headers ≤ 64 KiB.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// ListenLoopback listens on 127.0.0.1 with a kernel-chosen port. Its
// Addr().String() is the hostPort for NewHandler and EndpointURL.
func ListenLoopback() (net.Listener, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	return l, nil
}
