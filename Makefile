# toolhostd's build. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN := bin/toolhostd
GOTESTFLAGS ?=
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# grpcnotrace: grpc (the etcd client's) without golang.org/x/net/trace, whose
# html/template reaches reflect.Value.MethodByName; with that reachable the
# linker keeps every exported method of every type (about 9 MB here).
GOTAGS := grpcnotrace

.PHONY: help build install test bench check deps agents demo clean
.SECONDEXPANSION:

help: ## list the targets
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

deps: node_modules/.package-lock.json ## install the pinned npm packages and Go modules
	$(GO) mod download

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# The world the guests are built against: agent.wit and the packages it
# imports (wit/deps, wasi:keyvalue).
WIT := wit/agent.wit $(wildcard wit/deps/*/*.wit)
AGENTS := $(patsubst examples/agents/%.js,build/agents/%.wasm,$(wildcard examples/agents/*.js))
TEST_AGENTS := $(patsubst internal/host/testdata/agents/%.js,build/test-agents/%.wasm,$(wildcard internal/host/testdata/agents/*.js))
COMPONENTIZE = @mkdir -p $(@D) && echo "componentize-js $< -> $@" && \
	node_modules/.bin/componentize-js $< --wit wit --world-name agent -d http fetch-event -o $@

build/agents/%.wasm: examples/agents/%.js $(WIT) node_modules/.package-lock.json
	$(COMPONENTIZE)

build/test-agents/%.wasm: internal/host/testdata/agents/%.js $(WIT) node_modules/.package-lock.json
	$(COMPONENTIZE)

# Agents that import sdk/js (both toolchains bundle the relative import):
# the examples and the sdkjs, kvnotes, remember and paced test agents.
SDK_JS_AGENTS := $(AGENTS) $(patsubst examples/agents/%.js,build/agents-qjs/%.wasm,$(wildcard examples/agents/*.js)) \
	build/test-agents/sdkjs.wasm build/test-agents-qjs/sdkjs.wasm \
	build/test-agents/kvnotes.wasm build/test-agents-qjs/kvnotes.wasm \
	build/test-agents/remember.wasm build/test-agents-qjs/remember.wasm \
	build/test-agents/paced.wasm build/test-agents-qjs/paced.wasm
$(SDK_JS_AGENTS): sdk/js/toolhost.js

# Go agents (sdk/go): a reactor module from mainline Go, componentized with
# jco's JS API and the WASI preview1 reactor adapter (scripts/componentize-go.mjs).
# Each directory of examples/agents-go and internal/host/testdata/agents-go
# is one agent; both are modules of their own that use sdk/go by a replace.
# An agent directory with a world.wit is built against it instead of
# wit/agent.wit (the host's tests of a guest that does not match).
GO_SDK_SRC := sdk/go/go.mod $(wildcard sdk/go/toolhost/*.go)
GO_AGENTS := $(patsubst examples/agents-go/%/,build/agents-go/%.wasm,$(wildcard examples/agents-go/*/)) \
	$(patsubst internal/host/testdata/agents-go/%/,build/test-agents-go/%.wasm,$(wildcard internal/host/testdata/agents-go/*/))
GO_COMPONENTIZE = @mkdir -p $(@D) && echo "go (wasip1) $(<D) -> $@" && \
	(cd $(<D)/.. && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(abspath $@.core) ./$(notdir $(<D))) && \
	node scripts/componentize-go.mjs --wit $(or $(wildcard $(<D)/world.wit),wit/agent.wit) --world agent $@.core $@ && rm -f $@.core

build/agents-go/%.wasm: examples/agents-go/%/main.go $$(wildcard examples/agents-go/$$*/*.go) examples/agents-go/go.mod $(GO_SDK_SRC) scripts/componentize-go.mjs $(WIT) node_modules/.package-lock.json
	$(GO_COMPONENTIZE)

build/test-agents-go/%.wasm: internal/host/testdata/agents-go/%/main.go $$(wildcard internal/host/testdata/agents-go/$$*/*.go internal/host/testdata/agents-go/$$*/world.wit) internal/host/testdata/agents-go/go.mod $(GO_SDK_SRC) scripts/componentize-go.mjs $(WIT) node_modules/.package-lock.json
	$(GO_COMPONENTIZE)

# The same JS agents built with componentize-qjs (QuickJS; --sync: without
# it the component needs component-model async).
QJS_AGENTS := $(patsubst examples/agents/%.js,build/agents-qjs/%.wasm,$(wildcard examples/agents/*.js)) \
	$(patsubst internal/host/testdata/agents/%.js,build/test-agents-qjs/%.wasm,$(wildcard internal/host/testdata/agents/*.js))
QJS_COMPONENTIZE = @mkdir -p $(@D) && echo "componentize-qjs $< -> $@" && \
	node_modules/.bin/componentize-qjs --wit wit --js $< -n agent --sync -o $@ >/dev/null

build/agents-qjs/%.wasm: examples/agents/%.js $(WIT) node_modules/.package-lock.json
	$(QJS_COMPONENTIZE)

build/test-agents-qjs/%.wasm: internal/host/testdata/agents/%.js $(WIT) node_modules/.package-lock.json
	$(QJS_COMPONENTIZE)

agents: $(AGENTS) $(TEST_AGENTS) $(GO_AGENTS) $(QJS_AGENTS) ## build the example and test agents into build/ (componentize-js, Go, componentize-qjs)

build: ## build bin/toolhostd
	$(GO) build -tags $(GOTAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/toolhostd

demo: deps build build/agents/hello.wasm build/agents/echo.wasm ## build toolhostd and two agents; run hello against configs/example.toml, talk to echo, then serve configs/demo.toml and send to its echo
	$(BIN) --config configs/example.toml run build/agents/hello.wasm
	echo "hello from make demo" | $(BIN) --config configs/example.toml run build/agents/echo.wasm --chat
	scripts/demo-serve.sh $(BIN)

# PREFIX: where install puts bin/toolhostd (make install PREFIX=/usr/local).
PREFIX ?= $(HOME)/.local

install: build ## install toolhostd into $(PREFIX)/bin (default ~/.local/bin, on PATH in most shells)
	install -D -m 0755 $(BIN) $(PREFIX)/bin/toolhostd
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH; add it: export PATH=\"$(PREFIX)/bin:\$$PATH\"" ;; esac

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

# The container image's runtime layout and its lint (deploy/container; the
# layout test in make test runs the same script).
.PHONY: layout lint-dockerfile
DESTDIR ?= /tmp/toolhostd-root
layout: build agents ## install the container image's layout under DESTDIR (deploy/container/install-layout.sh)
	deploy/container/install-layout.sh --root $(DESTDIR) --toolhostd $(BIN) --agents build/agents-qjs --node-modules node_modules

check: lint-dockerfile
lint-dockerfile: node_modules/.package-lock.json ## lint the Dockerfile without a Docker engine (dockerfile-utils, dockerfilelint)
	node_modules/.bin/dockerfile-utils lint Dockerfile
	node_modules/.bin/dockerfilelint Dockerfile
