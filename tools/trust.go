package tools

import (
	"fmt"
	"net"
	"net/http"
)

// MarkAuthenticated tells ListenLoopback's listener that r's connection
// passed a credential check other than a bearer token (the monitor's
// capability URL): like an authenticated /call connection it is then not
// held to the short idle cap of unauthenticated connections, and is not
// the first closed when the connection cap is reached.
func MarkAuthenticated(r *http.Request) { markAuthenticated(r.Context()) }

// ListenLoopbackOn is ListenLoopback on 127.0.0.1:port, when that port is
// free (port 0: a kernel-chosen one). The orchestrator asks for the port
// it served on last, so an open monitor page reconnects after a restart.
func ListenLoopbackOn(port int) (net.Listener, error) {
	if port <= 0 || port > 65535 {
		return ListenLoopback()
	}
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	return newConnLimitListener(l, MaxConnections), nil
}
