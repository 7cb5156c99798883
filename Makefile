# toolhostd's build. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN := bin/toolhostd
GOTESTFLAGS ?=
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: help build test bench check deps agents demo clean

help: ## list the targets
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

deps: node_modules/.package-lock.json ## install the pinned npm packages and Go modules
	$(GO) mod download

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

AGENTS := $(patsubst examples/agents/%.js,build/agents/%.wasm,$(wildcard examples/agents/*.js))
TEST_AGENTS := $(patsubst internal/host/testdata/agents/%.js,build/test-agents/%.wasm,$(wildcard internal/host/testdata/agents/*.js))
COMPONENTIZE = @mkdir -p $(@D) && echo "componentize-js $< -> $@" && \
	node_modules/.bin/componentize-js $< --wit wit --world-name agent -d http fetch-event -o $@

agents: $(AGENTS) $(TEST_AGENTS) ## build the example and test JS agents into build/ (componentize-js)

build/agents/%.wasm: examples/agents/%.js wit/agent.wit node_modules/.package-lock.json
	$(COMPONENTIZE)

build/test-agents/%.wasm: internal/host/testdata/agents/%.js wit/agent.wit node_modules/.package-lock.json
	$(COMPONENTIZE)

build: ## build bin/toolhostd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/toolhostd

demo: deps build build/agents/hello.wasm ## build toolhostd and the hello agent, then run it against configs/example.toml
	$(BIN) --config configs/example.toml run build/agents/hello.wasm

test: deps agents ## run the whole test suite (race detector on)
	$(GO) test -race -timeout 15m $(GOTESTFLAGS) ./...

# N: how many agents the scale benchmarks start (make bench N=1000).
N ?= 100

bench: deps agents ## run the benchmarks and print a table of medians and ratios (N=1000 for the scale rows)
	TOOLHOSTD_BENCH_AGENTS=$(N) $(GO) run ./internal/benchtable -- $(GO) test -run '^$$' -bench . -benchtime 1s -count 5 ./...

check: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

clean: ## remove build outputs
	rm -rf bin
