package usage

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// AddrFile keeps the receiver's port in the state directory: agents'
// environment is fixed at their launch, so the address stays the same
// across restarts of termsprawl.
const AddrFile = "otlp.json"

type addrOnDisk struct {
	Port int `json:"port"`
}

// Listen listens on loopback at the saved port, or (first run, or the
// port is taken) at a new one, which it saves. moved says the saved port
// could not be had: agents launched before export to nothing.
func Listen(dir string) (ln net.Listener, moved bool, err error) {
	path := filepath.Join(dir, AddrFile)
	var a addrOnDisk
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &a) == nil && a.Port > 0 && a.Port < 65536 {
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))); err == nil {
			return ln, false, nil
		}
		moved = true
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, false, fmt.Errorf("the telemetry receiver cannot listen on loopback: %w", err)
	}
	a.Port = ln.Addr().(*net.TCPAddr).Port
	b, _ := json.Marshal(a)
	tmp := path + ".tmp"
	// The port is kept for the next run only as a preference (exporters
	// are given the endpoint at launch): a failed write changes nothing now.
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
	return ln, moved, nil
}

// Endpoint is the base URL exporters are given
// (OTEL_EXPORTER_OTLP_ENDPOINT; they add /v1/metrics and /v1/logs).
func Endpoint(ln net.Listener) string { return "http://" + ln.Addr().String() }
