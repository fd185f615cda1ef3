package ctllite

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The values below are the tools package's (CONTRACT §2–§9); the lite
// binary cannot link tools, so TestLiteMatchesTools checks each against
// its source.
const (
	maxStateFileBytes = 64 << 10
	maxBodyBytes      = 1 << 20
	maxReplyBytes     = 32 << 20
	clientTimeout     = 45 * time.Second
	dialTimeout       = 5 * time.Second
	sessionEnv        = "TERMSPRAWL_SESSION_FILE"
)

// kinds are the error kinds of CONTRACT §3 (tools.Kind.Valid).
var kinds = []string{"usage", "not_found", "unauthorized", "forbidden", "conflict", "timeout", "not_run", "in_progress", "rejected", "unavailable", "internal"}

func validKind(k string) bool {
	for _, v := range kinds {
		if k == v {
			return true
		}
	}
	return false
}

// StateDir is the state directory (tools.StateDir calls it):
// $TERMSPRAWL_HOME, else $XDG_STATE_HOME/termsprawl, else
// ~/.local/state/termsprawl. A relative TERMSPRAWL_HOME is made absolute;
// a relative XDG_STATE_HOME is ignored, as the XDG spec says.
func StateDir() (string, error) {
	if h := os.Getenv("TERMSPRAWL_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("resolve TERMSPRAWL_HOME: %w", err)
		}
		return abs, nil
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "termsprawl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state directory (set TERMSPRAWL_HOME): %w", err)
	}
	return filepath.Join(home, ".local", "state", "termsprawl"), nil
}

// sessionPath is cli's resolveSession when it finds a file: --session,
// else $TERMSPRAWL_SESSION_FILE, else a readable operator session. ""
// means the full CLI explains what is missing.
func sessionPath(flag string) string {
	abs := func(s string) string {
		if a, err := filepath.Abs(s); err == nil {
			return a
		}
		return s
	}
	if strings.TrimSpace(flag) != "" {
		return abs(flag)
	}
	if s := os.Getenv(sessionEnv); strings.TrimSpace(s) != "" {
		return abs(s)
	}
	dir, err := StateDir()
	if err != nil {
		return ""
	}
	op := filepath.Join(dir, "sessions", "operator.json")
	if _, ok := readBounded(op); !ok {
		return ""
	}
	return op
}

// readBounded reads a regular file of at most maxStateFileBytes
// (tools.ReadFileBounded); ok is false for anything else, whose error the
// full CLI words.
func readBounded(path string) ([]byte, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxStateFileBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateFileBytes+1))
	if err != nil || len(data) > maxStateFileBytes {
		return nil, false
	}
	return data, true
}

// target is where a call goes: the node's token and the endpoint.
type target struct {
	token, url, hostPort string
}

// readTarget reads and checks the session file and the endpoint file
// beside its directory exactly as tools.Call does; ok is false when
// either would make tools.Call fail (the full CLI then says why).
func readTarget(session string) (target, bool) {
	data, ok := readBounded(session)
	if !ok {
		return target{}, false
	}
	var s struct {
		Node  string `json:"node"`
		Token string `json:"token"`
		Role  string `json:"role"`
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &s) != nil {
		return target{}, false
	}
	if !validNodeID(s.Node) || !ValidToken(s.Token) || (s.Role != "agent" && s.Role != "operator") {
		return target{}, false
	}
	data, ok = readBounded(filepath.Join(filepath.Dir(filepath.Dir(session)), "endpoint.json"))
	if !ok {
		return target{}, false
	}
	var ep struct {
		URL        string `json:"url"`
		InstanceID string `json:"instance_id"`
		PID        int    `json:"pid"`
		Version    string `json:"version"`
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &ep) != nil || ep.InstanceID == "" {
		return target{}, false
	}
	hp, ok := loopbackHostPort(ep.URL)
	if !ok {
		return target{}, false
	}
	return target{token: s.Token, url: ep.URL, hostPort: hp}, true
}

// loopbackHostPort accepts exactly http://127.0.0.1:PORT/call with PORT
// 1–65535 in canonical form: a subset of what tools.ValidateEndpointURL
// accepts (it accepts nothing else either), so the token never goes
// elsewhere.
func loopbackHostPort(u string) (string, bool) {
	rest, ok := strings.CutPrefix(u, "http://127.0.0.1:")
	if !ok {
		return "", false
	}
	port, ok := strings.CutSuffix(rest, "/call")
	if !ok {
		return "", false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", false
	}
	return "127.0.0.1:" + port, true
}

