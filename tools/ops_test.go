package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

var contractOps = []string{
	"session_info", "guide_read", "terminal_launch", "terminal_list", "terminal_snapshot",
	"terminal_read", "terminal_capture_since", "terminal_wait_for", "terminal_type",
	"terminal_press", "terminal_paste", "terminal_submit", "terminal_interrupt",
	"terminal_resize", "terminal_signal", "terminal_close", "terminal_scrollback",
	"terminal_external", "terminal_focus",
	"terminal_capabilities", "terminal_query", "terminal_click", "terminal_hover", "terminal_wheel", "terminal_drag", "terminal_write_raw",
	"watch_start", "watch_wait", "watch_cancel",
	"agent_launch", "agent_status", "agent_report", "agent_send", "agent_task",
	"agent_reply", "dialog_request", "dialog_list", "dialog_answer",
	// §13 recordings and traces
	"terminal_record", "terminal_mark", "trace_open", "trace_close", "trace_overview", "trace_frame_at", "trace_diff",
	// §20 notifications
	"notify_test",
	// CONTRACT §21: worktrees (ops_worktree.go)
	"worktree_list", "worktree_diff", "worktree_comment", "worktree_review_send", "worktree_finish", "worktree_prune",
	// §22 semantic trees
	"semantic_publish", "terminal_fill", "terminal_check", "terminal_uncheck",
	// §23 hosts
	"host_list", "host_remove",
	// §25 surviving a reboot
	"terminal_restore", "terminal_forget",
	"fleet_search", "agent_fork",
	// §28 policies, audit
	"policy_test", "audit_list", "usage_report", "budget_raise",
}

