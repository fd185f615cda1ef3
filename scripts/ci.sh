#!/usr/bin/env bash
# The whole CI job; also what `just ci` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-tmux.sh
if [ "${CI:-}" = true ]; then
	# asciinema: the recordings' casts are checked with `asciinema cat`.
	if ! command -v asciinema >/dev/null 2>&1; then
		echo "asciinema not found; installing it with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq asciinema
	fi
	# python3: the mouse tests' program (orchestrator/testdata/mousecat.py).
	if ! command -v python3 >/dev/null 2>&1; then
		echo "python3 not found; installing it with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3
	fi
	# node and npm: the MCP tests drive /mcp with the official TypeScript
	# SDK, the agent tests run the real @anthropic-ai/claude-code (2.1.328
	# and 2.1.197), @openai/codex, @google/gemini-cli and opencode-ai
	# (pinned, each installed by its test with npm into the test cache:
	# testenv.NPM, once per version; the binaries need no install scripts,
	# and each test checks its binary runs) and the monitor's tests
	# playwright-core.
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		echo "node or npm not found; installing them with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
	fi
	# openssh: the remote-host tests run a real sshd in a network namespace
	# (internal/sshtest); iproute2 makes the namespace.
	if ! [ -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
		echo "openssh-server, openssh-client or iproute2 not found; installing them with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client iproute2
	fi
	# chromium: the web monitor's tests open it headless (driven by
	# playwright-core from npm, which the tests install themselves).
	if ! [ -x /usr/bin/chromium ]; then
		echo "chromium not found; installing it with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
	fi
	# dbus, libnotify-bin, libglib2.0-bin, python3-dbus, python3-gi: the
	# desktop notification test starts a session bus with a fake
	# notification service (orchestrator/notify).
	if ! command -v dbus-daemon >/dev/null 2>&1 || ! command -v notify-send >/dev/null 2>&1 || ! command -v gdbus >/dev/null 2>&1 ||
		! /usr/bin/python3 -c 'import dbus, dbus.mainloop.glib; from gi.repository import GLib' >/dev/null 2>&1; then
		echo "dbus, libnotify-bin, libglib2.0-bin, python3-dbus or python3-gi not found; installing them with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dbus libnotify-bin libglib2.0-bin python3-dbus python3-gi
	fi
	# bubblewrap: agents run in a bwrap sandbox (CONTRACT §27); the
	# sandbox tests launch them for real.
	if ! command -v bwrap >/dev/null 2>&1; then
		echo "bwrap not found; installing bubblewrap with apt-get" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
	fi
	# In CI a test that would skip for a missing tool or permission fails.
	export TERMSPRAWL_REQUIRE_ALL=1
fi

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change these files:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== staticcheck"
# Installed once per machine (go install is a no-op when the binary is
# current); called by full path, as GOPATH/bin need not be on PATH.
staticcheck_version=v0.8.2
staticcheck="$(go env GOPATH)/bin/staticcheck"
if ! [ -x "$staticcheck" ] || ! "$staticcheck" -version 2>/dev/null | grep -qF "(${staticcheck_version#v})"; then
	echo "installing staticcheck ${staticcheck_version}" >&2
	go install "honnef.co/go/tools/cmd/staticcheck@${staticcheck_version}"
fi
"$staticcheck" ./...

echo "== GOOS=darwin go build ./... (Linux-only code is behind build tags)"
GOOS=darwin go build -o /dev/null ./... 2>&1 || { echo "the project does not build for darwin" >&2; exit 1; }

# An explicit -timeout per package binary: go test's default (10 minutes)
# is what a new user gets from the README's command and what the suite
# keeps well under; CI allows twice that on a loaded machine.
echo "== go test -timeout 20m ./... (the README's test command)"
go test -timeout 20m ./...

echo "== go test -race -short -timeout 20m ./... (the end-to-end and differential tests run above, without -race)"
go test -race -short -timeout 20m ./...
