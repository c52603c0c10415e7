# `make demo`: build, profile the bundled example, print the report.
# `make test`: the whole test suite.
SWIFT ?= swift
DEMO_TIMELINE ?= .build/demo-timeline.json
# Test programs (Tests/Fixtures), built once per `make test` and shared by the tests.
FIXTURES := Tests/Fixtures
FIXTURES_BIN = $(abspath $(FIXTURES)/.build/debug)

.PHONY: deps demo test check-c fixtures bench bench-html bench-watcher audit-module

deps:
	@scripts/ensure-deps.sh

demo: deps
	$(SWIFT) build -c release
	rm -f $(DEMO_TIMELINE)
	COLDSTART=$(abspath $(DEMO_TIMELINE)) .build/release/ServiceStartup
	.build/release/coldstart report $(DEMO_TIMELINE)

test: deps check-c fixtures
	@scripts/ensure-deps.sh chromium golang-go  # the HTML and pprof tests' viewers; they skip without them
	$(SWIFT) build
	$(MAKE) audit-module
	COLDSTART_FIXTURES=$(FIXTURES_BIN) $(SWIFT) test --disable-swift-testing

fixtures: deps
	$(SWIFT) build --package-path $(FIXTURES)

# What sampling costs: per-sample handler cost and launch-time ratios, from one
# interleaved run of release builds (docs/performance.md). BENCH_RUNS=N.
BENCH_RUNS ?= 40
bench: deps
	$(SWIFT) build -c release
	$(SWIFT) build -c release --package-path $(FIXTURES)
	$(SWIFT) build -c release --package-path $(FIXTURES)/Unprofiled
	$(FIXTURES)/.build/release/SamplerBench --runs $(BENCH_RUNS) \
	  --host $(abspath $(FIXTURES)/.build/release/SamplerHost) \
	  --linked $(abspath .build/release/ServiceStartup) \
	  --plain $(abspath $(FIXTURES)/Unprofiled/.build/release/ServiceStartup)

# What the off-CPU watcher costs (docs/performance.md, "Off-CPU watcher").
bench-watcher: deps
	scripts/bench-watcher.sh $(BENCH_RUNS)

# The LD_AUDIT module as plain C: SwiftPM links its own build of it with
# libswiftCore, which the audit namespace then loads too (docs/before-main.md).
# `coldstart` looks in ../lib/coldstart/ (beside its build directory) first.
# AUDIT_CONFIG=release for a release build of coldstart.
AUDIT_CONFIG ?= debug
audit-module:
	@lib="$$($(SWIFT) build -c $(AUDIT_CONFIG) --show-bin-path)/../lib/coldstart"; mkdir -p "$$lib" && \
	cc -std=c11 -D_GNU_SOURCE -O2 -fPIC -shared -Wall -Wextra -Werror -ICSupport/ColdstartAudit/include \
	   CSupport/ColdstartAudit/audit.c -o "$$lib/libColdstartAudit.so"

# SwiftPM compiles C without extra warnings and the package may not carry
# unsafeFlags, so the capture layer is checked here with the brief's flags.
check-c:
	@for f in CSupport/*/*.c; do \
	  cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only \
	     -ICSupport/CColdstart/include -ICSupport/ColdstartEarly/include \
	     -ICSupport/CLauncher/include -ICSupport/ColdstartAudit/include $$f || exit 1; \
	done

# The HTML report and exports on a 100,000-sample profile: sizes, CLI times,
# page load time in headless Chromium (docs/report.md).
bench-html: deps
	scripts/bench-html.sh