func TestOperationTable(t *testing.T) {
	t.Parallel()
	if got := OperationNames(); !slices.Equal(got, contractOps) {
		t.Fatalf("operations differ from the contract:\n got %v\nwant %v", got, contractOps)
	}
	readOnly := []string{"session_info", "guide_read", "terminal_list", "terminal_snapshot", "terminal_read",
		"terminal_capture_since", "terminal_wait_for", "terminal_scrollback", "terminal_capabilities", "terminal_query", "agent_status", "agent_task", "dialog_list",
		"trace_open", "trace_overview", "trace_frame_at", "trace_diff", "host_list"}
	for _, op := range Operations() {
		if op.Description == "" || strings.Contains(op.Description, "\n") {
			t.Errorf("%s: description must be one line", op.Name)
		}
		if !slices.Contains(GuideTopics(), op.Topic) {
			t.Errorf("%s: topic %q", op.Name, op.Topic)
		}
		if got, _ := Lookup(op.Name); got != op {
			t.Errorf("Lookup(%s)", op.Name)
		}
		key := op.Param("idempotency_key")
		if op.Mutation != (key != nil) {
			t.Errorf("%s: mutation=%v but idempotency_key=%v", op.Name, op.Mutation, key != nil)
		}
		if op.Mutation && op.Annotations.ReadOnly {
			t.Errorf("%s: a mutation cannot be read-only", op.Name)
		}
		seen := map[string]bool{}
		for _, p := range op.Params {
			if seen[p.Name] {
				t.Errorf("%s: duplicate param %s", op.Name, p.Name)
			}
			seen[p.Name] = true
			if p.Description == "" {
				t.Errorf("%s.%s: no description", op.Name, p.Name)
			}
		}
		if slices.Contains(readOnly, op.Name) && !op.Annotations.ReadOnly {
			t.Errorf("%s should be read-only", op.Name)
		}
	}
	for _, name := range []string{"terminal_close", "terminal_signal"} {
		if op, _ := Lookup(name); !op.Annotations.Destructive {
			t.Errorf("%s should be destructive", name)
		}
	}
	for _, name := range []string{"dialog_list", "dialog_answer"} {
		op, _ := Lookup(name)
		if !strings.Contains(op.Description, "other agent") || !strings.Contains(op.Description, "only deny") {
			t.Errorf("%s description must say other agents' inputs and only deny over MCP: %q", name, op.Description)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal("Lookup(nope)")
	}
	if e := UnknownOperationError("nope"); e.Kind != KindUsage || !strings.Contains(e.Msg, "terminal_list") {
		t.Fatal(e)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", MaxStringBytes)
	tests := []struct {
		op, args string
		wantErr  string // substring; "" = valid
	}{
		{"session_info", ``, ""},
		{"session_info", `null`, ""},
		{"session_info", ` {} `, ""},
		{"session_info", `{"x":1}`, `unknown argument "x"; this operation takes no arguments`},
		{"session_info", `[]`, "must be a JSON object"},
		{"session_info", `"s"`, "got a string"},
		{"session_info", `{`, "invalid JSON"},
		{"session_info", `{} {}`, "invalid JSON"},
		{"guide_read", `{"topic":"terminal"}`, ""},
		{"guide_read", `{"topic":"nope"}`, "must be one of overview, terminal, agents, dialogs"},
		{"guide_read", `{}`, `missing required argument "topic"`},
		{"terminal_type", `{"terminal":"a","text":"hi"}`, ""},
		{"terminal_type", `{"terminal":"a","terminal":"b","text":""}`, `duplicate key "terminal"`},
		{"terminal_type", `{"text":"hi"}`, `missing required argument "terminal"`},
		{"terminal_type", `{"terminal":5,"text":"hi"}`, `"terminal" must be a string, got a number`},
		{"terminal_type", `{"terminal":"","text":"hi"}`, "must not be empty"},
		{"terminal_type", `{"terminal":"a","text":"a\u0000b"}`, "NUL"},
		{"terminal_type", `{"terminal":"a","text":"` + big + `"}`, ""},
		{"terminal_type", `{"terminal":"a","text":"` + big + `b"}`, "65537 bytes, over the limit of 65536"},
		{"terminal_type", `{"terminal":"a","text":"x","foo":1}`, `unknown argument "foo"; allowed arguments: terminal, text, wait, idempotency_key`},
		{"terminal_type", `{"terminal":"a","text":null}`, "not null"},
		{"terminal_type", `{"terminal":"a","text":"x","idempotency_key":"` + strings.Repeat("k", 128) + `"}`, ""},
		{"terminal_type", `{"terminal":"a","text":"x","idempotency_key":"` + strings.Repeat("k", 129) + `"}`, "over the limit of 128"},
		{"terminal_type", `{"terminal":"a","text":"x","idempotency_key":""}`, "must not be empty"},
		{"terminal_list", `{"idempotency_key":"k"}`, "unknown argument"},
		{"terminal_signal", `{"terminal":"a","signal":"KILL"}`, ""},
		{"terminal_signal", `{"terminal":"a","signal":"STOP"}`, "must be one of INT, TERM, KILL, HUP"},
		{"terminal_resize", `{"terminal":"a","columns":80,"rows":24}`, ""},
		{"terminal_resize", `{"terminal":"a","columns":80.0,"rows":2.4e1}`, ""},
		{"terminal_resize", `{"terminal":"a","columns":1,"rows":24}`, "integer from 2 to 1000, got 1"},
		{"terminal_resize", `{"terminal":"a","columns":1001,"rows":24}`, "got 1001"},
		{"terminal_resize", `{"terminal":"a","columns":80.5,"rows":24}`, "got 80.5"},
		{"terminal_resize", `{"terminal":"a","columns":"80","rows":24}`, `"columns" must be an integer`},
		{"terminal_resize", `{"terminal":"a","columns":99999999999999999999999,"rows":24}`, "must be an integer"},
		{"terminal_resize", `{"terminal":"a","columns":80}`, `missing required argument "rows"`},
		{"terminal_snapshot", `{"terminal":"a","screenshot":true,"scrollback_lines":10}`, ""},
		{"terminal_snapshot", `{"terminal":"a","screenshot":"yes"}`, "must be true or false"},
		{"terminal_wait_for", `{"terminal":"a","wait":"text","text":"$ ","after":3,"timeout_ms":40000}`, ""},
		{"terminal_wait_for", `{"terminal":"a","wait":"exit","timeout_ms":40001}`, "from 0 to 40000, got 40001"},
		{"terminal_wait_for", `{"terminal":"a","wait":"exit","after":-1}`, "at least 0"},
		{"terminal_wait_for", `{"terminal":"a","wait":"text"}`, `wait=text needs the argument "text"`},
		{"terminal_wait_for", `{"terminal":"a","wait":"regex","pattern":"(["}`, "not a valid Go RE2"},
		{"terminal_wait_for", `{"terminal":"a","wait":"regex","pattern":"\\$ $"}`, ""},
		{"terminal_wait_for", `{"terminal":"a","wait":"quiet","text":"x"}`, "only used with wait=text"},
		{"terminal_wait_for", `{"terminal":"a","wait":"sleep"}`, "must be one of text, regex, quiet, exit, render"},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"quiet","quiet_ms":200,"timeout_ms":5000}}`, ""},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{}}`, `missing required argument "wait.wait"`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"text","text":"x","bogus":1}}`, `unknown argument "wait.bogus"`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"nope"}}`, "must be one of"},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"quiet","quiet_ms":0}}`, `"wait.quiet_ms" must be an integer from 1`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"text","text":"a\u0000"}}`, "NUL"},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"text","text":"` + big + `x"}}`, `"wait.text" is 65537 bytes`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"regex"}}`, `needs the argument "wait.pattern"`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":{"wait":"exit","after":1}}`, `unknown argument "wait.after"`},
		{"terminal_submit", `{"terminal":"a","text":"ls","wait":"text"}`, "must be an object"},
		{"terminal_interrupt", `{"terminal":"a"}`, ""},
		{"terminal_launch", `{}`, ""},
		{"terminal_launch", `{"command":["bash","-l"],"env":{"A":"b"},"env_mode":"inherit","columns":120,"rows":40,"name":"x","cwd":"/tmp"}`, ""},
		{"terminal_launch", `{"env":{"A":1}}`, `"env.A" must be a string`},
		{"terminal_launch", `{"env":{"A":"b\u0000"}}`, "NUL"},
		{"terminal_launch", `{"env":{"":"b"}}`, "must not be empty"},
		{"terminal_launch", `{"env":["A"]}`, "must be an object"},
		{"terminal_launch", `{"env_mode":"merge"}`, "must be one of replace, inherit"},
		{"terminal_launch", `{"command":[]}`, "must not be an empty array"},
		{"terminal_launch", `{"command":["a",1]}`, `"command[1]" must be a string`},
		{"terminal_launch", `{"command":"bash"}`, "must be an array of strings"},
		{"terminal_launch", `{"command":["` + big + `x"]}`, `"command[0]" is 65537 bytes`},
		{"terminal_launch", `{"name":null}`, "not null"},
		{"terminal_launch", `{"rows":1000,"columns":2}`, ""},
		{"agent_launch", `{"agent":"claude"}`, ""},
		{"agent_launch", `{"agent":"custom"}`, "agent=custom needs"},
		{"agent_launch", `{"agent":"custom","command":["my-agent"]}`, ""},
		{"agent_report", `{"state":"busy"}`, "idle, working, waiting"},
		{"agent_reply", `{"task":"t1","text":"done","state":"completed"}`, ""},
		{"agent_send", `{"node":"b","text":"hi","message_id":"m1"}`, ""},
		{"dialog_request", `{"kind":"question","title":"Pick","options":["a","b"],"timeout_ms":1000}`, ""},
		{"dialog_answer", `{"dialog":"d1","mode":"always"}`, ""},
		{"dialog_answer", `{"dialog":"d1","mode":"maybe"}`, "deny, allow, always"},
		{"watch_start", `{"terminal":"a","wait":"render"}`, ""},
		{"watch_wait", `{"watch":"w1","timeout_ms":0}`, ""},
		{"terminal_scrollback", `{"terminal":"a","from":-5000,"to":10,"search":"err"}`, ""},
	}
	for _, tc := range tests {
		op, ok := Lookup(tc.op)
		if !ok {
			t.Fatalf("no op %s", tc.op)
		}
		err := op.Validate(json.RawMessage(tc.args))
		name := tc.op + " " + clip(tc.args, 80)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", name, tc.wantErr)
			continue
		}
		e := AsError(err)
		if e.Kind != KindUsage {
			t.Errorf("%s: kind %s", name, e.Kind)
		}
		if !strings.Contains(e.Error(), tc.wantErr) {
			t.Errorf("%s:\n got  %q\n want %q", name, clip(e.Error(), 300), tc.wantErr)
		}
		if !strings.HasPrefix(e.Error(), tc.op+": ") {
			t.Errorf("%s: error should name the operation: %q", name, clip(e.Error(), 100))
		}
	}
}

