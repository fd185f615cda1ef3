package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Limits of CONTRACT §9 and §4.
const (
	// MaxBodyBytes caps a POST /call request body.
	MaxBodyBytes = 1 << 20
	// MaxStringBytes caps every string argument (also inside arrays, maps
	// and the nested wait object).
	MaxStringBytes = 64 << 10
	// MaxReceiptBytes caps an encoded receipt; state is truncated first.
	MaxReceiptBytes = 256 << 10
	// ClientTimeout is the client's cap on one HTTP round trip.
	ClientTimeout = 45 * time.Second
	// MaxWaitTimeout is the largest timeout_ms a waiting operation accepts
	// (kept below ClientTimeout so the reply always arrives in time).
	MaxWaitTimeout = 40 * time.Second
	// DefaultWaitTimeout is the timeout of a wait without timeout_ms.
	DefaultWaitTimeout = 30 * time.Second
	// MaxDialogTimeout is the longest a dialog stays open (CONTRACT §16);
	// each dialog_request still blocks at most MaxWaitTimeout.
	MaxDialogTimeout = 10 * time.Minute
	// MaxIdempotencyKey is the longest idempotency_key, in bytes.
	MaxIdempotencyKey = 128
	// MaxReplyBytes caps a reply body read by the client.
	MaxReplyBytes = 32 << 20
)

// Kind classifies a failed result. Callers branch on it; the human sentence
// is in the error text.
type Kind string

// The error kinds of CONTRACT §3.
const (
	KindUsage        Kind = "usage"        // bad operation or args: nothing was done
	KindNotFound     Kind = "not_found"    // no such node, task, dialog, watch, topic
	KindUnauthorized Kind = "unauthorized" // missing or unknown token
	KindForbidden    Kind = "forbidden"    // authenticated but not allowed (or a guard refused)
	KindConflict     Kind = "conflict"     // state conflict (reused idempotency key, history truncated)
	KindTimeout      Kind = "timeout"      // a wait ran out of time
	KindNotRun       Kind = "not_run"      // refused before anything was sent to tmux
	KindInProgress   Kind = "in_progress"  // sent, outcome unknown
	KindRejected     Kind = "rejected"     // understood but refused by the target
	KindUnavailable  Kind = "unavailable"  // the orchestrator could not be reached
	KindInternal     Kind = "internal"     // a bug
)

var knownKinds = map[Kind]bool{
	KindUsage: true, KindNotFound: true, KindUnauthorized: true,
	KindForbidden: true, KindConflict: true, KindTimeout: true,
	KindNotRun: true, KindInProgress: true, KindRejected: true,
	KindUnavailable: true, KindInternal: true,
}

// Valid reports whether k is one of the kinds of CONTRACT §3.
func (k Kind) Valid() bool { return knownKinds[k] }

