package hosts

import (
	"context"
	"errors"
	"testing"
)

// A command whose ssh session the host refused is tried again (nothing
// ran); any other failure, or success, ends it at once; the tries are
// bounded and end with the caller's context.
func TestRetryRefused(t *testing.T) {
	t.Parallel()
	refused := "mux_client_request_session: session request failed: Session open refused by peer"
	failed := errors.New("exit status 255")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		stderr    []string // what each try says; past the end, the last
		wantCalls int
		wantErr   bool
	}{
		{"ok at once", context.Background(), []string{""}, 1, false},
		{"refused twice, then ok", context.Background(), []string{refused, refused, ""}, 3, false},
		{"another failure is not tried again", context.Background(), []string{"no such file"}, 1, true},
		{"always refused: bounded", context.Background(), []string{refused}, sessionRetries + 1, true},
		{"refused, context ended", cancelled, []string{refused}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := retryRefused(tc.ctx, func() (string, error) {
				s := tc.stderr[min(calls, len(tc.stderr)-1)]
				calls++
				if s == "" {
					return "", nil
				}
				return s, failed
			})
			if calls != tc.wantCalls || (err != nil) != tc.wantErr {
				t.Fatalf("%d tries, err %v; want %d tries, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