func TestValidateRequestAndDecode(t *testing.T) {
	t.Parallel()
	if _, err := ValidateRequest(Request{Operation: "bogus"}); KindOf(err) != KindUsage {
		t.Fatal(err)
	}
	op, err := ValidateRequest(Request{Operation: "terminal_list"})
	if err != nil || op.Name != "terminal_list" {
		t.Fatal(op, err)
	}
	if k := IdempotencyKey(json.RawMessage(`{"idempotency_key":"abc","x":1}`)); k != "abc" {
		t.Fatal(k)
	}
	if k := IdempotencyKey(nil); k != "" {
		t.Fatal(k)
	}
	var args struct {
		Terminal string `json:"terminal"`
	}
	if err := DecodeArgs(nil, &args); err != nil {
		t.Fatal(err)
	}
	if err := DecodeArgs(json.RawMessage(`{"terminal":"x"}`), &args); err != nil || args.Terminal != "x" {
		t.Fatal(err)
	}
}

// walkSchemas calls f on every schema object in s.
func walkSchemas(path string, s map[string]any, f func(string, map[string]any)) {
	f(path, s)
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				walkSchemas(path+"."+k, m, f)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if m, ok := s[k].(map[string]any); ok {
			walkSchemas(path+"/"+k, m, f)
		}
	}
}