// HTTPStatus maps a kind to the HTTP status of its reply. The body is the
// JSON envelope whatever the status, so clients never need the status; it
// only helps humans with curl and logs.
//
//	usage 400, unauthorized 401, forbidden 403, not_found 404,
//	conflict 409, not_run 409 (nothing was done; the state did not allow it),
//	rejected 422, in_progress 202 (accepted, outcome unknown),
//	timeout 504, unavailable 503, internal and anything unknown 500.
//
// A successful result is 200. The handler itself also uses 405 (wrong
// method), 413 (body too large) and 415 (not JSON), all with kind usage.
func HTTPStatus(kind Kind) int {
	switch kind {
	case "":
		return http.StatusOK
	case KindUsage:
		return http.StatusBadRequest
	case KindUnauthorized:
		return http.StatusUnauthorized
	case KindForbidden:
		return http.StatusForbidden
	case KindNotFound:
		return http.StatusNotFound
	case KindConflict, KindNotRun:
		return http.StatusConflict
	case KindRejected:
		return http.StatusUnprocessableEntity
	case KindInProgress:
		return http.StatusAccepted
	case KindTimeout:
		return http.StatusGatewayTimeout
	case KindUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// Request is the body of POST /call.
type Request struct {
	Operation string          `json:"operation"`
	Args      json.RawMessage `json:"args"`
}

// Result is the reply envelope. Its JSON is exactly
//
//	{"ok":true,"value":…}
//	{"ok":false,"error":"…","kind":"…","retryable":bool,"details":{…}}
//
// with details omitted when empty.
type Result struct {
	OK        bool
	Value     json.RawMessage
	Error     string
	Kind      Kind
	Retryable bool
	Details   map[string]any

	// cause is the local cause of a failure that Err exposes to
	// errors.Is/As (ErrNotRunning for the client's "no orchestrator
	// answers"). It is never serialised: a decoded result has none.
	cause error
}

// okPrefix starts a successful envelope, {"ok":true,"value":VALUE}.
const okPrefix = `{"ok":true,"value":`

type errEnvelope struct {
	OK        bool           `json:"ok"`
	Error     string         `json:"error"`
	Kind      Kind           `json:"kind"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details,omitempty"`
}

// MarshalJSON writes the envelope of CONTRACT §3.
func (r Result) MarshalJSON() ([]byte, error) {
	if r.OK {
		v := r.Value
		if len(bytes.TrimSpace(v)) == 0 {
			v = json.RawMessage("null")
		}
		// Written out rather than marshalled: encoding/json checks and
		// compacts a Marshaler's output once more anyway, and a
		// RawMessage field would be checked and compacted a second time
		// (at 1,000 rows, terminal_list spent a third of its time there).
		b := make([]byte, 0, len(okPrefix)+len(v)+1)
		b = append(append(append(b, okPrefix...), v...), '}')
		return b, nil
	}
	kind := r.Kind
	if kind == "" {
		kind = KindInternal
	}
	return json.Marshal(errEnvelope{Error: r.Error, Kind: kind, Retryable: r.Retryable, Details: r.Details})
}

// UnmarshalJSON reads an envelope; "ok" is required.
func (r *Result) UnmarshalJSON(data []byte) error {
	var env struct {
		OK        *bool           `json:"ok"`
		Value     json.RawMessage `json:"value"`
		Error     string          `json:"error"`
		Kind      Kind            `json:"kind"`
		Retryable bool            `json:"retryable"`
		Details   map[string]any  `json:"details"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if env.OK == nil {
		return errors.New("decode result: missing \"ok\"")
	}
	*r = Result{OK: *env.OK}
	if r.OK {
		r.Value = env.Value
		return nil
	}
	r.Error, r.Kind, r.Retryable, r.Details = env.Error, env.Kind, env.Retryable, env.Details
	if len(r.Details) == 0 {
		r.Details = nil
	}
	return nil
}

// Err returns nil for a successful result, else the failure as *Error.
// The *Error's cause (Unwrap) is the result's local cause, if any: a
// result from Call whose transport failed because no orchestrator answers
// satisfies errors.Is(res.Err(), ErrNotRunning).
func (r Result) Err() error {
	if r.OK {
		return nil
	}
	kind := r.Kind
	if kind == "" {
		kind = KindInternal
	}
	return &Error{Kind: kind, Msg: r.Error, Retryable: r.Retryable, Details: r.Details, Err: r.cause}
}

// OKResult marshals v into a successful result. A json.RawMessage is used as
// is (after validation). If v cannot be marshalled the result is an internal
// error.
func OKResult(v any) Result {
	raw, err := json.Marshal(v)
	if err != nil {
		return ErrResult(Errorf(KindInternal, "marshal result value: %w", err))
	}
	return Result{OK: true, Value: raw}
}

// ErrResult turns err into a failed result (see AsError). A nil err gives
// an internal error rather than a fake success.
func ErrResult(err error) Result {
	if err == nil {
		err = Errorf(KindInternal, "ErrResult called with a nil error")
	}
	e := AsError(err)
	kind := e.Kind
	if !kind.Valid() {
		kind = KindInternal
	}
	return Result{OK: false, Error: e.Error(), Kind: kind, Retryable: e.Retryable, Details: e.Details}
}

// Error is the typed error of the contract. Msg is the human sentence sent
// on the wire; Err (optional) is the cause, reachable with errors.Is/As.
type Error struct {
	Kind      Kind
	Msg       string
	Retryable bool
	Details   map[string]any
	Err       error
}

// Error returns Msg, or the cause's text when Msg is empty.
func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return string(e.Kind)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with fmt.Errorf semantics: a %w verb makes its
// operand the cause (Unwrap).
func Errorf(kind Kind, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Msg: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// WithDetails sets one detail and returns e, for chaining.
func (e *Error) WithDetails(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AsError returns the *Error in err's chain (with the message of the whole
// chain, so wrapping context is kept), or wraps err as KindInternal.
// It returns nil for a nil err.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if error(e) == err {
			return e
		}
		// Keep the context the wrappers added to the message.
		return &Error{Kind: e.Kind, Msg: err.Error(), Retryable: e.Retryable, Details: e.Details, Err: err}
	}
	return &Error{Kind: KindInternal, Msg: err.Error(), Err: err}
}

// KindOf returns the kind of err ("" for nil, KindInternal for untyped).
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	return AsError(err).Kind
}
