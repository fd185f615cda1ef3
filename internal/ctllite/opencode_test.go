package ctllite

import "testing"

// `termsprawlctl hook opencode EVENT` (termsprawl's OpenCode plugin) is a
// hook the lite binary knows: its state events answered here, its
// PermissionRequest handed to the full CLI (a dialog).
func TestOpencodeHook(t *testing.T) {
	t.Parallel()
	inv, ok := Parse([]string{"hook", "opencode", "Stop"})
	if !ok || inv.Mode != "hook" || inv.Agent != "opencode" || inv.Event != "Stop" {
		t.Fatalf("Parse: %+v %v", inv, ok)
	}
	for ev, want := range map[string]string{"SessionStart": "idle", "UserPromptSubmit": "working", "Stop": "idle", "StopFailure": "error"} {
		if got, known := OpencodeStates[ev]; !known || got != want {
			t.Errorf("%s: %q %v, want %q", ev, got, known, want)
		}
	}
	if !IsPermissionHook("opencode", "PermissionRequest") || IsPermissionHook("opencode", "Stop") {
		t.Fatal("opencode's PermissionRequest is the permission hook, and only it")
	}
}
