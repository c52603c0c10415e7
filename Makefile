# `make demo`: build, profile the bundled example, print the report.
# `make test`: the whole test suite.
SWIFT ?= swift
DEMO_TIMELINE ?= .build/demo-timeline.json

.PHONY: deps demo test bench

deps:
	@scripts/ensure-deps.sh

demo: deps
	$(SWIFT) build -c release
	rm -f $(DEMO_TIMELINE)
	COLDSTART=$(abspath $(DEMO_TIMELINE)) .build/release/ServiceStartup
	.build/release/coldstart report $(DEMO_TIMELINE)

test: deps
	$(SWIFT) build
	$(SWIFT) test
