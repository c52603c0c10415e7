# `make demo`: build, profile the bundled example, print the report.
# `make test`: the whole test suite.
# `make install [PREFIX=/usr/local] [DESTDIR=]`: the coldstart CLI, its LD_AUDIT module, man page,
# completions and the coldstart-keep-warm systemd unit (SYSTEMD_UNIT_DIR, default
# PREFIX/lib/systemd/system).
# The Debian packages each installs are listed in README.md ("Packages each command installs").
SWIFT ?= swift
DEMO_RUNS ?= .build/demo-runs
# Test programs (Tests/Fixtures), built once per `make test` and shared by the tests.
FIXTURES := Tests/Fixtures
FIXTURES_BIN = $(abspath $(FIXTURES)/.build/debug)

.PHONY: deps cli demo test mutants test-arm64 check-debian-kernel check-c fixtures bench bench-cli bench-html bench-watcher bench-estimate install fuzz fuzz-short audit-module

deps:
	@scripts/ensure-deps.sh

# Under `coldstart run`: an exact start, the loader sampled from exec, and a
# kernel kept ready for perf events (a lone launch on a quiet kernel starts
# sampling 10-18 ms late: docs/report.md).
demo: cli
	$(SWIFT) build -c release --product ServiceStartup
	rm -rf $(DEMO_RUNS)
	$(CLI) run -n 1 --out $(DEMO_RUNS) .build/release/ServiceStartup
	$(CLI) report $(DEMO_RUNS)/run-1.json

# The CLI as `make install` installs it, which `make demo` runs too: release,
# the Swift runtime linked statically (it maps none of the Swift libraries, so
# `coldstart run --cold` cannot keep the app's pages cached), its LD_AUDIT
# module where it looks for it. In a build directory of its own: a static
# build passes -static-stdlib to every Swift compile, so a directory shared
# with `swift build -c release` recompiled every Swift module at each switch
# between the two.
CLI_BUILD := .build/install
CLI := $(CLI_BUILD)/release/coldstart
cli: deps
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path $(CLI_BUILD) --product coldstart
	$(MAKE) audit-module AUDIT_CONFIG=release AUDIT_BUILD=$(CLI_BUILD)

# What the tests use besides the build's packages; each test skips without
# its own, naming it: glibc's debug symbols name the loader's frames
# (LoaderTests, RelocationTests); a browser, Go's pprof, the shells, groff,
# Prometheus and its node exporter, the test servers' Python (and its venv for
# opentelemetry-proto), an aarch64 compiler and C library (InspectTests) and
# setcap (PerfRefusedTests).
TEST_PACKAGES := chromium golang-go zsh fish groff-base prometheus prometheus-node-exporter python3 python3-venv \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross libc6-dbg libcap2-bin
test: deps check-c fixtures
	@scripts/ensure-deps.sh $(TEST_PACKAGES)
	@# opentelemetry-proto for the OTLP tests: a failure is said here, and
	@# FleetOTLPTests then skips (saying why) or fails (FleetTestSupport.swift).
	@scripts/ensure-python-deps.sh >/dev/null || echo "make test: no Python with opentelemetry-proto (above, status $$?): see FleetOTLPTests" >&2
	$(SWIFT) build
	$(MAKE) audit-module
	@# Ends with every skipped test and its reason; the status is swift test's.
	COLDSTART_FIXTURES=$(FIXTURES_BIN) scripts/test-with-skips.sh $(SWIFT) test --disable-swift-testing

# Each deliberate breakage in Tests/Mutants, one at a time, must make one of
# the tests its patch names fail, not skip (scripts/mutants.sh; the tree is
# restored after each, and on an interrupt). A few minutes; not part of CI.
# MUTANTS=Tests/Mutants/NN-name.patch for some of them.
MUTANTS ?=
mutants: deps fixtures
	@scripts/ensure-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build
	$(MAKE) audit-module
	SWIFT=$(SWIFT) COLDSTART_FIXTURES=$(FIXTURES_BIN) scripts/mutants.sh $(MUTANTS)

# The capture layer on arm64, under emulation: cross-built with Debian's
# aarch64 compiler, run on Debian's arm64 kernel in qemu-system-aarch64, its
# timelines checked by this machine's CLI (docs/arm64.md). A few minutes.
test-arm64: deps
	$(SWIFT) build --product coldstart
	scripts/test-arm64.sh "$$($(SWIFT) build --show-bin-path)/coldstart"

# A lone launch as an unprivileged user where the kernel refuses perf events
# for real: Debian's own kernel (perf_event_paranoid 3) under
# qemu-system-x86_64, its timelines checked by this machine's CLI
# (docs/containers.md). Downloads the kernel package; not part of `make test`.
check-debian-kernel: deps
	$(SWIFT) build --product coldstart
	scripts/check-debian-kernel.sh "$$($(SWIFT) build --show-bin-path)/coldstart"

