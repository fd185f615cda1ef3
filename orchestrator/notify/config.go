// Package notify tells humans that an agent needs them, errored, crashed
// or finished (CONTRACT §20): targets (tmux, desktop, terminal,
// webhook=URL), modes, one notification per node and event per window,
// and a bounded queue drained by one sender goroutine that retries with
// backoff, so a slow or failing target never blocks a call or the pump.
//
// It knows nothing of nodes or tmux: the tool server hands it the tmux
// and terminal targets as functions.
package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// FileName is the configuration file in the state directory.
const FileName = "notify.json"

// Target kinds.
const (
	KindTmux     = "tmux"
	KindDesktop  = "desktop"
	KindTerminal = "terminal"
	KindWebhook  = "webhook"
)

// Spec is one configured target.
type Spec struct {
	Kind string
	URL  string // webhook only
}

// String is the target as written on the command line.
func (s Spec) String() string {
	if s.Kind == KindWebhook {
		return KindWebhook + "=" + s.URL
	}
	return s.Kind
}

// Config is the notification configuration.
type Config struct {
	Targets []Spec
	Mode    string
}

// ParseTarget reads one target: tmux, desktop, terminal or webhook=URL
// (http or https).
func ParseTarget(s string) (Spec, error) {
	switch s {
	case KindTmux, KindDesktop, KindTerminal:
		return Spec{Kind: s}, nil
	}
	if u, ok := strings.CutPrefix(s, KindWebhook+"="); ok {
		p, err := url.Parse(u)
		if err != nil {
			return Spec{}, fmt.Errorf("webhook URL %q: %w", u, err)
		}
		if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return Spec{}, fmt.Errorf("webhook URL %q: only http:// and https:// URLs with a host are accepted", u)
		}
		return Spec{Kind: KindWebhook, URL: u}, nil
	}
	return Spec{}, fmt.Errorf("unknown notification target %q: use tmux, desktop, terminal or webhook=URL", s)
}

// ParseMode checks a mode ("" is normal).
func ParseMode(m string) (string, error) {
	switch m {
	case "":
		return tools.NotifyNormal, nil
	case tools.NotifyQuiet, tools.NotifyNormal, tools.NotifyAll:
		return m, nil
	}
	return "", fmt.Errorf("unknown notification mode %q: use quiet, normal or all", m)
}

// fileConfig is notify.json.
type fileConfig struct {
	Mode    string            `json:"mode"`
	Targets []json.RawMessage `json:"targets"`
}

// Load builds the configuration from <stateDir>/notify.json (if it
// exists) and the flags; flags come after the file's targets, and a mode
// flag wins over the file's. No target at all means tmux. Errors name the
// file and the line.
func Load(stateDir string, flagTargets []string, flagMode string) (Config, error) {
	var cfg Config
	path := filepath.Join(stateDir, FileName)
	b, err := tools.ReadFileBounded(path, 1<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return cfg, fmt.Errorf("read %s: %w", path, err)
	default:
		fc, err := parseFile(path, b)
		if err != nil {
			return cfg, err
		}
		cfg = fc
	}
	for _, t := range flagTargets {
		s, err := ParseTarget(t)
		if err != nil {
			return cfg, fmt.Errorf("--notify: %w", err)
		}
		cfg.Targets = append(cfg.Targets, s)
	}
	if flagMode != "" {
		m, err := ParseMode(flagMode)
		if err != nil {
			return cfg, fmt.Errorf("--notify-mode: %w", err)
		}
		cfg.Mode = m
	}
	if cfg.Mode == "" {
		cfg.Mode = tools.NotifyNormal
	}
	if len(cfg.Targets) == 0 {
		cfg.Targets = []Spec{{Kind: KindTmux}}
	}
	return cfg, nil
}

// parseFile reads notify.json: {"mode": "normal", "targets": ["tmux",
// "webhook=https://ntfy.sh/topic"]}.
func parseFile(path string, b []byte) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var fc fileConfig
	if err := dec.Decode(&fc); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return cfg, fmt.Errorf("%s:%d: %w", path, lineAt(b, off), err)
	}
	if dec.More() {
		return cfg, fmt.Errorf("%s:%d: more than one JSON value", path, lineAt(b, dec.InputOffset()))
	}
	if fc.Mode != "" {
		m, err := ParseMode(fc.Mode)
		if err != nil {
			return cfg, fmt.Errorf("%s:%d: %w", path, lineOf(b, `"mode"`), err)
		}
		cfg.Mode = m
	}
	for _, raw := range fc.Targets {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return cfg, fmt.Errorf("%s:%d: a target is a string (tmux, desktop, terminal or webhook=URL), not %s", path, lineOf(b, string(raw)), raw)
		}
		spec, err := ParseTarget(s)
		if err != nil {
			return cfg, fmt.Errorf("%s:%d: %w", path, lineOf(b, string(raw)), err)
		}
		cfg.Targets = append(cfg.Targets, spec)
	}
	return cfg, nil
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// lineOf is the line where needle first occurs (1 if nowhere).
func lineOf(b []byte, needle string) int {
	i := bytes.Index(b, []byte(needle))
	if i < 0 {
		return 1
	}
	return lineAt(b, int64(i))
}

// Exists reports whether the state directory has a notify.json.
func Exists(stateDir string) bool {
	_, err := os.Stat(filepath.Join(stateDir, FileName))
	return err == nil
}
