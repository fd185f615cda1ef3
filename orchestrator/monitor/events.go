package monitor

import (
	"net/http"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// events serves the event stream: a full frame, then state and screen
// events as they happen. ?show=NODE names the node whose screen the page
// shows (the page reconnects when its tab changes); it counts as
// observed while the stream lasts.
func (m *Monitor) events(w http.ResponseWriter, r *http.Request) {
	show, ok := streamQuery(w, r)
	if !ok {
		return
	}
	m.stream(w, r, show)
}

// streamQuery reads ?show=NODE, the only parameter of a stream; it
// answers and returns false for a bad query.
func streamQuery(w http.ResponseWriter, r *http.Request) (string, bool) {
	q := r.URL.Query()
	show := q.Get("show")
	for k := range q {
		if k != "show" {
			refuse(w, http.StatusBadRequest, "unknown parameter %q: the event stream takes only show=NODE", clip(k))
			return "", false
		}
	}
	if show != "" && !tools.ValidNodeID(show) {
		refuse(w, http.StatusBadRequest, "show=%q is not a node id", clip(show))
		return "", false
	}
	return show, true
}

// ServeStream serves the same event stream as the page's (one hub: the
// same frames, state and screen events) to a request its caller has
// already authenticated: the tool server's GET /events, which checks the
// bearer token (CONTRACT §19). Its query is ?show=NODE.
func (m *Monitor) ServeStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, "method %s is refused: GET /events", clip(r.Method))
		return
	}
	show, ok := streamQuery(w, r)
	if !ok {
		return
	}
	m.stream(w, r, show)
}

// stream serves the events of the node show ("" none) until the client
// leaves, is too slow, or the monitor closes.
func (m *Monitor) stream(w http.ResponseWriter, r *http.Request, show string) {
	rc := http.NewResponseController(w)
	// A stream outlives the server's read and write timeouts.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	c := m.hub.join(r.Context(), show)
	defer m.hub.leave(c)
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return
	}
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	for {
		select {
		case ev := <-c.out:
			if _, err := w.Write(ev); err != nil {
				return
			}
			// Send what else is queued in the same flush.
			for more := true; more; {
				select {
				case ev := <-c.out:
					if _, err := w.Write(ev); err != nil {
						return
					}
				default:
					more = false
				}
			}
		case <-ping.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
		case <-c.dead:
			return // too slow: the page reconnects to a fresh frame
		case <-r.Context().Done():
			return
		case <-m.done:
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