func TestInputSchemaStrict(t *testing.T) {
	t.Parallel()
	for _, op := range Operations() {
		s := op.InputSchema()
		walkSchemas(op.Name, s, func(path string, m map[string]any) {
			if m["type"] != "object" {
				return
			}
			ap, has := m["additionalProperties"]
			if !has {
				t.Errorf("%s: object schema without additionalProperties", path)
				return
			}
			if _, hasProps := m["properties"]; hasProps {
				if ap != false {
					t.Errorf("%s: additionalProperties = %v, want false", path, ap)
				}
				props := m["properties"].(map[string]any)
				for _, r := range m["required"].([]string) {
					if _, ok := props[r]; !ok {
						t.Errorf("%s: required %s not in properties", path, r)
					}
				}
			} else if sub, ok := ap.(map[string]any); !ok || sub["type"] != "string" {
				t.Errorf("%s: map schema must restrict values to strings", path)
			}
		})
		if !json.Valid(op.InputSchemaJSON()) {
			t.Errorf("%s: schema JSON", op.Name)
		}
		props := s["properties"].(map[string]any)
		if len(props) != len(op.Params) {
			t.Errorf("%s: %d properties for %d params", op.Name, len(props), len(op.Params))
		}
	}
	op, _ := Lookup("terminal_submit")
	wait := op.InputSchema()["properties"].(map[string]any)["wait"].(map[string]any)
	if wait["additionalProperties"] != false || !slices.Equal(wait["required"].([]string), []string{"wait"}) {
		t.Fatalf("nested wait schema: %v", wait)
	}
	op, _ = Lookup("terminal_wait_for")
	to := op.InputSchema()["properties"].(map[string]any)["timeout_ms"].(map[string]any)
	if to["maximum"] != 40000 || to["type"] != "integer" {
		t.Fatalf("timeout_ms schema: %v", to)
	}
}

func TestGuides(t *testing.T) {
	t.Parallel()
	if !slices.Equal(GuideTopics(), []string{"overview", "terminal", "agents", "dialogs", "traces"}) {
		t.Fatal(GuideTopics())
	}
	for _, topic := range GuideTopics() {
		text, ok := Guide(topic)
		if !ok || text == "" {
			t.Fatalf("guide %s missing", topic)
		}
		for _, op := range Operations() {
			if op.Topic == topic && topic != TopicOverview && !strings.Contains(text, op.Name) {
				t.Errorf("guide %s does not mention %s", topic, op.Name)
			}
		}
	}
	term, _ := Guide("terminal")
	for _, want := range []string{"result.revision", `"after"`, "terminal_submit", "wait.timeout_ms", "idempotency_key"} {
		if !strings.Contains(term, want) {
			t.Errorf("terminal guide lacks %q", want)
		}
	}
	if _, ok := Guide("nope"); ok {
		t.Fatal("unknown topic")
	}
	op, _ := Lookup("terminal_resize")
	if h := OperationHelp(op); !strings.Contains(h, "columns (an integer from 2 to 1000, required)") {
		t.Fatal(h)
	}
}

func FuzzValidateArgs(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `[]`, `{"terminal":"a","text":"x"}`,
		`{"terminal":"a","text":"x","wait":{"wait":"regex","pattern":"a+"}}`,
		`{"env":{"A":"b"},"command":["x"]}`, `{"columns":1e400}`, `{"wait":{"wait":"text"}}`,
		`{"terminal":"a","wait":"regex","pattern":"\\p{"}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	ops := Operations()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, op := range ops {
			err := op.Validate(data)
			if err != nil && KindOf(err) != KindUsage {
				t.Fatalf("%s: kind %s: %v", op.Name, KindOf(err), err)
			}
		}
	})
}
