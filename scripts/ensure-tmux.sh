#!/usr/bin/env bash
# termsprawl's tests run real tmux on private sockets. Install it from
# Debian's packages when it is missing (machines of this kind run as root).
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then
	exit 0
fi
echo "tmux not found; installing it with apt-get" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "install tmux (e.g. sudo apt-get install -y tmux) and run again" >&2
	exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
