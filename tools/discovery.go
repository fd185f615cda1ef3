package tools

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/termsprawl/termsprawl/internal/ctllite"

	"github.com/termsprawl/termsprawl/internal/tmuxenv"
)

// File and directory names of the state directory (CONTRACT §2).
const (
	EndpointFile    = "endpoint.json"
	LockFile        = "server.lock"
	SessionsDir     = "sessions"
	AgentToolsDir   = "agent-tools"
	ReceiptsDir     = "receipts"
	PreferencesFile = "preferences.json"
	// OperatorNode is the node name of the human CLI's own session file.
	OperatorNode = "operator"
	// CommandPlaceholder is the preferences arg replaced by the attach argv.
	CommandPlaceholder = "{command}"
)

// Session roles.
const (
	RoleAgent    = "agent"
	RoleOperator = "operator"
)

// StateDir returns the state directory: $TERMSPRAWL_HOME, else
// $XDG_STATE_HOME/termsprawl, else ~/.local/state/termsprawl. A relative
// TERMSPRAWL_HOME is made absolute; a relative XDG_STATE_HOME is ignored,
// as the XDG spec says.
func StateDir() (string, error) {
	// One resolution for both clients: termsprawlctl's hot path links only
	// the standard library (internal/ctllite), so it is written there.
	return ctllite.StateDir()
}

// EndpointPath is <state>/endpoint.json.
func EndpointPath(stateDir string) string { return filepath.Join(stateDir, EndpointFile) }

// LockPath is <state>/server.lock.
func LockPath(stateDir string) string { return filepath.Join(stateDir, LockFile) }

// SessionPath is <state>/sessions/<node>.json.
func SessionPath(stateDir, node string) string {
	return filepath.Join(stateDir, SessionsDir, node+".json")
}

// OperatorSessionPath is <state>/sessions/operator.json.
func OperatorSessionPath(stateDir string) string { return SessionPath(stateDir, OperatorNode) }

// PreferencesPath is <state>/agent-tools/preferences.json.
func PreferencesPath(stateDir string) string {
	return filepath.Join(stateDir, AgentToolsDir, PreferencesFile)
}

// ReceiptsPath is <state>/receipts, the ReceiptStore directory.
func ReceiptsPath(stateDir string) string { return filepath.Join(stateDir, ReceiptsDir) }

// EndpointPathFor finds endpoint.json from a session file:
// dirname(dirname(sessionFile))/endpoint.json.
func EndpointPathFor(sessionFile string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(sessionFile)), EndpointFile)
}

// StateDirError says why a state directory is refused and how to fix it.
type StateDirError struct {
	Path    string
	Problem string // what is wrong
	Fix     string // a command or action that fixes it
	Err     error  // cause, if any
}

func (e *StateDirError) Error() string {
	msg := fmt.Sprintf("state directory %s: %s", e.Path, e.Problem)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

func (e *StateDirError) Unwrap() error { return e.Err }

// EnsureStateDir creates dir (and sessions/, agent-tools/) with mode 0700
// when missing and refuses, with a *StateDirError, a directory that is not
// owned by the current user or is group or world writable.
func EnsureStateDir(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, SessionsDir), filepath.Join(dir, AgentToolsDir)} {
		if err := ensurePrivateDir(d); err != nil {
			return err
		}
	}
	return nil
}

// CheckStateDir applies EnsureStateDir's rules without creating anything
// (for doctor): dir and its sessions/ and agent-tools/ must exist.
func CheckStateDir(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, SessionsDir), filepath.Join(dir, AgentToolsDir)} {
		if err := checkPrivateDir(d); err != nil {
			return err
		}
	}
	return nil
}

// ensurePrivateDir creates d with 0700 if missing and checks its owner and
// mode.
func ensurePrivateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return &StateDirError{Path: d, Problem: "cannot create it", Fix: "create it with mkdir -m 700 -p " + shellQuote(d) + " or set TERMSPRAWL_HOME", Err: err}
	}
	return checkPrivateDir(d)
}