// validNodeID is ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$.
func validNodeID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ValidToken reports whether s is 64 lowercase hex characters (tools.ValidToken
// calls it).
func ValidToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// errNotSent is a failure before anything reached the orchestrator (no
// endpoint, connection refused): the full CLI may make the call instead.
var errNotSent = errors.New("nothing was sent")

// result is a decoded reply envelope (tools.Result).
type result struct {
	OK        bool
	Value     json.RawMessage
	Error     string
	Kind      string
	Retryable bool
	Details   map[string]any
	// canonical: Value is exactly what json.Marshal writes for it
	// (compact, HTML-escaped), so that the printed envelope is Value
	// indented, without a round trip through reflection (okReply).
	canonical bool
}

// unavailable is tools.Unavailable.
func unavailable(reason string, retryable bool) result {
	return result{Kind: "unavailable", Error: unavailableMessage(reason), Retryable: retryable, Details: map[string]any{"reason": reason}}
}

// unavailableMessage is tools.UnavailableMessage.
func unavailableMessage(reason string) string {
	reason = strings.TrimRight(strings.TrimSpace(reason), ".")
	return "Tool connection unavailable: " + reason + ". Check that termsprawl is running. Mutations are not automatically retried."
}

// call makes one POST /call. err is errNotSent when nothing was sent;
// otherwise the result is the reply, or the unavailable result tools.Call
// gives for a failure after sending (safe: whether the operation is
// read-only, so retrying it does nothing twice).
func call(tg target, op string, args json.RawMessage, safe bool) (result, error) {
	body, err := json.Marshal(struct {
		Operation string          `json:"operation"`
		Args      json.RawMessage `json:"args"`
	}{op, args})
	if err != nil || len(body) > maxBodyBytes {
		return result{}, errNotSent
	}
	conn, err := dialLoopback(tg.hostPort, dialTimeout)
	if err != nil {
		return result{}, errNotSent
	}
	defer conn.Close()
	if err := conn.setTimeout(clientTimeout); err != nil {
		return result{}, errNotSent
	}
	req := make([]byte, 0, 256+len(body))
	req = append(req, "POST /call HTTP/1.1\r\nHost: "...)
	req = append(req, tg.hostPort...)
	req = append(req, "\r\nUser-Agent: termsprawl-client\r\nContent-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\nAccept: application/json\r\nAuthorization: Bearer "...)
	req = append(req, tg.token...)
	req = append(req, "\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"...)
	req = append(req, body...)
	if _, err := conn.Write(req); err != nil {
		if isTimeout(err) {
			return unavailable(fmt.Sprintf("no reply from %s within %s", tg.url, clientTimeout), safe), nil
		}
		return unavailable(fmt.Sprintf("request to %s failed: %v", tg.url, err), safe), nil
	}
	status, ctype, data, err := readReply(bufio.NewReader(conn))
	switch {
	case err != nil && isTimeout(err):
		return unavailable(fmt.Sprintf("no complete reply from %s within %s", tg.url, clientTimeout), safe), nil
	case errors.Is(err, errTooLarge):
		return unavailable(fmt.Sprintf("the reply from %s is over %d bytes", tg.url, maxReplyBytes), safe), nil
	case err != nil:
		return unavailable(fmt.Sprintf("reading the reply from %s failed: %v", tg.url, err), safe), nil
	}
	if status >= 300 && status < 400 {
		return unavailable(fmt.Sprintf("%s answered with a redirect; refusing to follow it", tg.url), safe), nil
	}
	res, ok := decodeResult(data)
	if !ok {
		ct, _, _ := strings.Cut(ctype, ";")
		ct = strings.ToLower(strings.TrimSpace(ct))
		if ct == "" {
			ct = "no content type"
		}
		return unavailable(fmt.Sprintf("the reply from %s is not a tool result (HTTP %d, %s)", tg.url, status, ct), safe), nil
	}
	return res, nil
}

func isTimeout(err error) bool { return errors.Is(err, errTimeout) }

var errTooLarge = errors.New("reply too large")

// readReply reads an HTTP/1.x response: the status, the content type and
// the body (Content-Length, chunked, or until the connection closes).
func readReply(r *bufio.Reader) (status int, ctype string, body []byte, err error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, "", nil, err
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return 0, "", nil, fmt.Errorf("malformed HTTP response %q", strings.TrimSpace(line))
	}
	if status, err = strconv.Atoi(f[1]); err != nil {
		return 0, "", nil, fmt.Errorf("malformed HTTP status %q", f[1])
	}
	length, chunked := int64(-1), false
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			return 0, "", nil, err
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		k, v, _ := strings.Cut(h, ":")
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "content-length":
			if length, err = strconv.ParseInt(v, 10, 64); err != nil || length < 0 {
				return 0, "", nil, fmt.Errorf("malformed Content-Length %q", v)
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(v, "chunked")
		case "content-type":
			ctype = v
		}
	}
	switch {
	case status == 204 || status == 304 || status/100 == 1:
		return status, ctype, nil, nil
	case chunked:
		body, err = readChunked(r)
	case length >= 0:
		if length > maxReplyBytes {
			return 0, "", nil, errTooLarge
		}
		body = make([]byte, length)
		if _, err = io.ReadFull(r, body); err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	default:
		body, err = io.ReadAll(io.LimitReader(r, maxReplyBytes+1))
		if err == nil && len(body) > maxReplyBytes {
			err = errTooLarge
		}
	}
	return status, ctype, body, err
}

