package monitor

import (
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

//go:embed static
var static embed.FS

// Prefix is the path every monitor URL starts with.
const Prefix = "/monitor/"

// Defaults of Config.
const (
	DefaultPoll        = time.Second
	DefaultMinInterval = 16 * time.Millisecond
	// pingInterval keeps an idle stream alive and finds pages that left.
	pingInterval = 15 * time.Second
)

// csp is the page's Content-Security-Policy: its own script, style, icon
// and event stream; nothing else, from anywhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// files are the page's assets: name under the capability → file and type.
var files = map[string][2]string{
	"":          {"static/index.html", "text/html; charset=utf-8"},
	"app.js":    {"static/app.js", "text/javascript; charset=utf-8"},
	"style.css": {"static/style.css", "text/css; charset=utf-8"},
	"icon.svg":  {"static/icon.svg", "image/svg+xml"},
	// the semantic tree beside the screen (semantic.go)
	"semantic.js": {"static/semantic.js", "text/javascript; charset=utf-8"},
}

// Config is what a Monitor serves from.
type Config struct {
	Saved  Saved // from Load: the capability
	Engine Engine
	Side   Side // may be nil
	// HostPort is the listener's 127.0.0.1:PORT: the only Host accepted,
	// and with http:// the only Origin.
	HostPort func() string
	Log      *slog.Logger
	// Poll is how often node rows and the side tables are re-read while a
	// page is open (DefaultPoll if 0): a backstop, since every change the
	// tool server makes, and a program's exit, kick a re-read at once
	// (Monitor.Kick); MinInterval the least time between
	// two screen frames of one node (DefaultMinInterval if 0).
	Poll, MinInterval time.Duration
}

// Monitor serves the page and its event stream.
type Monitor struct {
	cfg       Config
	hub       *hub
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// New returns the monitor of cfg.
func New(cfg Config) (*Monitor, error) {
	if !validCapability(cfg.Saved.Capability) {
		return nil, errors.New("monitor: no capability: call Load first")
	}
	if cfg.Engine == nil || cfg.HostPort == nil {
		return nil, errors.New("monitor: Engine and HostPort are required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{cfg: cfg, done: make(chan struct{})}
	m.hub = newHub(m)
	return m, nil
}

// URL is the page's address.
func (m *Monitor) URL() string {
	return "http://" + m.cfg.HostPort() + Prefix + m.cfg.Saved.Capability + "/"
}

// Close ends every event stream and the monitor's goroutines.
func (m *Monitor) Close() { m.closeOnce.Do(func() { close(m.done) }) }

// Mount routes the paths under Prefix to the monitor and every other
// request to next.
func (m *Monitor) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, Prefix) || r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			m.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a refused request in plain text (a person reads it in a
// browser) and ends the connection.
func refuse(w http.ResponseWriter, status int, format string, a ...any) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Connection", "close")
	w.WriteHeader(status)
	fmt.Fprintf(w, format+"\n", a...)
}

// guard checks Host, Origin, Sec-Fetch-Site and the method; it answers
// and returns false for a refused request.
func (m *Monitor) guard(w http.ResponseWriter, r *http.Request) bool {
	hostPort := m.cfg.HostPort()
	if r.Host != hostPort {
		refuse(w, http.StatusForbidden, "Host %q is refused: the termsprawl monitor only answers at http://%s (run `termsprawl monitor` for its URL)", clip(r.Host), hostPort)
		return false
	}
	for _, o := range r.Header.Values("Origin") {
		if o != "http://"+hostPort {
			refuse(w, http.StatusForbidden, "Origin %q is refused: the termsprawl monitor is read only by its own page", clip(o))
			return false
		}
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		refuse(w, http.StatusForbidden, "a %s request is refused: open the monitor's URL directly (run `termsprawl monitor`)", clip(s))
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, "method %s is refused: the termsprawl monitor is read-only", clip(r.Method))
		return false
	}
	return true
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// ServeHTTP serves /monitor/<capability>/{,app.js,style.css,icon.svg,events}.
func (m *Monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.guard(w, r) {
		return
	}
	rest, _ := strings.CutPrefix(r.URL.Path, Prefix)
	capability, name, hasSlash := strings.Cut(rest, "/")
	if subtle.ConstantTimeCompare([]byte(capability), []byte(m.cfg.Saved.Capability)) != 1 {
		refuse(w, http.StatusNotFound, "no such page: the monitor's URL is printed by `termsprawl monitor`")
		return
	}
	if !hasSlash {
		http.Redirect(w, r, Prefix+capability+"/", http.StatusMovedPermanently)
		return
	}
	// Only the capability grants access; the connection is then as good
	// as an authenticated one (no short idle cap, not first to be shed).
	markTrusted(r)
	if name == "events" {
		m.events(w, r)
		return
	}
	if name == "semantic" {
		m.semantic(w, r) // semantic.go
		return
	}
	f, ok := files[name]
	if !ok || r.URL.RawQuery != "" {
		refuse(w, http.StatusNotFound, "no such page %q under the monitor", clip(name))
		return
	}
	data, err := static.ReadFile(f[0])
	if err != nil {
		refuse(w, http.StatusInternalServerError, "monitor asset %s: %v", name, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f[1])
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	_, _ = w.Write(data)
}

func markTrusted(r *http.Request) { tools.MarkAuthenticated(r) }
