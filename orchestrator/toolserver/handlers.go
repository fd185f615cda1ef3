package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/termsprawl/termsprawl/tools"
)

// call is one request on its way to its handler: the caller's identity
// comes from the token alone.
type call struct {
	ctx    context.Context
	caller tools.Identity
	op     *tools.Operation
	s      *Server
}

// handler runs one operation. Exactly one of read and mutate is set,
// matching the table's Mutation flag; result is the Go type the handler
// returns as its value (reads) or receipt result (mutations), checked
// against the table's Result type by a test.
type handler struct {
	read   func(c *call, args json.RawMessage) (any, error)
	mutate func(c *call, args json.RawMessage) (result, state any, err error)
	result reflect.Type
	// drives: the args name a terminal the caller must be allowed to drive.
	drives bool
	// names: the args name a node (namesNode), so resolve checks it is in
	// the caller's realm.
	names bool
}

// namesANode reports whether args of type A name a node.
func namesANode[A any]() bool {
	var zero A
	_, ok := any(&zero).(namesNode)
	return ok
}

// decodeArgs decodes validated args into a typed struct: once per request.
func decodeArgs[A any](args json.RawMessage) (A, error) {
	var a A
	err := tools.DecodeArgs(args, &a)
	return a, err
}

// reader makes a read handler from a typed function.
func reader[A, R any](f func(c *call, a A) (R, error)) handler {
	return handler{
		result: reflect.TypeFor[R](),
		names:  namesANode[A](),
		read: func(c *call, args json.RawMessage) (any, error) {
			a, err := decodeArgs[A](args)
			if err != nil {
				return nil, err
			}
			if err := c.resolve(&a); err != nil {
				return nil, err
			}
			r, err := f(c, a)
			if err != nil {
				return r, err
			}
			return c.keepToRealm(r), nil
		},
	}
}

// mutator makes a mutation handler from a typed function that returns the
// receipt's result and state. Args that name a terminal (they embed
// terminalArg) are checked against the drive rule before f runs.
func mutator[A, R any](f func(c *call, a A) (R, any, error)) handler {
	var zero A
	_, drives := any(zero).(drivenTerminal)
	return handler{
		result: reflect.TypeFor[R](),
		drives: drives,
		names:  namesANode[A](),
		mutate: func(c *call, args json.RawMessage) (any, any, error) {
			a, err := decodeArgs[A](args)
			if err != nil {
				return nil, nil, err
			}
			if err := c.resolve(&a); err != nil {
				return nil, nil, err
			}
			if d, ok := any(a).(drivenTerminal); ok {
				if err := c.mustDrive(d.driven()); err != nil {
					return nil, nil, err
				}
			}
			return f(c, a)
		},
	}
}

// noArgs is the args of operations that take none.
type noArgs struct{}

// buildHandlers composes the per-domain handler sets. A name registered
// twice is a programming error.
func (s *Server) buildHandlers() map[string]handler {
	all := map[string]handler{}
	for _, set := range []map[string]handler{identityHandlers(), terminalHandlers(), watchHandlers(), agentHandlers(), dialogHandlers(), traceHandlers(),
		terminalToolHandlers(), notifyHandlers(), worktreeHandlers(), semanticHandlers(),
		hostHandlers(), restoreHandlers(), fleetHandlers(), policyHandlers()} {
		for name, h := range set {
			if _, dup := all[name]; dup {
				panic(fmt.Sprintf("toolserver: operation %s has two handlers", name))
			}
			all[name] = h
		}
	}
	return all
}
