#!/usr/bin/env bash
# Runs the benchmarks that back docs/PERFORMANCE.md: scripts/bench.sh [COUNT]
# Compare runs with benchstat (go run golang.org/x/perf/cmd/benchstat@latest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tmux.sh
count=${1:-5}
go test -run '^$' -bench . -benchmem -count "$count" ./... | tee bench.out
