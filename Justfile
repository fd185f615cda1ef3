# Every recipe only calls go or scripts/, so nothing needs `just`.

build:
    go build ./...

# termsprawl and termsprawlctl into bin/, naming the commit also where the
# build records no VCS information (-buildvcs=false).
bin:
    go build -ldflags "-X github.com/termsprawl/termsprawl/cli.Commit=$(git rev-parse HEAD)" -o bin/ ./cmd/...

test:
    go test ./...

# The end-to-end tests through the real binaries and tmux (part of `test`).
itest:
    go test -count=1 -run 'E2E|Integration' ./...

fuzz duration="20s":
    scripts/fuzz.sh {{duration}}

bench count="5":
    scripts/bench.sh {{count}}

# The 200-node figures of issue 27 (docs/PERFORMANCE.md "200 nodes").
scale nodes="200":
    scripts/scale {{nodes}}

lint:
    go vet ./...
    test -z "$(gofmt -l .)"

ci:
    scripts/ci.sh
