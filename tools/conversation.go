package tools

import (
	"fmt"

	"github.com/termsprawl/termsprawl/internal/ctllite"
)

// ConversationID is an agent's own conversation id (Claude Code's and
// Gemini CLI's session_id, Codex's thread id) as termsprawl keeps it for
// a restore, which puts it on the agent's command line (`--resume ID`,
// `resume ID`). It is checked where it enters — the hooks
// (termsprawlctl's lite and full), agent_report — and again where it is
// used (restore), against CONTRACT §26's pattern
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$: it never starts with '-', so it
// can never be read as a flag. Make one only with ParseConversationID.
type ConversationID string

// ConversationPattern is the pattern of a ConversationID (the MCP
// schema's "pattern").
const ConversationPattern = ctllite.ConversationPattern

// ParseConversationID checks s against ConversationPattern.
func ParseConversationID(s string) (ConversationID, error) {
	if !ctllite.ValidConversation(s) {
		return "", fmt.Errorf("conversation id %q does not match %s (letters, digits, '.', '_', ':' and '-', at most 128, starting with a letter or digit)", clip(s, 70), ConversationPattern)
	}
	return ConversationID(s), nil
}

// String is the id.
func (c ConversationID) String() string { return string(c) }
