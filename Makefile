# directaid — run, test, bench, lint. Everything needs only Go (and, for `make test`, what .ci/run installs).
GO        ?= go
BIN       := bin/directaid
BENCH_MEMORY ?= 256MiB
export DIRECTAID_BIN := $(CURDIR)/$(BIN)

.PHONY: help build run test check lint fmt bench bench-smoke soak vulncheck conformance fuzz-smoke clean

## help: list the targets with what each does
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## build: the binary in bin/directaid, built as xcaddy.sh builds it (-trimpath, no symbol table)
build:
	$(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/directaid

## run: build and serve http://localhost:8080 with Caddyfile.local (data and the admin socket in ./data, which
## must exist before Caddy binds the socket: Caddy starts the admin endpoint before the database creates it)
run: build
	mkdir -p -m 0700 data
	@echo "== directaid on http://localhost:8080 (Caddyfile.local, data in ./data; Ctrl-C stops it)"
	./$(BIN) run --config Caddyfile.local

## test: lint, a brief run of every fuzz target, then every test (through the built binary on loopback ports),
## and every in-process package's tests again under the race detector (-short); each phase says when it
## starts and how long it took
test: build
	@$(call phase,lint,$(MAKE) --no-print-directory lint)
	@$(call phase,fuzz-smoke,$(MAKE) --no-print-directory fuzz-smoke)
	@$(call phase,tests,$(GO) test -count=1 -timeout 20m ./...)
	@$(call phase,race,$(GO) test -count=1 -race -short -timeout 30m $(RACE_PKGS) && \
		$(GO) test -count=1 -race -short -timeout 30m -run '$(RACE_BADGER)' ./backend/badgerstore/)

# RACE_PKGS are the packages whose tests run in process (no binary): the race phase of `make test`. Badger's
# own package runs under -race only for its shared behaviour and its concurrent reads (RACE_BADGER): its
# brute-force comparisons take minutes under the race detector and share no state between goroutines that
# TestStore does not also drive. PostgreSQL's package is left out: its concurrency is the server's.
RACE_PKGS := ./schema/... ./site/... ./backend/ ./backend/places/ ./backend/httpapi/ ./backend/mcpserver/ ./backend/metrics/ ./backend/webhooks/ ./backend/store/... ./caddymodule/ ./internal/webutil/ \
	./internal/loadgen/ ./internal/testserver/ ./internal/golden/
RACE_BADGER := ^(TestStore|TestSnapshotReadsConcurrent)$$

## check: the fast inner loop (a few minutes): the in-process tests of the contract, the service, the site
## and the stores' shared behaviour on Badger, under the race detector; no binary, no PostgreSQL
check:
	$(GO) vet ./...
	$(GO) test -count=1 -race -short ./schema/... ./site/... ./backend/ ./backend/places/ ./backend/httpapi/ ./backend/mcpserver/ ./backend/metrics/ ./backend/webhooks/ ./backend/store/... ./internal/webutil/ \
		./internal/golden/

# phase runs a command as a named phase of a target: when it starts, and how long it took.
phase = start=$$(date +%s); echo "== $(1): start $$(date -u +%H:%M:%S)"; $(2); rc=$$?; \
	echo "== $(1): $$(( $$(date +%s) - start ))s (exit $$rc)"; exit $$rc

## fuzz-smoke: every Fuzz target of the tree (found in the committed *_test.go files) for FUZZTIME each.
## Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when -fuzztime ends
## while a starved worker is mid-call (golang/go#75804, fixed in Go 1.27): such a run, with no failing input
## written, is run once more; any other failure, or the same twice, fails.
FUZZTIME ?= 5s
fuzz-smoke:
	@set -e; out=$$(mktemp); trap 'rm -f $$out' EXIT; \
	for file in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "fuzz ./$$(dirname $$file) $$fn for $(FUZZTIME)"; \
			if $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file) >$$out 2>&1; then cat $$out; \
			elif cat $$out && grep -q 'context deadline exceeded' $$out && ! grep -q 'Failing input written' $$out; then \
				echo "fuzz ./$$(dirname $$file) $$fn: the coordinator's deadline race (golang/go#75804), once more"; \
				$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file); \
			else exit 1; fi; \
		done; \
	done

## soak: the long variants — more kill -9 rounds, reloads and idle connections (DIRECTAID_SOAK=1), then
## every fuzz target for FUZZTIME=2m (about a quarter of an hour in all)
soak: build
	DIRECTAID_SOAK=1 $(GO) test -count=1 -timeout 60m -v -run 'TestCrashSafety|TestReloadUnderLoad|TestIdleConnectionsDoNotStarve|TestHostile|TestSlowClientsCutOff|TestPublishLimitHolds|TestMCPLimitCannotBeDodged|TestNoContactDataInLogs' ./e2e/
	$(MAKE) fuzz-smoke FUZZTIME=$(if $(filter 5s,$(FUZZTIME)),2m,$(FUZZTIME))

## vulncheck: known vulnerabilities in the code and its dependencies (govulncheck v1.2.0), after checking the
## module cache against go.sum. It needs the network (vuln.go.dev), so it is for CI, not part of `make test`.
vulncheck:
	$(GO) mod verify
	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.2.0 ./...

## bench: the benchmark table of docs/performance.md, Badger and PostgreSQL side by side (about 6 minutes); PostgreSQL
## runs when it is installed (a throwaway cluster): BENCH_PG=0 skips it, BENCH_PG=1 fails without it.
## BENCH_1M=1 adds the 1,000,000-record run (about 15 more minutes): published into Badger in a 256 MiB memory
## cgroup (BENCH_MEMORY=… to change it, BENCH_MEMORY= for none) after an unconstrained first 100k, copied into
## PostgreSQL by `directaid migrate`, the reads and a whole CSV export on both, reads while publishing on Badger.
## BENCH_FLAGS passes more flags to cmd/bench (e.g. BENCH_FLAGS='-profile "POST new/64"')
bench: build
	$(GO) run ./cmd/bench -bin $(BIN) $(if $(BENCH_PG),-postgres=$(if $(filter 0,$(BENCH_PG)),off,on)) $(if $(BENCH_1M),-million 1000000 $(if $(BENCH_MEMORY),-memory-limit $(BENCH_MEMORY))) $(BENCH_FLAGS)

## bench-smoke: the same harness with tiny counts, in seconds (also runs within `make test`)
bench-smoke: build
	$(GO) test -count=1 -run TestBenchSmoke -v ./internal/bench

## conformance: the MCP conformance suite (Node 20's npx; `make test` runs it too) against the built binary
conformance: build
	$(GO) test -count=1 -v -run 'TestMCPConformance' ./e2e/

lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
