# directord: build, test, lint, benchmark, demo.
# Go is at /usr/local/go on our machines; tools land in $(HOME)/go/bin.

GO ?= go
# The programs are built static, without cgo, wherever they are built:
# with a C compiler at hand Go would link libc for os/user and net, and
# the same source would make another program on each machine (libc's
# pages, 1.3 MB resident in the guest; users looked up through the C
# library, which internal/users does through getent instead). The tests
# keep Go's default: -race needs cgo.
BUILD = CGO_ENABLED=0 $(GO) build
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
BIN := bin
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

STATICCHECK_VERSION := v0.8.2
# keepalived: its samples are test inputs and it is the reference in
# benchmarks; ipvsadm, user-mode-linux and kmod (modprobe): the real-IPVS
# tests; time: the benchmark's resource figures; systemd: systemd-analyze
# verify of the unit (no running systemd needed); nftables (nft): the
# listing of the tables directord makes, compared with keepalived's.
APT_PACKAGES := keepalived ipvsadm user-mode-linux kmod iproute2 time systemd frr nftables

.PHONY: all build test test-deps lint bench bench-ipvs bench-lvs bench-checks bench-lab demo demo-active deps apt-install fuzz fuzz-smoke clean integration

all: build

## build: directord, directorctl and directord-bgp (the BGP speaker,
## which directord starts from its own folder: keep them together).
build:
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## integration: the tests that need IPVS, which our kernels lack, run as
## root in one boot of a User-Mode Linux guest (docs/testing.md). Each
## package of UML_PACKAGES is built on the host with go test -c; without
## -race, which cannot map its memory in the guest. The host's go test
## skips these tests (internal/ipvstest).
##   make integration RUN=TestX UML_PACKAGES=./ipvs V=1
UML_PACKAGES := ./integration/uml ./ipvs ./internal/ipvstest ./integration/lvs ./integration/lab ./integration/bgp
UML_APT_PACKAGES := user-mode-linux ipvsadm kmod iproute2
UML_BIN := $(BIN)/uml
UML_MEM := 1536M
# The guest's time limit in seconds, for all packages; each package's own.
UML_TIMEOUT := 1800
UML_TEST_TIMEOUT := 10m
# The host's go test limit for each package: vrrp's namespace tests wait
# on VRRP's own timers (advertisements, master down, FAULT) and take
# about ten minutes under -race on two busy cores.
HOST_TEST_TIMEOUT := 30m

## test: everything that runs on a machine like ours (unit tests, fuzz
## seeds), each fuzz target briefly in fuzzing mode, then the real-kernel
## tests in a User-Mode Linux guest.
test: test-deps
	$(GO) test -race -count=1 -timeout $(HOST_TEST_TIMEOUT) ./...
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory integration

# The Debian packages the tests read or run; installed when missing.
TEST_PACKAGES := keepalived systemd frr nftables $(UML_APT_PACKAGES)
test-deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(TEST_PACKAGES)"

