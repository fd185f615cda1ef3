package statefile

import "context"

type intentKey struct{}

// WithIntent returns ctx carrying a keyed call's intent (its caller's
// incarnation and idempotency key), which the intent marks written for
// it carry (IntentOf). An empty key carries none.
func WithIntent(ctx context.Context, caller, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, intentKey{}, Intent{Caller: caller, Key: key})
}

// IntentOf is the intent ctx carries (WithIntent), zero without one.
func IntentOf(ctx context.Context) Intent {
	in, _ := ctx.Value(intentKey{}).(Intent)
	return in
}
