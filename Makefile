# Perch: the two commands a newcomer needs are `make run` and `make test`.
SWIFT ?= swift
CONFIG ?= config.yaml
FUZZ_SECONDS ?= 600

.PHONY: run test check build lint format fuzz bench api-fuzz setup release clean

## Set up, build and start the host on the embedded backend with config.yaml and bots/.
run: setup
	$(SWIFT) build -c release --product perch
	./scripts/dev-key .build/release/perch run --config $(CONFIG)

## Run the whole test suite (the format lint, the release build `make run` uses, the Swift tests, the
## web chat in a headless browser, the attack suite against the release build, the Matrix backend
## against a real Synapse, the Swift plugin example in its own package and its own perch, the Python
## plugin SDK's tests and its example, the self-contained release build, tried) as CI does. The release
## build compiles each module whole, and can fail where the tests' debug build does not. The Swift
## tests run under a watchdog (scripts/swift-test) that names a hung test and prints its stacks.
test:
	@./scripts/setup --tests
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests examples/swift-plugin
	$(SWIFT) build -c release --product perch
	python3 -m unittest discover -s Tests/scripts
	./scripts/swift-test
	./scripts/web-test
	./scripts/attack-test
	./scripts/matrix-test
	./scripts/example-plugin-test
	./scripts/python-sdk-test
	./scripts/release

## Validate config.yaml and every bot file.
check: setup
	$(SWIFT) build --product perch
	./scripts/dev-key .build/debug/perch check --config $(CONFIG)

build: setup
	$(SWIFT) build

setup:
	@./scripts/setup

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests examples/swift-plugin

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests examples/swift-plugin

## Fuzz the configuration loader for FUZZ_SECONDS (default 600) from the seed corpus in Fuzz/corpus.
fuzz: setup
	$(SWIFT) build --build-path .build/fuzz --product FuzzConfig --sanitize=fuzzer --sanitize=address \
		-Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table
	mkdir -p .build/fuzz-corpus && cp -n Fuzz/corpus/* .build/fuzz-corpus/
	./.build/fuzz/debug/FuzzConfig .build/fuzz-corpus -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10

## schemathesis against docs/openapi.yaml and a live host (installs schemathesis from PyPI).
api-fuzz: setup
	./scripts/api-fuzz

## dist/perch: perch with Swift's runtime linked in, for a Debian machine without the toolchain, and
## dist/perch.packages, the Debian packages it needs there (docs/deploying.md).
release:
	./scripts/release

## Every benchmark in one invocation (peers-v1 with errbot/opsdroid/maubot, store, scale); see BENCHMARKS.md.
bench:
	@./scripts/setup --bench
	./scripts/bench

clean:
	rm -rf .build
