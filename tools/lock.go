package tools

import (
	"encoding/json"
	"fmt"
)

// LockInfo is server.lock's content: who holds the state dir.
type LockInfo struct {
	PID        int    `json:"pid"`
	InstanceID string `json:"instance_id"`
}

// ReadLock reads <state>/server.lock.
func ReadLock(stateDir string) (LockInfo, error) {
	var li LockInfo
	path := LockPath(stateDir)
	b, err := ReadFileBounded(path, MaxStateFileBytes)
	if err != nil {
		return li, err
	}
	if err := json.Unmarshal(b, &li); err != nil {
		return li, fmt.Errorf("parse %s: %w", path, err)
	}
	return li, nil
}
