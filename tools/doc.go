// Package tools is the contract between termsprawl's orchestrator and every
// surface that talks to it (the termsprawlctl CLI, the MCP bridge and the
// human's termsprawl CLI).
//
// It owns, in one place:
//
//   - the operation table (ops.go): names, one-line descriptions, strict
//     argument schemas, MCP annotations and guide topics. HTTP validation,
//     the CLIs, MCP tools/list and the guides are all generated from it, so
//     they cannot drift;
//   - the wire types (wire.go): Request, Result (the {ok,value|error}
//     envelope), error kinds, typed *Error and the limits of CONTRACT §9;
//   - receipts and idempotency keys (receipts.go), stored on disk;
//   - the discovery files of the state directory (discovery.go, watch.go):
//     endpoint.json, sessions/<node>.json, preferences, atomic writes and an
//     fsnotify-based wait for a fresh endpoint;
//   - the client (client.go): Call, the one function every surface uses;
//   - the HTTP handler (server.go): every request guard (Origin, Host,
//     bearer token, body cap, strict schema) in front of a Backend that the
//     orchestrator implements.
//
// The package imports only the standard library and fsnotify and never any
// other termsprawl package.
package tools
