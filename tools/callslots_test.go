package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRateLimiterRefillAndPrune(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := NewRateLimiter(func() time.Time { return now }, 10, 3)
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("over the burst: ok %v, wait %s", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	now = now.Add(100 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("no refill after 100 ms at 10/s")
	}
	l.Prune() // b has refilled (2 + 1 token in 100 ms), a has not
	if _, ok := l.buckets["a"]; !ok || len(l.buckets) != 1 {
		t.Fatalf("prune kept %v, want only a", l.buckets)
	}
	now = now.Add(time.Second)
	l.Prune()
	if len(l.buckets) != 0 {
		t.Fatalf("%d full buckets kept", len(l.buckets))
	}
}

// heldBackend holds every agent call until release is closed; the
// operator's calls answer at once.
type heldBackend struct {
	tokens  map[string]Identity
	entered atomic.Int64 // agent calls inside Handle now
	release chan struct{}
}

func (b *heldBackend) Authenticate(token string) (Identity, bool) {
	id, ok := b.tokens[token]
	return id, ok
}

func (b *heldBackend) Handle(ctx context.Context, id Identity, op *Operation, args json.RawMessage) Result {
	if id.Role != RoleOperator {
		b.entered.Add(1)
		defer b.entered.Add(-1)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return OKResult(map[string]any{"node": id.Node})
}

func tokenN(i int) string { return fmt.Sprintf("%064x", i+1) }

// One agent token, or many, holding long calls cannot lock the operator
// out (600 concurrent 30 s terminal_wait_for with one token made the
// operator's terminal_list fail): each token gets MaxCallsPerToken
// requests in flight, agents together MaxConnections − OperatorReserve,
// the rest is refused at once (429, kind rejected, retryable) and the
// operator's call is served.
func TestOneTokenCannotLockOutTheOperator(t *testing.T) {
	t.Parallel()
	const calls = MaxConnections + 88
	raiseNoFile(t, 4*calls+1024, 2*calls+256)
	b := &heldBackend{tokens: map[string]Identity{tokenN(0): {Node: OperatorNode, Role: RoleOperator, Incarnation: OperatorNode}}}
	for i := 1; i <= 20; i++ {
		b.tokens[tokenN(i)] = Identity{Node: fmt.Sprintf("n%d", i), Role: RoleAgent, Incarnation: fmt.Sprintf("n%d@1", i)}
	}
	_, u := startToolServer(t, b)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	post := func(token string) (int, Result, error) {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"operation":"terminal_list","args":{}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, Result{}, err
		}
		defer resp.Body.Close()
		var res Result
		err = json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res, err
	}
	for _, phase := range []struct {
		name   string
		tokens int
		limit  int // agent calls let in at most
	}{
		{"one token", 1, MaxCallsPerToken},
		{"twenty tokens", 20, MaxConnections - OperatorReserve},
	} {
		t.Run(phase.name, func(t *testing.T) {
			b.release = make(chan struct{})
			type outcome struct {
				status int
				res    Result
				err    error
			}
			done := make(chan outcome, calls)
			for i := range calls {
				go func() {
					st, res, err := post(tokenN(1 + i%phase.tokens))
					done <- outcome{st, res, err}
				}()
			}
			// Wait until the server has seen at least MaxConnections of
			// them: held in the backend, or refused.
			refused, finished := 0, 0
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(time.Minute) // a hang detector
			for int(b.entered.Load())+refused < MaxConnections {
				select {
				case o := <-done:
					finished++
					// At the cap the listener closes connections not yet
					// authenticated to make room: those calls fail in
					// transport, the others are refused.
					if o.err == nil && (o.status != http.StatusTooManyRequests || o.res.Kind != KindRejected || !o.res.Retryable || (o.res.Details["quota"] != "calls" && o.res.Details["quota"] != "rate")) {
						t.Fatalf("an agent call over the share: HTTP %d %+v %v", o.status, o.res, o.err)
					}
					refused++
				case <-tick.C:
				case <-deadline:
					t.Fatalf("only %d held and %d refused of %d calls", b.entered.Load(), refused, calls)
				}
			}
			if n := int(b.entered.Load()); n > phase.limit {
				t.Fatalf("%d agent calls held at once, over %d", n, phase.limit)
			}
			st, res, err := post(tokenN(0))
			if err != nil || st != http.StatusOK || !res.OK {
				t.Fatalf("the operator was locked out: HTTP %d %+v %v", st, res, err)
			}
			close(b.release)
			for ; finished < calls; finished++ {
				<-done
			}
		})
	}
}

// /call's per-token rate: an agent token gets CallRateBurst calls at once
// and CallRatePerSecond after; the operator is not limited; tokens do not
// share a bucket.
func TestCallRatePerToken(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	s := NewCallSlots(MaxConnections)
	s.rate = NewRateLimiter(func() time.Time { return now }, CallRatePerSecond, CallRateBurst)
	a := Identity{Node: "a", Role: RoleAgent, Incarnation: "a@1"}
	b := Identity{Node: "b", Role: RoleAgent, Incarnation: "b@1"}
	op := Identity{Node: OperatorNode, Role: RoleOperator, Incarnation: OperatorNode}
	for i := range CallRateBurst {
		if _, err := s.AllowCall(a); err != nil {
			t.Fatalf("call %d of the burst refused: %v", i, err)
		}
	}
	wait, err := s.AllowCall(a)
	if err == nil || err.Kind != KindRejected || !err.Retryable || err.Details["quota"] != "rate" || wait <= 0 {
		t.Fatalf("over the burst: %v %v", wait, err)
	}
	if _, err := s.AllowCall(b); err != nil {
		t.Fatalf("another token shares the bucket: %v", err)
	}
	for range 3 * CallRateBurst {
		if _, err := s.AllowCall(op); err != nil {
			t.Fatalf("the operator was limited: %v", err)
		}
	}
	now = now.Add(time.Second / CallRatePerSecond)
	if _, err := s.AllowCall(a); err != nil {
		t.Fatalf("no refill: %v", err)
	}
}
