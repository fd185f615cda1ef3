package semantic

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const dialog = `{"id":"d","role":"dialog","name":"Settings","bounds":{"row":0,"column":0,"width":30,"height":10},"children":[
 {"id":"name","role":"textbox","name":"Name","value":"bob","test_id":"name-field","bounds":{"row":2,"column":0,"width":20,"height":1},"state":{"focused":true}},
 {"id":"agree","role":"checkbox","name":"I agree","bounds":{"row":3,"column":0,"width":11,"height":1}},
 {"id":"list","role":"list","bounds":{"row":5,"column":0,"width":12,"height":3},"children":[
  {"id":"i0","role":"listitem","name":"apple","bounds":{"row":5,"column":0,"width":7,"height":1},"state":{"selected":true}},
  {"id":"i1","role":"listitem","name":"banana","bounds":{"row":6,"column":0,"width":8,"height":1}},
  {"id":"i2","role":"listitem","name":"banana split","bounds":{"row":7,"column":0,"width":14,"height":1}}]},
 {"id":"ok","role":"button","name":"OK","test_id":"ok-btn","bounds":{"row":9,"column":0,"width":6,"height":1}},
 {"id":"cancel","role":"button","name":"Cancel","bounds":{"row":9,"column":8,"width":10,"height":1}}]}`

func mustDecode(t *testing.T, s string) *Node {
	t.Helper()
	n, err := Decode([]byte(s), 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	many := func(n int) string {
		var kids []string
		for i := range n {
			kids = append(kids, fmt.Sprintf(`{"id":"n%d","role":"text","bounds":{"row":0,"column":0,"width":1,"height":1}}`, i))
		}
		return `{"id":"root","role":"window","bounds":{"row":0,"column":0,"width":80,"height":24},"children":[` + strings.Join(kids, ",") + `]}`
	}
	node := func(extra string) string {
		return `{"id":"a","role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}` + extra + `}`
	}
	cases := []struct {
		name, tree, reason string
	}{
		{"unknown role", `{"id":"a","role":"slider","bounds":{"row":0,"column":0,"width":1,"height":1}}`, "unknown-role"},
		{"no role", `{"id":"a","bounds":{"row":0,"column":0,"width":1,"height":1}}`, "unknown-role"},
		{"5000 nodes", many(5000), "too-many-nodes"},
		{"4096 nodes and a root", many(4096), "too-many-nodes"},
		{"over 1 MiB", node(`,"name":"` + strings.Repeat("x", MaxBytes) + `"`), "too-large"},
		{"bounds off the right", `{"id":"a","role":"button","bounds":{"row":0,"column":79,"width":2,"height":1}}`, "bounds-off-screen"},
		{"bounds below", `{"id":"a","role":"button","bounds":{"row":24,"column":0,"width":1,"height":1}}`, "bounds-off-screen"},
		{"negative", `{"id":"a","role":"button","bounds":{"row":-1,"column":0,"width":1,"height":1}}`, "bounds-off-screen"},
		{"invalid utf-8", node(`,"name":"` + "\xff\xfe" + `"`), "invalid-utf8"},
		{"escaped lone surrogate is replaced, not refused", node(`,"name":"\ud800"`), ""},
		{"unknown field", node(`,"colour":"red"`), "invalid-tree"},
		{"duplicate id", `{"id":"a","role":"window","bounds":{"row":0,"column":0,"width":1,"height":1},"children":[` + node("") + `]}`, "invalid-tree"},
		{"no id", `{"role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}}`, "invalid-tree"},
		{"id with @", `{"id":"a@1","role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}}`, "invalid-tree"},
		{"not an object", `[1]`, "invalid-tree"},
		{"trailing data", node("") + `{}`, "invalid-tree"},
		{"null child", `{"id":"a","role":"window","bounds":{"row":0,"column":0,"width":1,"height":1},"children":[null]}`, "invalid-tree"},
		{"long name", node(`,"name":"` + strings.Repeat("x", MaxTextBytes+1) + `"`), "too-large"},
		{"fine", dialog, ""},
		{"4095 children and a root", many(4095), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.tree), 80, 24)
			if c.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Reason != c.reason {
				t.Fatalf("err %v, want reason %s", err, c.reason)
			}
			if len(se.Msg) > 600 {
				t.Fatalf("message too long (%d bytes)", len(se.Msg))
			}
		})
	}
}

