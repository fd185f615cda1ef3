package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestErrNotRunning(t *testing.T) {
	type setup func(t *testing.T, st testState) (session string, opts CallOptions)
	plain := func(f func(t *testing.T, st testState)) setup {
		return func(t *testing.T, st testState) (string, CallOptions) {
			f(t, st)
			return st.session, CallOptions{}
		}
	}
	tests := []struct {
		name       string
		setup      setup
		notRunning bool
		ok         bool
		alsoIs     error
	}{
		{name: "endpoint.json missing", notRunning: true, alsoIs: os.ErrNotExist,
			setup: plain(func(t *testing.T, st testState) {})},
		{name: "endpoint.json unparsable", notRunning: true,
			setup: plain(func(t *testing.T, st testState) { writeFile(t, st.endpoint, "{", 0o600) })},
		{name: "endpoint.json without instance_id", notRunning: true,
			setup: plain(func(t *testing.T, st testState) {
				writeFile(t, st.endpoint, `{"url":"http://127.0.0.1:1/call"}`, 0o600)
			})},
		{name: "endpoint.json a FIFO", notRunning: true, alsoIs: ErrNotRegularFile,
			setup: plain(func(t *testing.T, st testState) { mkfifo(t, st.endpoint) })},
		{name: "endpoint.json a directory", notRunning: true,
			setup: plain(func(t *testing.T, st testState) {
				if err := os.Mkdir(st.endpoint, 0o700); err != nil {
					t.Fatal(err)
				}
			})},
		{name: "invalid endpoint url", notRunning: true,
			setup: plain(func(t *testing.T, st testState) { st.writeEndpoint(t, "http://localhost:1/call", "i1") })},
		{name: "connection refused", notRunning: true, alsoIs: syscall.ECONNREFUSED,
			setup: plain(func(t *testing.T, st testState) { st.writeEndpoint(t, "http://"+freePort(t)+"/call", "i1") })},
		{name: "connection refused after waiting", notRunning: true,
			setup: func(t *testing.T, st testState) (string, CallOptions) {
				st.writeEndpoint(t, "http://"+freePort(t)+"/call", "i1")
				return st.session, CallOptions{Wait: 30 * time.Millisecond}
			}},
		{name: "refused with retries", notRunning: true,
			setup: func(t *testing.T, st testState) (string, CallOptions) {
				st.writeEndpoint(t, "http://"+freePort(t)+"/call", "i1")
				return st.session, CallOptions{Retry: 2}
			}},

		{name: "timeout", setup: func(t *testing.T, st testState) (string, CallOptions) {
			release := make(chan struct{})
			slow := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			t.Cleanup(func() { close(release) })
			st.writeEndpoint(t, slow.URL+"/call", "i1")
			return st.session, CallOptions{Timeout: 20 * time.Millisecond}
		}},
		{name: "reply not JSON", setup: plain(func(t *testing.T, st testState) {
			srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") })
			st.writeEndpoint(t, srv.URL+"/call", "i1")
		})},
		{name: "redirect", setup: plain(func(t *testing.T, st testState) {
			srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://127.0.0.1:1/x", http.StatusFound)
			})
			st.writeEndpoint(t, srv.URL+"/call", "i1")
		})},
		{name: "server says unavailable", setup: plain(func(t *testing.T, st testState) {
			srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
				writeResult(w, 503, Unavailable("tmux is gone", true))
			})
			st.writeEndpoint(t, srv.URL+"/call", "i1")
		})},
		{name: "session file missing", setup: func(t *testing.T, st testState) (string, CallOptions) {
			return st.dir + "/sessions/nope.json", CallOptions{}
		}},
		{name: "success", ok: true, setup: plain(func(t *testing.T, st testState) {
			_, u := startHandler(t, newFakeBackend())
			st.writeEndpoint(t, u, "i1")
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestState(t)
			session, opts := tc.setup(t, st)
			var res Result
			returnsWithin(t, "Call", func() { res = call(t, session, "terminal_list", "{}", opts) }, openFIFOWriter(st.endpoint))
			err := res.Err()
			if tc.ok {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			if res.Kind != KindUnavailable {
				t.Fatalf("kind %q: %s", res.Kind, res.Error)
			}
			if got := errors.Is(err, ErrNotRunning); got != tc.notRunning {
				t.Fatalf("errors.Is(err, ErrNotRunning) = %v, want %v; err: %v", got, tc.notRunning, err)
			}
			var te *Error
			if !errors.As(err, &te) || te.Kind != KindUnavailable || te.Error() != res.Error {
				t.Fatalf("Err() = %#v", err)
			}
			if tc.alsoIs != nil && !errors.Is(err, tc.alsoIs) {
				t.Fatalf("the cause chain of %v lost %v", err, tc.alsoIs)
			}
			// The cause is not on the wire: the envelope is byte-identical
			// and a decoded result has no cause.
			bare := res
			bare.cause = nil
			got, _ := json.Marshal(res)
			want, _ := json.Marshal(bare)
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalJSON changed:\n%s\n%s", got, want)
			}
			var back Result
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if errors.Is(back.Err(), ErrNotRunning) {
				t.Fatal("a decoded result claims ErrNotRunning")
			}
		})
	}
}

func TestErrNotRunningOnlyFromCall(t *testing.T) {
	t.Parallel()
	for _, r := range []Result{
		Unavailable("connection to x refused", true),
		ErrResult(Errorf(KindUnavailable, "x")),
		OKResult(1),
	} {
		if errors.Is(r.Err(), ErrNotRunning) {
			t.Fatalf("%+v claims ErrNotRunning", r)
		}
	}
}