// checkPrivateDir checks that d is a directory of the user's that nobody
// else may write.
func checkPrivateDir(d string) error {
	fi, err := os.Stat(d)
	if errors.Is(err, fs.ErrNotExist) {
		return &StateDirError{Path: d, Problem: "it does not exist", Fix: "termsprawl up creates it", Err: err}
	}
	if err != nil {
		return &StateDirError{Path: d, Problem: "cannot inspect it", Err: err}
	}
	if !fi.IsDir() {
		return &StateDirError{Path: d, Problem: "it is not a directory", Fix: "move it away or set TERMSPRAWL_HOME"}
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return &StateDirError{Path: d, Problem: fmt.Sprintf("it is owned by uid %d, not by you (uid %d)", uid, os.Getuid()),
			Fix: fmt.Sprintf("chown %d %s, or set TERMSPRAWL_HOME to a directory of yours", os.Getuid(), shellQuote(d))}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &StateDirError{Path: d, Problem: fmt.Sprintf("it is group or world writable (mode %04o)", perm),
			Fix: "chmod 700 " + shellQuote(d)}
	}
	return nil
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ':' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteFileAtomic writes data to path with mode 0600: a temporary file in
// the same directory, fsync, rename over path, fsync of the directory.
// Readers see the old or the new content, never a mix.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err = os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		// Some file systems cannot fsync a directory; the rename is done.
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// WriteJSONAtomic marshals v (indented) and writes it with WriteFileAtomic.
func WriteJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: marshal: %w", path, err)
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// Endpoint is the content of endpoint.json.
type Endpoint struct {
	URL        string `json:"url"`
	InstanceID string `json:"instance_id"`
	PID        int    `json:"pid"`
	Version    string `json:"version"`
}

// ParseEndpoint decodes endpoint.json content. It requires url and
// instance_id but does not validate the URL: see ValidateEndpointURL.
func ParseEndpoint(data []byte) (Endpoint, error) {
	var ep Endpoint
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return Endpoint{}, errors.New("parse endpoint: not a JSON object")
	}
	if err := json.Unmarshal(t, &ep); err != nil {
		return Endpoint{}, fmt.Errorf("parse endpoint: %w", err)
	}
	if ep.URL == "" {
		return Endpoint{}, errors.New("parse endpoint: missing url")
	}
	if ep.InstanceID == "" {
		return Endpoint{}, errors.New("parse endpoint: missing instance_id")
	}
	return ep, nil
}

// ReadEndpoint reads and parses an endpoint.json file (with
// ReadFileBounded: a FIFO, device or oversized file is refused promptly).
func ReadEndpoint(path string) (Endpoint, error) {
	data, err := ReadFileBounded(path, MaxStateFileBytes)
	if err != nil {
		return Endpoint{}, fmt.Errorf("read endpoint file: %w", err)
	}
	ep, err := ParseEndpoint(data)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint file %s: %w", path, err)
	}
	return ep, nil
}

// WriteEndpoint writes endpoint.json atomically.
func WriteEndpoint(path string, ep Endpoint) error { return WriteJSONAtomic(path, ep) }

// RemoveEndpointIfOwned removes endpoint.json only if its instance_id is
// instanceID (CONTRACT §2, clean shutdown). It reports whether it removed
// the file; a missing file is not an error.
func RemoveEndpointIfOwned(path, instanceID string) (bool, error) {
	ep, err := ReadEndpoint(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || ep.InstanceID != instanceID {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove endpoint file: %w", err)
	}
	return true, nil
}

// EndpointURL is the /call URL of a listener address "127.0.0.1:PORT".
func EndpointURL(hostPort string) string { return "http://" + hostPort + "/call" }

func invalidEndpoint(format string, a ...any) *Error {
	return &Error{Kind: KindUnavailable, Msg: "Invalid local endpoint: " + fmt.Sprintf(format, a...)}
}

// ValidateEndpointURL accepts only http://127.0.0.1:PORT/call: scheme http,
// host exactly 127.0.0.1 with a port, path exactly /call, no userinfo,
// query or fragment. Its errors (*Error, KindUnavailable) read
// "Invalid local endpoint: …". The token must never be sent elsewhere.
func ValidateEndpointURL(u string) error {
	if u == "" {
		return invalidEndpoint("empty url")
	}
	if strings.ContainsAny(u, "#?\\ \t\r\n") {
		return invalidEndpoint("%q must not contain a query, fragment, backslash or space", clip(u, 100))
	}
	p, err := url.Parse(u)
	if err != nil {
		return invalidEndpoint("%q does not parse", clip(u, 100))
	}
	if p.Scheme != "http" {
		return invalidEndpoint("scheme must be http, got %q", clip(p.Scheme, 20))
	}
	if p.Opaque != "" || p.User != nil {
		return invalidEndpoint("%q must not carry userinfo", clip(u, 100))
	}
	host, port, err := net.SplitHostPort(p.Host)
	if err != nil {
		return invalidEndpoint("host must be 127.0.0.1:PORT, got %q", clip(p.Host, 100))
	}
	if host != "127.0.0.1" {
		return invalidEndpoint("host must be exactly 127.0.0.1, got %q", clip(host, 100))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return invalidEndpoint("port must be a number from 1 to 65535, got %q", clip(port, 20))
	}
	if p.Path != "/call" || p.RawPath != "" {
		return invalidEndpoint("path must be exactly /call, got %q", clip(p.EscapedPath(), 100))
	}
	return nil
}

// Session is the content of sessions/<node>.json.
type Session struct {
	Node        string `json:"node"`
	Token       string `json:"token"`
	Role        string `json:"role"`
	Name        string `json:"name,omitempty"`
	Socket      string `json:"socket,omitempty"`
	TmuxSession string `json:"tmux_session,omitempty"`
	Parent      string `json:"parent,omitempty"`
}

const nodeIDPattern = `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`

var nodeIDRE = regexp.MustCompile(nodeIDPattern)

// ValidNodeID reports whether s is a node id: ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$.
func ValidNodeID(s string) bool { return nodeIDRE.MatchString(s) }

var slugRE = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// NodeIDFor is a free node id made from name: name itself cut to a slug
// of at most 40 characters, else that slug (or "term" when name gives
// none) with the first free "-N". taken says whether an id is in use;
// the operator's id always is.
func NodeIDFor(name string, taken func(id string) bool) string {
	base := strings.Trim(slugRE.ReplaceAllString(name, "-"), "-_")
	if len(base) > 40 {
		base = base[:40]
	}
	used := func(id string) bool { return id == OperatorNode || taken(id) }
	if base != "" && ValidNodeID(base) && !used(base) {
		return base
	}
	if base == "" || !ValidNodeID(base) {
		base = "term"
	}
	for i := 1; ; i++ {
		if id := base + "-" + strconv.Itoa(i); !used(id) {
			return id
		}
	}
}

// ValidToken reports whether s is 64 lowercase hex characters.
func ValidToken(s string) bool { return ctllite.ValidToken(s) }

// ValidRole reports whether s is RoleAgent or RoleOperator.
func ValidRole(s string) bool { return s == RoleAgent || s == RoleOperator }

// ParseSession decodes and validates session file content. Errors never
// contain the token.
func ParseSession(data []byte) (Session, error) {
	var s Session
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return Session{}, errors.New("parse session: not a JSON object")
	}
	if err := json.Unmarshal(t, &s); err != nil {
		// json errors quote offsets and types, not values.
		return Session{}, fmt.Errorf("parse session: %w", err)
	}
	if !ValidNodeID(s.Node) {
		return Session{}, fmt.Errorf("parse session: node %q is not a valid node id", clip(s.Node, 70))
	}
	if !ValidToken(s.Token) {
		return Session{}, errors.New("parse session: token must be 64 lowercase hex characters")
	}
	if !ValidRole(s.Role) {
		return Session{}, fmt.Errorf("parse session: role must be %q or %q, got %q", RoleAgent, RoleOperator, clip(s.Role, 40))
	}
	return s, nil
}

