package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestResultJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  Result
		want string
	}{
		{"ok", OKResult(map[string]int{"a": 1}), `{"ok":true,"value":{"a":1}}`},
		{"ok nil value", Result{OK: true}, `{"ok":true,"value":null}`},
		{"error", ErrResult(Errorf(KindUsage, "bad %s", "x")), `{"ok":false,"error":"bad x","kind":"usage","retryable":false}`},
		{"error details", ErrResult(&Error{Kind: KindTimeout, Msg: "slow", Retryable: true, Details: map[string]any{"excerpt": "$ "}}),
			`{"ok":false,"error":"slow","kind":"timeout","retryable":true,"details":{"excerpt":"$ "}}`},
		{"untyped error", ErrResult(errors.New("oops")), `{"ok":false,"error":"oops","kind":"internal","retryable":false}`},
		{"nil error", ErrResult(nil), `{"ok":false,"error":"ErrResult called with a nil error","kind":"internal","retryable":false}`},
		{"unmarshalable", OKResult(func() {}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if tc.res.OK || tc.res.Kind != KindInternal {
					t.Fatalf("want internal error, got %s", got)
				}
				return
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			var back Result
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != tc.want {
				t.Fatalf("round trip: %s", again)
			}
		})
	}
	var r Result
	if err := json.Unmarshal([]byte(`{"value":1}`), &r); err == nil {
		t.Fatal("missing ok accepted")
	}
}

func TestAsErrorKeepsContext(t *testing.T) {
	t.Parallel()
	base := Errorf(KindNotFound, "no terminal %q", "x")
	wrapped := fmt.Errorf("snapshot: %w", base)
	e := AsError(wrapped)
	if e.Kind != KindNotFound || e.Error() != `snapshot: no terminal "x"` {
		t.Fatalf("got %v %q", e.Kind, e.Error())
	}
	if !errors.Is(e, base) {
		t.Fatal("chain lost")
	}
	if AsError(base) != base {
		t.Fatal("unwrapped *Error should be returned as is")
	}
	cause := errors.New("cause")
	if e := Errorf(KindInternal, "ctx: %w", cause); !errors.Is(e, cause) {
		t.Fatal("Errorf %w not unwrappable")
	}
	if KindOf(nil) != "" || KindOf(errors.New("x")) != KindInternal || KindOf(wrapped) != KindNotFound {
		t.Fatal("KindOf")
	}
	if err := (Result{OK: false, Kind: KindConflict, Error: "c"}).Err(); KindOf(err) != KindConflict {
		t.Fatal("Result.Err")
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	want := map[Kind]int{
		KindUsage: 400, KindUnauthorized: 401, KindForbidden: 403, KindNotFound: 404,
		KindConflict: 409, KindNotRun: 409, KindRejected: 422, KindInProgress: 202,
		KindTimeout: 504, KindUnavailable: 503, KindInternal: 500, "weird": 500,
	}
	for k, s := range want {
		if got := HTTPStatus(k); got != s {
			t.Errorf("HTTPStatus(%s) = %d, want %d", k, got, s)
		}
	}
	for k := range knownKinds {
		if !k.Valid() {
			t.Errorf("%s not valid", k)
		}
	}
}