integration:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES)"
	@mkdir -p $(UML_BIN) && rm -f $(UML_BIN)/*.test
	$(BUILD) -o $(UML_BIN)/directord ./cmd/directord
	$(BUILD) -o $(UML_BIN)/directord-bgp ./cmd/directord-bgp
	$(BUILD) -o $(UML_BIN)/directorctl ./cmd/directorctl
	@set -e; for p in $(UML_PACKAGES); do \
		n=$${p#./}; n=$${n%/}; \
		$(GO) test -c -o $(UML_BIN)/$$(echo "$$n" | tr / -).test $$p; \
	done
	integration/uml/run.sh -m $(UML_MEM) -t $(UML_TIMEOUT) -- \
		integration/uml/gotest.sh $(if $(filter 1,$(V)),-v) $(if $(RUN),-run '$(RUN)') \
		-timeout $(UML_TEST_TIMEOUT) $(UML_BIN) $(UML_PACKAGES)

## deps: install everything the tests, lint and benchmarks need.
deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)"
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# apt-install installs those of $(PACKAGES) that are missing (needs root).
apt-install:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "missing Debian packages:$$missing; run: sudo apt-get install$$missing"; exit 1; fi; \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

## bench: every benchmark, each beside its reference (keepalived, ipvsadm)
## in the same run: outputs in bin/bench, the results table into
## docs/benchmarks.md, its plots into docs/img (scripts/bench.sh).
bench: build test-deps
	scripts/bench.sh

## bench-ipvs: the IPVS benchmarks, in the User-Mode Linux guest, each
## beside ipvsadm doing the same work (docs/benchmarks.md).
bench-ipvs:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES)"
	@mkdir -p $(UML_BIN)
	$(GO) test -c -o $(UML_BIN)/ipvs.test ./ipvs
	integration/uml/run.sh -m $(UML_MEM) -t $(UML_TIMEOUT) -C ipvs -- ../$(UML_BIN)/ipvs.test \
		-test.run '^$$' -test.bench Kernel -test.benchtime $${IPVS_ROUNDS:-3}x

## bench-lvs: the daemons beside keepalived in the guest: health checks
## (BENCH_SIZES, "VSxRS ..."), the IPVS work of start, reload and idle
## memory, adverts under check load. BENCH_ONLY narrows it to one of them
## (a -test.bench pattern); BENCH_WRAP="strace -f -c -o F" wraps the daemons;
## BENCH_WHO=directord (or keepalived) measures one of them alone.
## 10,000 real servers (BENCH_SIZES=100x100) need the host's
## vm.max_map_count raised first: sysctl -w vm.max_map_count=1048576.
BENCH_SIZES ?= 4x5 5x10 10x10 10x20 20x20
BENCH_ONLY ?= ChecksBesideKeepalived|DaemonsBesideKeepalived|AdvertsUnderChecks
bench-lvs:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES) keepalived"
	@mkdir -p $(UML_BIN)
	$(BUILD) -o $(UML_BIN)/directord ./cmd/directord
	$(BUILD) -o $(UML_BIN)/directord-bgp ./cmd/directord-bgp
	$(GO) test -c -o $(UML_BIN)/integration-lvs.test ./integration/lvs
	integration/uml/run.sh -m 4096M -t 3600 -e "BENCH_WRAP=$${BENCH_WRAP:-}" -e "BENCH_SIZES=$(BENCH_SIZES)" -e "BENCH_WHO=$${BENCH_WHO:-}" \
		-C integration/lvs -- ../../$(UML_BIN)/integration-lvs.test \
		-test.run '^$$' -test.bench '$(BENCH_ONLY)' -test.benchtime 1x -test.timeout 3500s

## bench-lab: the lab's benchmarks in the guest (integration/lab): a
## director's directord SIGKILLed under traffic, and a real server added,
## each in the VRRP pair and in the active-active lab in the same run
## (docs/benchmarks.md). LAB_BENCH narrows it (a -test.bench pattern),
## LAB_ROUNDS rounds each (default 1; every round builds a lab).
LAB_BENCH ?= DirectorLoss|Remap
## LAB_MEASURE: the lab's measurements that are tests by form, run only
## here (TestActiveCapacity: what the guest carries, docs/lab.md).
LAB_MEASURE ?= ^TestActiveCapacity$$
bench-lab:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES) frr"
	@mkdir -p $(UML_BIN)
	$(BUILD) -o $(UML_BIN)/directord ./cmd/directord
	$(BUILD) -o $(UML_BIN)/directord-bgp ./cmd/directord-bgp
	$(BUILD) -o $(UML_BIN)/directorctl ./cmd/directorctl
	$(GO) test -c -o $(UML_BIN)/integration-lab.test ./integration/lab
	integration/uml/run.sh -m $(UML_MEM) -t 3600 -e DIRECTORD_LAB_CAPACITY=1 -C integration/lab -- ../../$(UML_BIN)/integration-lab.test \
		-test.run '$(LAB_MEASURE)' -test.v -test.bench '$(LAB_BENCH)' -test.benchtime $${LAB_ROUNDS:-1}x -test.timeout 3500s

## bench-checks: the health-check benchmark alone (bench-lvs's first part).
bench-checks:
	@$(MAKE) --no-print-directory bench-lvs BENCH_ONLY=ChecksBesideKeepalived

## fuzz: every fuzz target in turn, FUZZTIME each (default 60s), with a
## table of executions and new inputs per target (scripts/fuzz.sh);
## FUZZ_ONLY=FuzzLoad (a regular expression) runs only those it matches.
fuzz:
	GO=$(GO) scripts/fuzz.sh $${FUZZTIME:-60s}

## fuzz-smoke: every fuzz target for FUZZ_SMOKE_TIME (30000 executions) in
## fuzzing mode, as make test does: fails on an input that crashes, breaks
## a target's assertions (its known-good seeds must decode) or runs too
## long. A count, not a duration: Go 1.26 can fail a duration-bounded run
## that found nothing (go.dev/issue/75804, scripts/fuzz.sh), and a count
## only takes longer on a busy machine.
FUZZ_SMOKE_TIME ?= 30000x
fuzz-smoke:
	GO=$(GO) scripts/fuzz.sh $(FUZZ_SMOKE_TIME)

## demo: the lab (docs/lab.md): a director pair at work, step by step, in
## the User-Mode Linux guest (make integration's), whose kernel has IPVS.
demo:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES)"
	@mkdir -p $(UML_BIN)
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directord ./cmd/directord
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directord-bgp ./cmd/directord-bgp
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directorctl ./cmd/directorctl
	$(BUILD) -o $(UML_BIN)/lab-demo ./integration/lab/cmd/demo
	@integration/uml/run.sh -m $(UML_MEM) -t 600 -- \
		$(UML_BIN)/lab-demo -directord $(UML_BIN)/directord -directorctl $(UML_BIN)/directorctl

## demo-active: the active-active lab (docs/lab.md): three directors
## announcing one VIP by BGP to a router running FRR, step by step.
demo-active:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(UML_APT_PACKAGES) frr"
	@mkdir -p $(UML_BIN)
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directord ./cmd/directord
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directord-bgp ./cmd/directord-bgp
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(UML_BIN)/directorctl ./cmd/directorctl
	$(BUILD) -o $(UML_BIN)/lab-demo ./integration/lab/cmd/demo
	@integration/uml/run.sh -m $(UML_MEM) -t 900 -- \
		$(UML_BIN)/lab-demo -active -directord $(UML_BIN)/directord -directorctl $(UML_BIN)/directorctl

clean:
	rm -rf $(BIN)