# build-info records what `coldstart --version` cannot know from SwiftPM alone.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
install: cli
	install -d $(INSTALL_ROOT)/bin $(INSTALL_ROOT)/lib/coldstart $(INSTALL_ROOT)/share/man/man1 $(INSTALL_ROOT)/share/coldstart \
	  $(INSTALL_ROOT)/share/bash-completion/completions $(INSTALL_ROOT)/share/zsh/site-functions \
	  $(INSTALL_ROOT)/share/fish/vendor_completions.d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	bin="$$($(SWIFT) build -c release --scratch-path $(CLI_BUILD) --show-bin-path)" && \
	  install -m 755 "$$bin/coldstart" $(INSTALL_ROOT)/bin/coldstart && \
	  install -m 644 "$$bin/../lib/coldstart/libColdstartAudit.so" $(INSTALL_ROOT)/lib/coldstart/libColdstartAudit.so
	$(CLI) man > $(INSTALL_ROOT)/share/man/man1/coldstart.1
	$(CLI) completion bash > $(INSTALL_ROOT)/share/bash-completion/completions/coldstart
	$(CLI) completion zsh > $(INSTALL_ROOT)/share/zsh/site-functions/_coldstart
	$(CLI) completion fish > $(INSTALL_ROOT)/share/fish/vendor_completions.d/coldstart.fish
	sed 's|@BINDIR@|$(PREFIX)/bin|' dist/systemd/coldstart-keep-warm.service > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/coldstart-keep-warm.service
	chmod 644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/coldstart-keep-warm.service
	{ echo "commit: $$(git describe --always --dirty 2>/dev/null || echo unknown)"; \
	  echo "swift: $$($(SWIFT) --version 2>/dev/null | head -n 1)"; } > $(INSTALL_ROOT)/share/coldstart/build-info
	@echo "installed $(INSTALL_ROOT)/bin/coldstart ($$($(INSTALL_ROOT)/bin/coldstart --version | head -n 1))"

# A file added to or removed from this package (a directory newer than the
# fixtures' build plan) is not seen by SwiftPM in a path dependency until the
# fixtures' manifest changes: then their link missed the new file's symbols.
fixtures: deps
	@if [ -f $(FIXTURES)/.build/debug.yaml ] && [ -n "$$(find CSupport Sources -type d -newer $(FIXTURES)/.build/debug.yaml | head -n 1)" ]; then \
	  touch $(FIXTURES)/Package.swift; fi
	$(SWIFT) build --package-path $(FIXTURES)

# What sampling costs: per-sample handler cost and launch-time ratios, from one
# interleaved run of release builds (docs/performance.md), for the example and
# for a ~10 ms command-line tool (CodableTool; BENCH_QUIET_RUNS launches of it
# after 3 s with no perf event open), and its lone launches: quiet kernel, with
# `coldstart keep-warm`, back to back, BENCH_LONE_LAUNCHES of each, with the other
# CPU idle and busy, and what keep-warm costs (`make bench-lone`: that part alone).
# BENCH_RUNS=N. BENCH_TOOL_BEFORE=PATH (another build of CodableTool, e.g. the
# previous commit's) joins the tool's rounds: a change measured before/after in
# one interleaved run.
BENCH_RUNS ?= 40
BENCH_QUIET_RUNS ?= 6
BENCH_LONE_LAUNCHES ?= 20
BENCH_ARGS = --runs $(BENCH_RUNS) --quiet-runs $(BENCH_QUIET_RUNS) --lone-launches $(BENCH_LONE_LAUNCHES) \
	  --host $(abspath $(FIXTURES)/.build/release/SamplerHost) \
	  --linked $(abspath .build/release/ServiceStartup) \
	  --plain $(abspath $(FIXTURES)/Unprofiled/.build/release/ServiceStartup) \
	  --tool $(abspath $(FIXTURES)/.build/release/CodableTool) \
	  --coldstart $(abspath .build/release/coldstart) \
	  $(if $(BENCH_TOOL_BEFORE),--tool-before $(abspath $(BENCH_TOOL_BEFORE)))
bench: deps
	$(SWIFT) build -c release
	$(SWIFT) build -c release --package-path $(FIXTURES)
	$(SWIFT) build -c release --package-path $(FIXTURES)/Unprofiled
	$(FIXTURES)/.build/release/SamplerBench $(BENCH_ARGS)

.PHONY: bench-lone
bench-lone: deps
	$(SWIFT) build -c release --product coldstart
	$(SWIFT) build -c release --package-path $(FIXTURES)
	$(FIXTURES)/.build/release/SamplerBench $(BENCH_ARGS) --only lone

