package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// Agent-facing documentation generated from the operation table
// (CONTRACT §11): `termsprawlctl agent-context` (versioned JSON),
// `termsprawlctl usage` (one screen) and `termsprawlctl skill [--out DIR]`
// (SKILL.md, reference.md, agent-context.json). Nothing here is written
// by hand per operation, so none of it can drift from the table.

// agentContextVersion is the version of the agent-context document's
// shape; it changes when a field changes meaning or goes away.
const agentContextVersion = 1

type ctlAgentContext struct{}

func (ctlAgentContext) Examples() string {
	return "termsprawlctl agent-context > termsprawl-context.json\ntermsprawlctl agent-context | jq '.operations[].name'"
}

type ctlUsage struct{}

func (ctlUsage) Examples() string { return "termsprawlctl usage" }

type ctlSkill struct {
	Out string `name:"out" placeholder:"DIR" predictor:"file" help:"Write SKILL.md, reference.md and agent-context.json into DIR (created if missing); without it SKILL.md goes to stdout."`
}

func (ctlSkill) Examples() string {
	return "termsprawlctl skill --out ~/.claude/skills/termsprawl\ntermsprawlctl skill | less"
}

// agentParam is one argument in the agent context.
type agentParam struct {
	Name        string       `json:"name"`
	Type        string       `json:"type"`
	Required    bool         `json:"required"`
	Description string       `json:"description"`
	Enum        []string     `json:"enum,omitempty"`
	Minimum     *int         `json:"minimum,omitempty"`
	Maximum     *int         `json:"maximum,omitempty"`
	Fields      []agentParam `json:"fields,omitempty"`
}

type agentOperation struct {
	Name         string           `json:"name"`
	Description  string           `json:"description"`
	Topic        string           `json:"topic"`
	Mutation     bool             `json:"mutation"`
	Annotations  agentAnnotations `json:"annotations"`
	Params       []agentParam     `json:"params"`
	InputSchema  json.RawMessage  `json:"input_schema"`
	OutputSchema json.RawMessage  `json:"output_schema"`
}

// agentAnnotations are the MCP hints, named as MCP names them.
type agentAnnotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

type agentExitCode struct {
	Code    int    `json:"code"`
	Meaning string `json:"meaning"`
}

type agentContext struct {
	Format      string             `json:"format"`
	Version     int                `json:"version"`
	Termsprawl  string             `json:"termsprawl_version"`
	Invocation  string             `json:"invocation"`
	GuideTopics []string           `json:"guide_topics"`
	Operations  []agentOperation   `json:"operations"`
	ErrorKinds  []tools.KindInfo   `json:"error_kinds"`
	Reasons     []tools.ReasonInfo `json:"error_reasons"`
	ExitCodes   []agentExitCode    `json:"exit_codes"`
}

func exitCodes() []agentExitCode {
	return []agentExitCode{
		{ExitOK, "ok"},
		{ExitNo, "termsprawl said no: the result has ok:false (kind and error say why)"},
		{ExitUsage, "usage: the command, operation or args are wrong; nothing was sent"},
		{ExitNotRunning, "termsprawl is not running: start it with `termsprawl up`"},
		{ExitWaitTimeout, "an input operation's wait timed out; the input was sent"},
	}
}

func agentParams(ps []tools.Param) []agentParam {
	out := []agentParam{}
	for _, p := range ps {
		out = append(out, agentParam{Name: p.Name, Type: string(p.Type), Required: p.Required, Description: p.Description,
			Enum: p.Enum, Minimum: p.Min, Maximum: p.Max, Fields: agentParams(p.Fields)})
	}
	return out
}

func buildAgentContext() agentContext {
	c := agentContext{Format: "termsprawl-agent-context", Version: agentContextVersion, Termsprawl: version(),
		Invocation:  "termsprawlctl call OPERATION 'JSON_ARGS' (or the same tools over termsprawlctl mcp)",
		GuideTopics: tools.GuideTopics(), ErrorKinds: tools.ErrorKinds(), Reasons: tools.ErrorReasons(), ExitCodes: exitCodes()}
	for _, op := range tools.Operations() {
		c.Operations = append(c.Operations, agentOperation{Name: op.Name, Description: op.Description, Topic: op.Topic,
			Mutation: op.Mutation, Annotations: agentAnnotations(op.Annotations), Params: agentParams(op.Params),
			InputSchema: op.InputSchemaJSON(), OutputSchema: op.OutputSchemaJSON()})
	}
	return c
}

func printAgentContext(stdout io.Writer) int {
	if err := prettyJSON(stdout, buildAgentContext()); err != nil {
		return ExitNo
	}
	return ExitOK
}

// signature is an operation's call shape, e.g.
// terminal_click {terminal, at?|ref?, button?, …}.
func signature(op *tools.Operation) string {
	var parts []string
	for _, p := range op.Params {
		if p.Name == "idempotency_key" {
			continue
		}
		n := p.Name
		if !p.Required {
			n += "?"
		}
		parts = append(parts, n)
	}
	return op.Name + " {" + strings.Join(parts, ", ") + "}"
}

