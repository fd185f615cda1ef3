package toolserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// TestMonitorMountedOnServe: Serve serves the monitor on the /call
// listener: the page at the operator's monitor_url, refusals for a wrong
// capability, a foreign Origin or Host and other paths, /call untouched;
// agents are not told the URL.
func TestMonitorMountedOnServe(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	url := monitorURL(t, s.op())
	base := strings.TrimSuffix(s.info.Endpoint.URL, "/call")
	if !strings.HasPrefix(url, base+"/monitor/") || s.info.MonitorURL != url {
		t.Fatalf("monitor URL %q (ServeInfo %q), endpoint %q", url, s.info.MonitorURL, s.info.Endpoint.URL)
	}
	fetch := func(u string, mod func(*http.Request)) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if mod != nil {
			mod(req)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := fetch(url, nil); code != 200 || !strings.Contains(body, "termsprawl monitor") {
		t.Fatalf("page: %d %.200q", code, body)
	}
	wrong := base + "/monitor/" + strings.Repeat("0", 32) + "/"
	for _, c := range []struct {
		name, url string
		mod       func(*http.Request)
		code      int
	}{
		{"wrong capability", wrong, nil, 404},
		{"foreign Origin", url, func(r *http.Request) { r.Header.Set("Origin", "http://example.com") }, 403},
		{"foreign Host", url, func(r *http.Request) { r.Host = "attacker.example:80" }, 403},
		{"other path", base + "/index.html", nil, 404},
		{"GET /call", base + "/call", nil, 405},
	} {
		if code, body := fetch(c.url, c.mod); code != c.code {
			t.Errorf("%s: %d %q, want %d", c.name, code, body, c.code)
		}
	}
	id := apiLaunch(t, s.op(), "sleep", "600")
	var info tools.SessionInfo
	apiOK(t, s.session(id), "session_info", nil, &info)
	if info.MonitorURL != "" {
		t.Fatalf("an agent was told the monitor's URL: %s", info.MonitorURL)
	}
}
