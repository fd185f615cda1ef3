package tools

import "time"

// Host states as host_list reports them (CONTRACT §23).
const (
	HostStateConnected    = "connected"
	HostStateReconnecting = "reconnecting"
	HostStateUnreachable  = "unreachable"
)

// HostInfo is one host of host_list.
type HostInfo struct {
	Name string `json:"name"`
	// Dest is the ssh destination.
	Dest string `json:"dest"`
	// State is connected, reconnecting (an attempt under way) or
	// unreachable.
	State string `json:"state"`
	// Nodes counts the host's nodes termsprawl lists (live or not).
	Nodes int `json:"nodes"`
	// RoundTripMS is one command's round trip to the host's tmux server,
	// measured for this answer; absent when not connected.
	RoundTripMS *float64 `json:"round_trip_ms,omitempty"`
	// Since is when State last changed.
	Since time.Time `json:"since"`
	// Socket is the host's tmux server (tmux -L), this orchestrator's own.
	Socket string `json:"socket"`
	// Error is why the host is not connected, when known.
	Error      string `json:"error,omitempty"`
	Reconnects int    `json:"reconnects"`
	// Tmux is the host's tmux version; Ctl its termsprawlctl ("" none:
	// agents there cannot call termsprawl).
	Tmux string `json:"tmux,omitempty"`
	Ctl  string `json:"ctl,omitempty"`
}

// HostList is host_list's value.
type HostList struct {
	Hosts []HostInfo `json:"hosts"`
}

// HostRemoved is host_remove's result.
type HostRemoved struct {
	Host string `json:"host"`
	// Closed are the nodes closed on the host (their programs ended).
	Closed []string `json:"closed"`
	// Forgotten are nodes only forgotten here: the host could not be
	// reached, so their programs may still run there.
	Forgotten []string `json:"forgotten"`
	// Note says what was done, in a sentence.
	Note string `json:"note"`
}
