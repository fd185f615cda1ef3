package tools

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/ctllite"
)

func TestParseConversationID(t *testing.T) {
	t.Parallel()
	good := []string{"a", "0f3c2a1e-77aa-4c1e-9d0b-5b1f3e9a2c11", "thread:1.2_3", strings.Repeat("z", 128)}
	bad := []string{"", "-", "--dangerously-skip-permissions", "-r", ".x", ":x", "_x", "a b", "a\x00", "a\x1b[2K", "a/b", "a=b",
		strings.Repeat("z", 129), "é", "a\u202e"}
	for _, s := range good {
		if id, err := ParseConversationID(s); err != nil || id.String() != s {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := ParseConversationID(s); err == nil || !strings.Contains(err.Error(), ConversationPattern) {
			t.Errorf("%q accepted or unclear: %v", s, err)
		}
	}
}

// The lite hook's hand-written check is the pattern.
func FuzzConversationID(f *testing.F) {
	for _, s := range []string{"a", "-a", "a-", "a:b.c_d", "--x", strings.Repeat("a", 128), strings.Repeat("a", 129), "a\n"} {
		f.Add(s)
	}
	re := regexp.MustCompile(ConversationPattern)
	f.Fuzz(func(t *testing.T, s string) {
		if ctllite.ValidConversation(s) != re.MatchString(s) {
			t.Fatalf("%q: hand-written %v, pattern %v", s, ctllite.ValidConversation(s), re.MatchString(s))
		}
	})
}

// agent_report refuses a conversation id that does not match.
func TestAgentReportConversationChecked(t *testing.T) {
	t.Parallel()
	op, _ := Lookup("agent_report")
	if err := op.Validate([]byte(`{"event":"Stop","conversation":"--dangerously-skip-permissions"}`)); err == nil {
		t.Fatal("a forged conversation id passed validation")
	}
	if err := op.Validate([]byte(`{"event":"Stop","conversation":"abc-123"}`)); err != nil {
		t.Fatal(err)
	}
	if p := op.InputSchema()["properties"].(map[string]any)["conversation"].(map[string]any)["pattern"]; p != ConversationPattern {
		t.Fatalf("schema pattern %v", p)
	}
}