// ReadSession reads and validates a session file (with ReadFileBounded).
func ReadSession(path string) (Session, error) {
	data, err := ReadFileBounded(path, MaxStateFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		// Said first: no termsprawl can help with a file that is not there
		// (a closed node's is removed).
		return Session{}, fmt.Errorf("read session file: %s does not exist (a node's session file goes when the node is closed; pass a live node's <state>/sessions/NODE.json or the operator's <state>/sessions/operator.json): %w", path, err)
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session file: %w", err)
	}
	s, err := ParseSession(data)
	if err != nil {
		return Session{}, fmt.Errorf("session file %s: %w", path, err)
	}
	return s, nil
}

// WriteSession validates s and writes it atomically with mode 0600.
func WriteSession(path string, s Session) error {
	if !ValidNodeID(s.Node) || !ValidToken(s.Token) || !ValidRole(s.Role) {
		return fmt.Errorf("write session file %s: invalid node, token or role", path)
	}
	return WriteJSONAtomic(path, s)
}

// NewToken returns 32 bytes from crypto/rand as 64 lowercase hex characters.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Preferences is agent-tools/preferences.json: the external terminal.
type Preferences struct {
	Executable string   `json:"executable"`
	Args       []string `json:"args"`
}

// ParsePreferences decodes preferences.json and checks that exactly one
// arg equals CommandPlaceholder.
func ParsePreferences(data []byte) (Preferences, error) {
	var p Preferences
	if err := json.Unmarshal(data, &p); err != nil {
		return Preferences{}, fmt.Errorf("parse preferences: %w", err)
	}
	if p.Executable == "" {
		return Preferences{}, errors.New("parse preferences: missing executable")
	}
	n := 0
	for _, a := range p.Args {
		if a == CommandPlaceholder {
			n++
		}
	}
	if n != 1 {
		return Preferences{}, fmt.Errorf("parse preferences: args must contain %q exactly once (found %d)", CommandPlaceholder, n)
	}
	return p, nil
}

// ReadPreferences reads and validates preferences.json (with
// ReadFileBounded).
func ReadPreferences(path string) (Preferences, error) {
	data, err := ReadFileBounded(path, MaxStateFileBytes)
	if err != nil {
		return Preferences{}, fmt.Errorf("read preferences: %w", err)
	}
	p, err := ParsePreferences(data)
	if err != nil {
		return Preferences{}, fmt.Errorf("preferences file %s: %w", path, err)
	}
	return p, nil
}

// Argv returns the emulator argv with CommandPlaceholder replaced by the
// whole attach argv.
func (p Preferences) Argv(attach []string) []string {
	argv := []string{p.Executable}
	for _, a := range p.Args {
		if a == CommandPlaceholder {
			argv = append(argv, attach...)
		} else {
			argv = append(argv, a)
		}
	}
	return argv
}

// EnvWithoutTmux returns env without TMUX and TMUX_PANE: what a spawned
// terminal or `tmux attach` gets (CONTRACT §7), so attaching works inside
// and outside tmux.
func EnvWithoutTmux(env []string) []string { return tmuxenv.WithoutTmux(env) }
