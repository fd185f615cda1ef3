package ctllite

import (
	"bufio"
	"strings"
	"testing"
)

// Only http://127.0.0.1:PORT/call in canonical form is taken (the token
// never goes elsewhere; the full CLI words the refusal of anything else).
func TestLoopbackHostPort(t *testing.T) {
	t.Parallel()
	if hp, ok := loopbackHostPort("http://127.0.0.1:8080/call"); !ok || hp != "127.0.0.1:8080" {
		t.Errorf("canonical URL: %q %v", hp, ok)
	}
	for _, u := range []string{"", "http://127.0.0.1:8080/call?x", "https://127.0.0.1:8080/call", "http://localhost:8080/call",
		"http://127.0.0.1:08080/call", "http://127.0.0.1:0/call", "http://127.0.0.1:65536/call", "http://127.0.0.1:80/call/",
		"http://u@127.0.0.1:80/call", "http://127.0.0.1:80/calls", "http://127.0.0.1:+80/call"} {
		if _, ok := loopbackHostPort(u); ok {
			t.Errorf("%q is taken", u)
		}
	}
}

// Replies are read by Content-Length, chunked, or to the end; a short
// body is an error, never a result.
func TestReadReply(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ raw, body string }{
		"length":  {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{}\nextra", "{}\n"},
		"chunked": {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n1;x\r\n\n\r\n0\r\n\r\n", "{}\n"},
		"to EOF":  {"HTTP/1.0 200 OK\r\n\r\n{}", "{}"},
	} {
		status, _, body, err := readReply(bufio.NewReader(strings.NewReader(c.raw)))
		if err != nil || status != 200 || string(body) != c.body {
			t.Errorf("%s: status %d body %q err %v", name, status, body, err)
		}
	}
	for name, raw := range map[string]string{
		"short":      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
		"no headers": "HTTP/1.1 200 OK\r\n",
		"not http":   "SSH-2.0-OpenSSH\r\n\r\n",
		"bad length": "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	} {
		if _, _, _, err := readReply(bufio.NewReader(strings.NewReader(raw))); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