# How long a SIGTERM takes to end a launch with 8 busy threads, profiled vs
# not, interleaved (docs/performance.md, "Exit, kill and the host's signals").
.PHONY: bench-kill
bench-kill: deps
	$(SWIFT) build -c release --package-path $(FIXTURES)
	scripts/bench-kill.py $(abspath $(FIXTURES)/.build/release/HostPatterns) $(BENCH_RUNS)

# What the off-CPU watcher costs (docs/performance.md, "Off-CPU watcher").
bench-watcher: deps
	scripts/bench-watcher.sh $(BENCH_RUNS)

# How close a report's "without profiling" estimate comes to the launch run
# with --phases-only (docs/performance.md, "Without profiling").
bench-estimate: deps
	scripts/bench-estimate.sh $(BENCH_RUNS)

# The LD_AUDIT module as plain C: SwiftPM links its own build of it with
# libswiftCore, which the audit namespace then loads too (docs/before-main.md).
# `coldstart` looks in ../lib/coldstart/ (beside its build directory) first.
# AUDIT_CONFIG=release for a release build of coldstart, AUDIT_BUILD=DIR for
# one in another build directory (--scratch-path).
AUDIT_CONFIG ?= debug
AUDIT_BUILD ?=
audit-module:
	@lib="$$($(SWIFT) build -c $(AUDIT_CONFIG) $(if $(AUDIT_BUILD),--scratch-path $(AUDIT_BUILD)) --show-bin-path)/../lib/coldstart"; mkdir -p "$$lib" && \
	cc -std=c11 -D_GNU_SOURCE -O2 -fPIC -shared -Wall -Wextra -Werror -ICSupport/ColdstartAudit/include \
	   CSupport/ColdstartAudit/audit.c -o "$$lib/libColdstartAudit.so"

# SwiftPM compiles C without extra warnings and the package may not carry
# unsafeFlags, so the capture layer is checked here with the brief's flags.
check-c:
	@for f in CSupport/*/*.c CSupport/CColdstart/*/*.c Tests/CTestOnly/*.c Tests/Fixtures/Sources/BridgeHold/*.c Tests/Fixtures/Sources/CPUPin/*.c; do \
	  cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only \
	     $(foreach d,. base sampler watcher writer,-ICSupport/CColdstart/$(d)) \
	     -ICSupport/CColdstart/include -ICSupport/ColdstartEarly/include \
	     -ICSupport/CLauncher/include -ICSupport/ColdstartAudit/include -ICSupport/CHTTP/include \
	     -ITests/CTestOnly/include -ITests/Fixtures/Sources/BridgeHold/include -ITests/Fixtures/Sources/CPUPin/include -ICSupport/CUnwind/include $$f || exit 1; \
	done

# The CLI's own speed on big inputs (docs/performance.md, "The CLI on big
# inputs"): report, report --html and every export of 100,000 and 1,000,000
# samples, and aggregate of 10,000 and 100,000 timelines, as CPU time against
# Python's json.load of the same files, from one interleaved run of a release
# build. The inputs are made once into .build/bench-cli. BENCH_CLI_ROUNDS=N.
BENCH_CLI_ROUNDS ?= 3
bench-cli: deps
	$(SWIFT) build -c release --product coldstart
	scripts/bench-cli.py .build/release/coldstart $(BENCH_CLI_ROUNDS)

# The HTML report and exports on a 100,000-sample profile: sizes, CLI times,
# page load time in headless Chromium (docs/report.md).
bench-html: deps
	scripts/bench-html.sh

# Mutation fuzzing of the timeline and ELF readers through load, analysis and
# every output (Tests/ColdstartTests/Fuzz/FuzzTests.swift). `make test` runs it for
# 30 s with a fixed seed; `make fuzz` for FUZZ_SECONDS with a fresh seed (or
# FUZZ_SEED=S to replay one); `make fuzz-short` is the 30 s run alone.
# Crashing inputs are saved in .build/fuzz-crashes, named by seed and input.
FUZZ_SECONDS ?= 1800
FUZZ_SEED ?= $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
FUZZ_TEST = --filter FuzzTests.testTimelineAndELFReadersSurviveMutatedInputs
fuzz: deps
	$(SWIFT) build --build-tests
	COLDSTART_FUZZ_SECONDS=$(FUZZ_SECONDS) COLDSTART_FUZZ_SEED=$(FUZZ_SEED) COLDSTART_FUZZ_CRASHES=$(abspath .build/fuzz-crashes) \
	  $(SWIFT) test --skip-build --disable-swift-testing $(FUZZ_TEST)

fuzz-short: deps
	$(SWIFT) build --build-tests
	COLDSTART_FUZZ_SECONDS=30 COLDSTART_FUZZ_CRASHES=$(abspath .build/fuzz-crashes) \
	  $(SWIFT) test --skip-build --disable-swift-testing $(FUZZ_TEST)
