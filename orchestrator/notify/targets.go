package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// Webhook POSTs the event's JSON to a URL. An ntfy-style URL
// (https://ntfy.sh/TOPIC) works: ntfy takes the body as the message and
// the Title header as its title.
type Webhook struct {
	URL    string
	Client *http.Client // nil: a client that follows no redirects
}

// Name is "webhook=URL".
func (w Webhook) Name() string { return KindWebhook + "=" + w.URL }

// Send posts e; any status but 2xx is an error.
func (w Webhook) Send(ctx context.Context, e Event) (string, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return "", fmt.Errorf("encode the notification: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "termsprawl")
	req.Header.Set("Title", headerSafe(e.Title))
	c := w.Client
	if c == nil {
		c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	answer := "HTTP " + resp.Status
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answer, fmt.Errorf("webhook %s answered %s", w.URL, resp.Status)
	}
	return answer, nil
}

// headerSafe makes s one line fit for an HTTP header (ASCII printable).
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// Desktop shows the event through the freedesktop notification service
// (org.freedesktop.Notifications on the session bus): with notify-send
// (Debian: libnotify-bin) when it is on PATH, else gdbus (libglib2.0-bin)
// or dbus-send (dbus).
type Desktop struct {
	// LookPath finds programs (nil: exec.LookPath); Env is their
	// environment (nil: this process's).
	LookPath func(string) (string, error)
	Env      []string
}

// Name is "desktop".
func (Desktop) Name() string { return KindDesktop }

// DesktopInstallHint names the Debian packages the desktop target uses.
const DesktopInstallHint = "apt-get install libnotify-bin dbus (or libglib2.0-bin for gdbus)"

// Send runs the first tool found.
func (d Desktop) Send(ctx context.Context, e Event) (string, error) {
	look := d.LookPath
	if look == nil {
		look = exec.LookPath
	}
	env := d.Env
	if env == nil {
		env = os.Environ()
	}
	if !hasBus(env) {
		return "", errors.New("no session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no /run/user/UID/bus): desktop notifications need a desktop session")
	}
	title, body := plain(e.Title), plain(e.Text)
	var argv []string
	if p, err := look("notify-send"); err == nil {
		argv = []string{p, "--app-name=termsprawl", "--print-id", title, body}
	} else if p, err := look("gdbus"); err == nil {
		argv = []string{p, "call", "--session", "--dest", "org.freedesktop.Notifications",
			"--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify",
			"termsprawl", "0", "", title, body, "[]", "{}", "10000"}
	} else if p, err := look("dbus-send"); err == nil {
		argv = []string{p, "--session", "--print-reply", "--dest=org.freedesktop.Notifications",
			"/org/freedesktop/Notifications", "org.freedesktop.Notifications.Notify",
			"string:termsprawl", "uint32:0", "string:", "string:" + title, "string:" + body,
			"array:string:", "dict:string:string:", "int32:10000"}
	} else {
		return "", errors.New("no notify-send, gdbus or dbus-send on PATH: " + DesktopInstallHint)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	answer := strings.Join(strings.Fields(string(out)), " ")
	if err != nil {
		return answer, fmt.Errorf("%s: %w: %s", argv[0], err, answer)
	}
	if answer == "" {
		answer = "shown"
	}
	return "notification " + answer, nil
}

// hasBus reports whether env names a session bus (or the default one
// exists).
func hasBus(env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok && v != "" {
			return true
		}
	}
	_, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid()))
	return err == nil
}

// plain is s on one line: whitespace runs become one space, every
// other control is made visible (tools.VisibleLine, CONTRACT §26).
func plain(s string) string {
	return tools.VisibleLine(strings.Join(strings.Fields(s), " "))
}

// OSC returns the desktop-notification sequences for a terminal: OSC 9
// (iTerm2, WezTerm, Windows Terminal, Ghostty) and OSC 777 (foot,
// WezTerm, Ghostty, rxvt), each ended by BEL. Control characters are
// made visible (plain) and 777's title loses its ';' (the field
// separator).
func OSC(title, body string) []byte {
	t, b := plain(title), plain(body)
	var out bytes.Buffer
	fmt.Fprintf(&out, "\x1b]9;%s: %s\a", t, b)
	fmt.Fprintf(&out, "\x1b]777;notify;%s;%s\a", strings.ReplaceAll(t, ";", ","), b)
	return out.Bytes()
}
