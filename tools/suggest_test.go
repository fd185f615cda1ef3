package tools

import (
	"errors"
	"fmt"
	"testing"
)

func TestResolveTerminal(t *testing.T) {
	terms := []Named{{"a1b2", "web"}, {"a1c3", "api"}, {"d4e5", "web"}, {"f6g7", "f6"}}
	cases := []struct {
		word, want string
		kind       Kind
	}{
		{"a1b2", "a1b2", ""},   // exact id
		{"api", "a1c3", ""},    // unique name
		{"f6", "f6g7", ""},     // a name before an id prefix
		{"d4", "d4e5", ""},     // unique id prefix
		{"web", "", KindUsage}, // a name shared by two
		{"a1", "", KindUsage},  // a prefix of two ids
		{"zzzz", "", KindNotFound},
		{"apj", "", KindNotFound}, // near "api": suggested
	}
	for _, c := range cases {
		got, err := ResolveTerminal(c.word, terms)
		if got != c.want || (c.kind == "") != (err == nil) || (err != nil && KindOf(err) != c.kind) {
			t.Errorf("ResolveTerminal(%q) = %q, %v; want %q, kind %q", c.word, got, err, c.want, c.kind)
		}
	}
	_, err := ResolveTerminal("apj", terms)
	var e *Error
	if !errors.As(err, &e) || fmt.Sprint(e.Details["suggestions"]) != "[api]" {
		t.Errorf("no suggestion of a near name: %v", err)
	}
}