func TestLocators(t *testing.T) {
	t.Parallel()
	root := mustDecode(t, dialog)
	ids := func(ms []Flat) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		loc  Locator
		want string
		err  string
	}{
		{Locator{Role: "button"}, "ok,cancel", ""},
		{Locator{Role: "button", Name: "OK"}, "ok", ""},
		{Locator{Name: "ok"}, "", ""},
		{Locator{Name: "/^ok$/i"}, "ok", ""},
		{Locator{Role: "listitem", Name: "/banana/"}, "i1,i2", ""},
		{Locator{Role: "listitem", Name: "/banana/", Nth: 2}, "i2", ""},
		{Locator{Role: "listitem", Nth: 9}, "", ""},
		{Locator{TestID: "ok-btn"}, "ok", ""},
		{Locator{Text: "bob"}, "name", ""},
		{Locator{Text: "/^I agr/"}, "agree", ""},
		{Locator{Label: "Name"}, "", ""},
		{Locator{Role: "slider"}, "", "not a role"},
		{Locator{Name: "/(/"}, "", "not a valid"},
		{Locator{Name: "/x/q"}, "", "unknown regex flag"},
		{Locator{}, "", "empty"},
	}
	for _, c := range cases {
		ms, err := Find(root, c.loc)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.loc, err, c.err)
			}
			continue
		}
		if err != nil || ids(ms) != c.want {
			t.Errorf("%s: %q %v, want %q", c.loc, ids(ms), err, c.want)
		}
	}
	if _, ms, err := One(root, Locator{Role: "button"}); !errors.Is(err, ErrAmbiguous) || len(ms) != 2 {
		t.Fatalf("One ambiguous: %v %d", err, len(ms))
	}
	if f, _, err := One(root, Locator{Role: "button", Nth: 2}); err != nil || f.ID != "cancel" {
		t.Fatalf("One nth: %v %v", f.ID, err)
	}
}

func TestLinesAndDiff(t *testing.T) {
	t.Parallel()
	root := mustDecode(t, dialog)
	lines := Lines(root, 42)
	want := []string{
		`dialog "Settings" ref=semantic:d@42 bounds=(0,0,30,10)`,
		`  textbox "Name" value="bob" test_id="name-field" ref=semantic:name@42 bounds=(2,0,20,1) focused`,
		`  checkbox "I agree" ref=semantic:agree@42 bounds=(3,0,11,1)`,
	}
	if !slices.Equal(lines[:3], want) {
		t.Fatalf("lines:\n%s", strings.Join(lines, "\n"))
	}
	var cur Node
	json.Unmarshal([]byte(strings.Replace(dialog, `"name":"I agree",`, `"name":"I agree","state":{"checked":true},`, 1)), &cur)
	cur.Children = slices.DeleteFunc(cur.Children, func(n *Node) bool { return n.ID == "cancel" })
	cur.Children = append(cur.Children, &Node{ID: "help", Role: "button", Name: "Help"})
	d := Diff(root, 42, &cur, 50)
	if len(d.Added) != 1 || !strings.HasPrefix(d.Added[0], `  button "Help" ref=semantic:help@50`) ||
		len(d.Removed) != 1 || !strings.Contains(d.Removed[0], "semantic:cancel@42") ||
		len(d.Changed) != 1 || !strings.Contains(d.Changed[0], "agree@50") || !strings.HasSuffix(d.Changed[0], "checked") {
		t.Fatalf("diff %+v", d)
	}
	if d := Diff(nil, 0, root, 1); len(d.Added) != len(lines) {
		t.Fatalf("diff from nothing: %+v", d)
	}
	if d := Diff(root, 1, root, 2); len(d.Added)+len(d.Removed)+len(d.Changed) != 0 {
		t.Fatalf("no change: %+v", d)
	}
}

func TestRefsStatesCenter(t *testing.T) {
	t.Parallel()
	id, rev, ok, err := ParseRef("semantic:n8@42")
	if !ok || err != nil || id != "n8" || rev != 42 {
		t.Fatal(id, rev, ok, err)
	}
	if _, _, ok, _ := ParseRef("screen:1,2,3@4"); ok {
		t.Fatal("screen ref taken for semantic")
	}
	for _, bad := range []string{"semantic:", "semantic:@3", "semantic:a@x", "semantic:a"} {
		if _, _, ok, err := ParseRef(bad); !ok || err == nil {
			t.Errorf("%s: %v %v", bad, ok, err)
		}
	}
	root := mustDecode(t, dialog)
	name, _ := Find(root, Locator{TestID: "name-field"})
	agree, _ := Find(root, Locator{Name: "I agree"})
	none, _ := Find(root, Locator{Name: "nope"})
	for _, c := range []struct {
		state string
		ms    []Flat
		want  bool
	}{
		{"focused", name, true}, {"focused", agree, false}, {"checked", agree, false}, {"unchecked", agree, true},
		{"visible", agree, true}, {"hidden", agree, false}, {"hidden", none, true}, {"visible", none, false},
		{"enabled", agree, true}, {"disabled", agree, false}, {"selected", none, false},
	} {
		if Holds(c.state, c.ms) != c.want {
			t.Errorf("%s on %d nodes: want %v", c.state, len(c.ms), c.want)
		}
	}
	if r, c := Center(Bounds{Row: 9, Column: 8, Width: 10, Height: 1}); r != 9 || c != 12 {
		t.Fatal(r, c)
	}
}

// FuzzDecode: the decoder never panics, and what it accepts is a valid
// tree whose lines and diff can be built.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(dialog))
	f.Add([]byte(`{"id":"a","role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}}`))
	f.Add([]byte(`{"id":"a","role":"window","bounds":{},"children":[{"id":"b","role":"text","bounds":{}}]}`))
	f.Add([]byte(`{"id":"\u00ff","role":"x"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		root, err := Decode(raw, 80, 24)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Reason == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		if err := Validate(root, 80, 24); err != nil {
			t.Fatalf("accepted tree does not validate: %v", err)
		}
		flat := Flatten(root)
		if len(flat) > MaxNodes {
			t.Fatalf("%d nodes", len(flat))
		}
		_ = Lines(root, 1)
		_ = Diff(root, 1, root, 2)
	})
}
