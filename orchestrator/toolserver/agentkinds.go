package toolserver

import (
	"fmt"
	"slices"

	"github.com/termsprawl/termsprawl/tools"
)

// The per-kind table of what each agent program offers termsprawl
// (CONTRACT §29; README's supported agents table, docs/CHOICES.md): how
// it resumes and forks a conversation, and how its telemetry is pointed
// at an OTLP endpoint. Wiring of hooks and MCP is agentwire.go.

// agentKind is one program's row.
type agentKind struct {
	// Tested is the npm release the end-to-end tests run.
	Tested string
	// Resume is the command that resumes conversation id, from the kept
	// command (its own program first), adding only the resume form.
	Resume func(cmd []string, id string) []string
	// Fork is the command that starts a new conversation from id's, nil
	// where the program has no fork (for fork, CONTRACT §30).
	Fork func(cmd []string, id string) []string
	// Telemetry is what points the program's OpenTelemetry export at an
	// OTLP/HTTP endpoint with one header ("Name=Value"): arguments to
	// append and environment to add (nil, nil: the program has none).
	Telemetry func(endpoint, header string) (args []string, env map[string]string)
	// TelemetryMeasured says whether what Telemetry sets was measured
	// against a loopback receiver (false: from the program's docs only).
	TelemetryMeasured bool
}

// agentKinds are the known programs.
var agentKinds = map[string]agentKind{
	"claude": {
		Tested: "@anthropic-ai/claude-code@2.1.328 (and 2.1.197)",
		Resume: func(cmd []string, id string) []string { return append(slices.Clone(cmd), "--resume", id) },
		Fork: func(cmd []string, id string) []string {
			return append(slices.Clone(cmd), "--resume", id, "--fork-session")
		},
		// Measured (docs/USAGE.md; DESIGN.md "Facts for the fourth floor"):
		// Claude Code exports nothing over HTTP unless the protocol is an
		// HTTP one, and sends header values as written (no
		// percent-decoding), so the token needs no escaping. Delta sums:
		// each export adds (cumulative works too).
		Telemetry: func(endpoint, header string) ([]string, map[string]string) {
			return nil, map[string]string{"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
				"OTEL_EXPORTER_OTLP_HEADERS": header, "OTEL_METRIC_EXPORT_INTERVAL": telemetryIntervalMS, "OTEL_LOGS_EXPORT_INTERVAL": telemetryIntervalMS,
				"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta"}
		},
		TelemetryMeasured: true,
	},
	"codex": {
		Tested: "@openai/codex@0.169.0",
		// `codex resume ID` and `codex fork ID` are subcommands: the
		// kept arguments (flags) follow them.
		Resume: func(cmd []string, id string) []string { return append([]string{cmd[0], "resume", id}, cmd[1:]...) },
		Fork:   func(cmd []string, id string) []string { return append([]string{cmd[0], "fork", id}, cmd[1:]...) },
		Telemetry: func(endpoint, header string) ([]string, map[string]string) {
			name, value, _ := cutHeader(header)
			return []string{"-c", fmt.Sprintf("otel.exporter={otlp-http={endpoint=%q,protocol=\"binary\",headers={%q=%q}}}", endpoint+"/v1/logs", name, value),
				"-c", "otel.log_user_prompt=false"}, nil
		},
	},
	"gemini": {
		Tested: "@google/gemini-cli@0.61.0",
		Resume: func(cmd []string, id string) []string { return append(slices.Clone(cmd), "--resume", id) },
		// Gemini CLI 0.61.0 has no fork of a session.
		// Measured with 0.61.0 (docs/USAGE.md): its own switches turn the
		// OTLP/HTTP exporters on (JSON, to /v1/metrics, /v1/logs and
		// /v1/traces beneath the endpoint); the OpenTelemetry SDK under
		// them takes the header from OTEL_EXPORTER_OTLP_HEADERS. Its sums
		// are cumulative. Prompts are not logged.
		Telemetry: func(endpoint, header string) ([]string, map[string]string) {
			return nil, map[string]string{"GEMINI_TELEMETRY_ENABLED": "true", "GEMINI_TELEMETRY_TARGET": "local",
				"GEMINI_TELEMETRY_OTLP_ENDPOINT": endpoint, "GEMINI_TELEMETRY_OTLP_PROTOCOL": "http",
				"GEMINI_TELEMETRY_LOG_PROMPTS": "false", "OTEL_EXPORTER_OTLP_HEADERS": header}
		},
		TelemetryMeasured: true,
	},
	"opencode": {
		Tested: "opencode-ai@1.18.33",
		Resume: func(cmd []string, id string) []string { return append(slices.Clone(cmd), "--session", id) },
		Fork:   func(cmd []string, id string) []string { return append(slices.Clone(cmd), "--session", id, "--fork") },
		// OpenCode 1.18.33 exports no OpenTelemetry termsprawl can point
		// per node: no Telemetry.
	},
}

// checkedConversation is id if it may be put on a command line
// (CONTRACT §26: tools.ParseConversationID).
func checkedConversation(id string) (string, error) {
	conv, err := tools.ParseConversationID(id)
	if err != nil {
		return "", err
	}
	return conv.String(), nil
}

// cutHeader splits "Name=Value".
func cutHeader(h string) (string, string, bool) {
	for i := 0; i < len(h); i++ {
		if h[i] == '=' {
			return h[:i], h[i+1:], true
		}
	}
	return h, "", false
}

// AgentTelemetry is what points agent kind's telemetry at endpoint with
// header (for the usage receiver): arguments and environment to add to
// its launch, and ok false where the program has no way.
func AgentTelemetry(kind, endpoint, header string) (args []string, env map[string]string, ok bool) {
	k, known := agentKinds[kind]
	if !known || k.Telemetry == nil {
		return nil, nil, false
	}
	args, env = k.Telemetry(endpoint, header)
	return args, env, true
}

// AgentFork is the command that forks conversation id of agent kind from
// its kept command, ok false where the program has no fork.
func AgentFork(kind string, cmd []string, id string) ([]string, bool) {
	k, known := agentKinds[kind]
	id, err := checkedConversation(id)
	if !known || k.Fork == nil || err != nil || len(cmd) == 0 || !isAgentProgram(kind, cmd[0]) {
		return nil, false
	}
	return k.Fork(cmd, id), true
}