func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		sz, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(sz, 16, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed chunk size %q", sz)
		}
		if n == 0 {
			return body, nil
		}
		if int64(len(body))+n > maxReplyBytes {
			return nil, errTooLarge
		}
		start := len(body)
		body = append(body, make([]byte, n)...)
		if _, err := io.ReadFull(r, body[start:]); err != nil {
			return nil, err
		}
		if _, err := r.Discard(2); err != nil {
			return nil, err
		}
	}
}

// decodeResult is tools.Result's UnmarshalJSON plus tools.Call's kind
// check.
func decodeResult(data []byte) (result, bool) {
	if v, ok := okReply(data); ok {
		return result{OK: true, Value: v, canonical: true}, true
	}
	var env struct {
		OK        *bool           `json:"ok"`
		Value     json.RawMessage `json:"value"`
		Error     string          `json:"error"`
		Kind      string          `json:"kind"`
		Retryable bool            `json:"retryable"`
		Details   map[string]any  `json:"details"`
	}
	if json.Unmarshal(data, &env) != nil || env.OK == nil {
		return result{}, false
	}
	if *env.OK {
		return result{OK: true, Value: env.Value}, true
	}
	r := result{Error: env.Error, Kind: env.Kind, Retryable: env.Retryable, Details: env.Details}
	if len(r.Details) == 0 {
		r.Details = nil
	}
	if !validKind(r.Kind) {
		r.Kind = "internal"
	}
	return r, true
}

// okReply recognises the tool server's own successful reply,
// {"ok":true,"value":V} as json.Marshal wrote it, with V in the form
// json.Marshal gives a json.RawMessage (compact, with <, > and & escaped,
// no raw U+2028 or U+2029); anything else is decoded the slow way.
func okReply(data []byte) (json.RawMessage, bool) {
	t := bytes.TrimRight(data, " \t\r\n")
	v, ok := bytes.CutPrefix(t, []byte(`{"ok":true,"value":`))
	if !ok {
		return nil, false
	}
	v, ok = bytes.CutSuffix(v, []byte("}"))
	if !ok || len(v) == 0 || bytes.ContainsAny(v, "<>&\u2028\u2029") {
		return nil, false
	}
	var c bytes.Buffer
	if json.Compact(&c, v) != nil || !bytes.Equal(c.Bytes(), v) {
		return nil, false
	}
	return v, true
}

// pretty is cli's prettyJSON of the tools.Result.
func (r result) pretty() ([]byte, error) {
	if r.OK && r.canonical {
		var b bytes.Buffer
		b.Grow(2*len(r.Value) + 32)
		if err := json.Indent(&b, append([]byte(`{"ok":true,"value":`), append(r.Value, '}')...), "", "  "); err != nil {
			return nil, err
		}
		b.WriteByte('\n')
		return b.Bytes(), nil
	}
	var v any
	if r.OK {
		val := r.Value
		if len(bytes.TrimSpace(val)) == 0 {
			val = json.RawMessage("null")
		}
		v = struct {
			OK    bool            `json:"ok"`
			Value json.RawMessage `json:"value"`
		}{true, val}
	} else {
		v = struct {
			OK        bool           `json:"ok"`
			Error     string         `json:"error"`
			Kind      string         `json:"kind"`
			Retryable bool           `json:"retryable"`
			Details   map[string]any `json:"details,omitempty"`
		}{false, r.Error, r.Kind, r.Retryable, r.Details}
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// waitTimedOut is cli's waitTimedOut: an input's receipt says its wait
// ran out of time.
func (r result) waitTimedOut() bool {
	if !r.OK || !bytes.Contains(r.Value, []byte(`"timed_out"`)) {
		return false
	}
	var v struct {
		Result struct {
			Wait *struct {
				TimedOut bool `json:"timed_out"`
			} `json:"wait"`
		} `json:"result"`
	}
	return json.Unmarshal(r.Value, &v) == nil && v.Result.Wait != nil && v.Result.Wait.TimedOut
}
