# directaid — run, test, bench, lint. Everything needs only Go (and, for `make test`, what .ci/run installs).
GO        ?= go
BIN       := bin/directaid
export DIRECTAID_BIN := $(CURDIR)/$(BIN)

.PHONY: build run test unit lint fmt bench soak vulncheck conformance clean

build:
	$(GO) build -o $(BIN) ./cmd/directaid

## run: build and serve http://localhost:8080 with Caddyfile.local (data in ./data)
run: build
	./$(BIN) run --config Caddyfile.local

## test: lint, then every test (through the built binary on loopback ports)
test: build lint
	$(GO) test -count=1 -timeout 20m ./...

## conformance: the MCP conformance suite (Node 20's npx; `make test` runs it too) against the built binary
conformance: build
	$(GO) test -count=1 -v -run 'TestMCPConformance' ./e2e/

lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
