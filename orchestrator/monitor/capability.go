package monitor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/termsprawl/termsprawl/tools"
)

// FileName is the monitor's file in the state directory: its capability
// and the port it was last served on, mode 0600.
const FileName = "monitor.json"

// capabilityBytes is the capability's size: 128 random bits.
const capabilityBytes = 16

// Saved is monitor.json.
type Saved struct {
	Capability string `json:"capability"`
	// Port is the loopback port the monitor was last served on: the next
	// orchestrator listens there again when it is free, so an open page
	// reconnects to the same URL after a restart.
	Port int `json:"port,omitempty"`
}

// Path is monitor.json of stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// validCapability: 32 lower-case hex digits.
func validCapability(s string) bool {
	if len(s) != 2*capabilityBytes {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Load reads monitor.json of stateDir, or makes a new capability and
// writes it there (mode 0600) when the file is missing or unusable.
func Load(stateDir string) (Saved, error) {
	path := Path(stateDir)
	var s Saved
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &s) == nil && validCapability(s.Capability) {
		return s, nil
	}
	// Missing or unusable (bad JSON, a capability edited by hand): a new
	// capability replaces it; pages with the old URL stop working, which
	// is the safe side.
	var b [capabilityBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Saved{}, fmt.Errorf("monitor capability: %w", err)
	}
	s = Saved{Capability: hex.EncodeToString(b[:])}
	if err := tools.WriteJSONAtomic(path, s); err != nil {
		return Saved{}, fmt.Errorf("write %s: %w", path, err)
	}
	return s, nil
}

// SavePort records the port the monitor is served on.
func SavePort(stateDir string, s Saved, port int) error {
	if s.Port == port {
		return nil
	}
	s.Port = port
	if err := tools.WriteJSONAtomic(Path(stateDir), s); err != nil {
		return fmt.Errorf("write %s: %w", Path(stateDir), err)
	}
	return nil
}
