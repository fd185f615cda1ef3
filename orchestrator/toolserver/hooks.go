package toolserver

import (
	"net/http"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
)

// hooks are the tool server's test seams, set by the package's tests on
// one server (through serve, or on a running server's hooks) to widen a
// race window or watch a step. They are unexported fields, not package
// variables: a binary has no way to set one and none is a symbol of it.
// Each is nil unless a test set it.
type hooks struct {
	// notLive runs when Authenticate finds a node's token whose node is
	// not in the registry.
	notLive func(node string)
	// batchElement runs as a batch element starts; the func it returns
	// runs as the element ends.
	batchElement func() func()
	// mcpDoor gets every MCP door built.
	mcpDoor func(*mcpDoor)
	// mcpFactory, when set, is this server's MCP engine in place of the
	// one installed by UseMCP (tests serve /mcp side by side).
	mcpFactory MCPEngineFactory
	// mcpNow, when set, is the clock of /mcp's expiry and rate limits
	// (tests expire sessions without waiting ten minutes).
	mcpNow func() time.Time
	// mcpEngine runs before each request reaches the MCP engine (tests end
	// a session there, as a concurrent DELETE would).
	mcpEngine func(*http.Request)
	// engine is handed the server's engine as it starts (tests set the
	// engine's own seams through it: orchestrator.SetBeforeRegisterHook).
	engine func(*orchestrator.Orchestrator)
	// beforeRegister runs in every launch after the node's program
	// started and its mirror attached, just before the node is registered
	// (apiStart wires it to the engine's seam through engine).
	beforeRegister func(id string)
	// nodeGone runs on the engine event feed's goroutine before a gone
	// node's state is dropped (feed.go).
	nodeGone func(id string)
}
