# directord: build, test, lint, benchmark, demo.
# Go is at /usr/local/go on our machines; tools land in $(HOME)/go/bin.

GO ?= go
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
BIN := bin
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

STATICCHECK_VERSION := v0.8.2
# keepalived: its samples are test inputs and it is the reference in
# benchmarks; ipvsadm and user-mode-linux: the real-IPVS tests; time: the
# benchmark's resource figures.
APT_PACKAGES := keepalived ipvsadm user-mode-linux iproute2 time

.PHONY: all build test lint bench demo deps check-deps fuzz clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## test: everything that runs on a machine like ours (unit tests, fuzz seeds).
test: check-deps
	$(GO) test -race -count=1 ./...

check-deps:
	@test -d /usr/share/doc/keepalived/samples || { \
		echo "make test reads keepalived's sample configurations: run 'make deps' (as root) first"; exit 1; }

## deps: install what the tests and benchmarks need (Debian packages, Go tools).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

## bench: Go benchmarks, then directord beside keepalived on the same work.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	scripts/bench-config.sh

## fuzz: run the configuration fuzzer for a while (make test runs its seeds).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime $${FUZZTIME:-60s} ./config

## demo: until the lab exists, check the bundled example and print it resolved.
demo: build
	@echo "== directord -t -i lb1 -f docs/examples/keepalived.conf"
	@$(BIN)/directord -t -i lb1 -f docs/examples/keepalived.conf
	@echo
	@echo "== directord --dump-config -i lb1 -f docs/examples/keepalived.conf"
	@$(BIN)/directord --dump-config -i lb1 -f docs/examples/keepalived.conf

clean:
	rm -rf $(BIN)