// usageText is one screen: how to call, every operation by topic, exit codes.
func usageText() string {
	var b strings.Builder
	b.WriteString("termsprawlctl call OP 'JSON_ARGS'   (termsprawlctl mcp serves the same tools over MCP)\n")
	byTopic := map[string][]string{}
	for _, op := range tools.Operations() {
		byTopic[op.Topic] = append(byTopic[op.Topic], op.Name)
	}
	for _, t := range opTopics() {
		b.WriteString(wrapWords(t+":", byTopic[t], 100))
	}
	b.WriteString("e.g.:     call terminal_submit '{\"terminal\":\"t1\",\"text\":\"make\",\"wait\":{\"wait\":\"regex\",\"pattern\":\"^(ok|FAIL)\"}}'\n")
	b.WriteString("          call terminal_query '{\"terminal\":\"t1\",\"text\":\"OK\"}' then call terminal_click '{\"terminal\":\"t1\",\"ref\":\"screen:…\"}'\n")
	b.WriteString("exit: 0 ok · 1 ok:false · 2 usage (nothing sent) · 3 not running · 4 an input's wait timed out\n")
	b.WriteString("more: termsprawlctl guide TOPIC · call OP --help lists args · agent-context (JSON) · skill --out DIR\n")
	return b.String()
}

// wrapWords writes head then words, wrapped at width with an indent.
func wrapWords(head string, words []string, width int) string {
	var b strings.Builder
	line := fmt.Sprintf("%-10s", head)
	for _, w := range words {
		if len(line)+1+len(w) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = strings.Repeat(" ", 10)
		}
		line += w + " "
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// skillText is SKILL.md: when to use termsprawl and the operations in one
// line each, pointing to reference.md for the arguments.
func skillText() string {
	var b strings.Builder
	b.WriteString("---\nname: termsprawl\ndescription: Drive terminals and TUIs through termsprawl (launch programs, read screens, wait for output, type, press keys, click with the mouse, follow logs, coordinate agents). Use it when a task needs a shell or a terminal program.\n---\n\n")
	b.WriteString("# termsprawl\n\n")
	overview, _ := tools.Guide(tools.TopicOverview)
	if i := strings.Index(overview, "\nAll operations by topic:"); i >= 0 {
		overview = overview[:i]
	}
	b.WriteString(strings.TrimSpace(strings.TrimPrefix(overview, "termsprawl guide: overview")) + "\n\n")
	b.WriteString("Call an operation with `termsprawlctl call OP 'JSON_ARGS'`; exit codes: 0 ok, 1 ok:false, 2 usage, 3 not running, 4 an input's wait timed out. Arguments and results of every operation are in [reference.md](reference.md); the machine-readable form is agent-context.json.\n\n")
	for _, t := range opTopics() {
		fmt.Fprintf(&b, "## %s\n\n", t)
		for _, op := range tools.Operations() {
			if op.Topic == t {
				fmt.Fprintf(&b, "- `%s`: %s\n", signature(op), op.Description)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// referenceText is reference.md: every operation with its arguments, its
// hints and its result's top-level fields.
func referenceText() string {
	var b strings.Builder
	b.WriteString("# termsprawl operations\n\nGenerated from termsprawl's operation table (`termsprawlctl skill`).\n")
	for _, t := range opTopics() {
		fmt.Fprintf(&b, "\n## %s\n", t)
		for _, op := range tools.Operations() {
			if op.Topic != t {
				continue
			}
			help := strings.TrimPrefix(tools.OperationHelp(op), "\n")
			if _, rest, ok := strings.Cut(help, "\n"); ok {
				help = rest // the first line repeats the description
			}
			fmt.Fprintf(&b, "\n### %s\n\n%s\n\n```\n%s```\n", op.Name, op.Description, help)
			if op.Mutation {
				fmt.Fprintf(&b, "\nReturns a receipt {action, result, idempotency_key?, state}; result fields: %s\n", strings.Join(resultFields(op), ", "))
			} else {
				fmt.Fprintf(&b, "\nResult fields: %s\n", strings.Join(resultFields(op), ", "))
			}
		}
	}
	b.WriteString("\n## Errors\n\n")
	for _, k := range tools.ErrorKinds() {
		fmt.Fprintf(&b, "- `%s`: %s\n", k.Kind, k.Meaning)
	}
	for _, r := range tools.ErrorReasons() {
		fmt.Fprintf(&b, "- reason `%s` (%s): %s\n", r.Reason, r.Kind, r.Meaning)
	}
	return b.String()
}

// opTopics are the guide topics, then any other topic an operation names,
// so every operation is listed whatever its topic.
func opTopics() []string {
	topics := tools.GuideTopics()
	for _, op := range tools.Operations() {
		found := false
		for _, t := range topics {
			found = found || t == op.Topic
		}
		if !found {
			topics = append(topics, op.Topic)
		}
	}
	return topics
}

// resultFields are the top-level properties of an operation's output schema.
func resultFields(op *tools.Operation) []string {
	props, _ := tools.SchemaOf(op.Result)["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func runSkill(stdout, stderr io.Writer, out string) int {
	if out == "" {
		fmt.Fprint(stdout, skillText())
		return ExitOK
	}
	ctx, err := json.MarshalIndent(buildAgentContext(), "", "  ")
	if err == nil {
		err = os.MkdirAll(out, 0o755)
	}
	files := map[string][]byte{"SKILL.md": []byte(skillText()), "reference.md": []byte(referenceText()), "agent-context.json": append(ctx, '\n')}
	for _, name := range []string{"SKILL.md", "reference.md", "agent-context.json"} {
		if err != nil {
			break
		}
		err = os.WriteFile(filepath.Join(out, name), files[name], 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: skill: %v\n", ctlName, err)
		return ExitNo
	}
	fmt.Fprintf(stdout, "wrote SKILL.md, reference.md and agent-context.json to %s\n", out)
	return ExitOK
}
