package cli

import (
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/tools"
)

// keys returns the detach and answer keys of termsprawl's tmux servers
// (CONTRACT §26): config.toml's [keys], or the defaults (also when the
// file cannot be read: up refuses such a file and says why).
func (h *human) keys() (detach, answer string) {
	if c, err := config.Load(h.stateDir); err == nil {
		detach, answer = c.Keys.Detach, c.Keys.Answer
	}
	return orDefaultKeys(detach, answer)
}

func orDefaultKeys(detach, answer string) (string, string) {
	if detach == "" {
		detach = tools.DefaultDetachKey
	}
	if answer == "" {
		answer = tools.DefaultAnswerKey
	}
	return detach, answer
}

// keysConfig sets cfg's keys from config.toml; a file up cannot use is
// refused with its line and fix.
func (h *human) keysConfig(cfg *orchestrator.Config) bool {
	c, err := config.Load(h.stateDir)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: up: %v\n", humanName, err)
		return false
	}
	cfg.DetachKey, cfg.AnswerKey = c.Keys.Detach, c.Keys.Answer
	return true
}

// detachKey is h.keys()'s detach key.
func detachKey(h *human) string {
	d, _ := h.keys()
	return d
}
