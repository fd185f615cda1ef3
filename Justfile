# Every recipe only calls go or scripts/, so nothing needs `just`.

build:
    go build ./...

test:
    go test ./...

# The end-to-end tests through the real binaries and tmux (part of `test`).
itest:
    go test -count=1 -run 'E2E|Integration' ./...

fuzz duration="20s":
    scripts/fuzz.sh {{duration}}

bench count="5":
    scripts/bench.sh {{count}}

lint:
    go vet ./...
    test -z "$(gofmt -l .)"

ci:
    scripts/ci.sh
