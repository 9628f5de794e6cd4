# Madeira — the two commands a user needs are `make run` and `make test`.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
BENCH_BUILD?= build-bench
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
# ccache caches precompiled-header builds only with these relaxed checks.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: deps deps-test build run test unit asan integration integration-redis-pg console-test sdk-test fuzz fuzz-short bench bench-peers clean format format-check demo
SDKS       ?= python go node java

deps:
	@bash scripts/install-deps.sh

deps-test:
	@bash scripts/install-deps.sh --test
	@python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target madeira
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json

run: build
	$(BUILD)/madeira serve --listen 127.0.0.1:8080 --data-dir ./data

# Everything: unit + conformance tests, the same under ASan+UBSan, integration tests
# against the real binary, and a short fuzz run when clang is present. The redis-pg store's
# tests get a private Redis and PostgreSQL (scripts/test-services.sh; ctest starts them through
# a fixture), so `make test` and `make unit` always run them.
test: deps-test $(BUILD)/build.ninja
	$(MAKE) format-check
	cmake --build $(BUILD) -j $(JOBS)
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) asan
	$(MAKE) fuzz-short
	$(MAKE) integration
	$(MAKE) console-test
	$(MAKE) integration-redis-pg
	$(MAKE) sdk-test
	PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider bench/peers/test_report.py

unit: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan:
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DMADEIRA_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target core_test store_test engine_test delivery_test
	@# store_test's redis-pg cases need Redis + PostgreSQL: private ones, stopped afterwards.
	bash scripts/test-services.sh run /tmp/madeira-asan-services-$$$$ sh -c \
	  'for t in core_test store_test engine_test delivery_test; do $(ASAN_BUILD)/$$t --gtest_brief=1 || exit 1; done'

integration: build
	MADEIRA_BIN=$(abspath $(BUILD)/madeira) python3 -m pytest -q tests/integration

# The same suite on --store redis-pg, against a private Redis + PostgreSQL (stopped afterwards);
# tests marked sqlite_only are skipped there.
integration-redis-pg: build
	MADEIRA_BIN=$(abspath $(BUILD)/madeira) MADEIRA_TEST_STORE=redis-pg \
	  bash scripts/test-services.sh run /tmp/madeira-it-services-$$$$ \
	  python3 -m pytest -q -rs tests/integration

# The operations console (GET /ui/) driven in Debian's Chromium by playwright-core (tests/console).
console-test: build
	MADEIRA_BIN=$(abspath $(BUILD)/madeira) bash tests/console/test.sh

# Every SDK runs its own suite, including the shared conformance scenario, against this build.
sdk-test: build
	@for s in $(SDKS); do \
	  if [ -f sdk/$$s/test.sh ]; then echo "== sdk/$$s"; \
	    MADEIRA_BIN=$(abspath $(BUILD)/madeira) bash sdk/$$s/test.sh || exit 1; fi; \
	done

# The polyglot example (examples/order-close): a Go producer, Python + Node.js + Java workers,
# every order closed exactly once thanks to idempotency_key. Needs go, node, java and mvn.
demo: build
	@[ -f sdk/node/dist/src/index.js ] || (cd sdk/node && npm ci && npm run build)
	mvn -q -B -Dstyle.color=never -f sdk/java/pom.xml install -DskipTests
	MADEIRA_BIN=$(abspath $(BUILD)/madeira) bash examples/order-close/run.sh

$(FUZZ_BUILD)/build.ninja:
	CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMADEIRA_FUZZ=ON -DMADEIRA_TESTS=OFF

FUZZERS ?= envelope webhook request record config

fuzz: $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) $(foreach f,$(FUZZERS),--target $(f)_fuzz)
	@# libFuzzer adds what it finds to the corpus folder: work on a copy, keep the seeds clean.
	for f in $(FUZZERS); do \
	  rm -rf $(FUZZ_BUILD)/corpus-$$f && cp -r fuzz/corpus/$$f $(FUZZ_BUILD)/corpus-$$f && \
	  $(FUZZ_BUILD)/$${f}_fuzz -max_total_time=$${FUZZ_SECONDS:-300} $(FUZZ_BUILD)/corpus-$$f \
	    || exit 1; \
	done

fuzz-short:
	@if command -v clang++-14 >/dev/null; then $(MAKE) fuzz FUZZ_SECONDS=20; \
	 else echo "clang++-14 not found: skipping the fuzz run"; fi

# Every scenario on the embedded store and a, b, c, f on redis-pg, against a private
# Redis + PostgreSQL madeira_bench starts and stops itself; the runs of the two stores alternate,
# a side-by-side table ends the output, and the figures go to BENCH_JSON (bench/peers/report.py
# reads it: --madeira $(BENCH_JSON)).
BENCH_JSON ?= $(BENCH_BUILD)/bench.json
bench: deps-test
	cmake -S . -B $(BENCH_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DMADEIRA_BENCH=ON -DMADEIRA_TESTS=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target madeira madeira_bench madeira_cpp_drain
	$(BENCH_BUILD)/madeira_bench --madeira $(BENCH_BUILD)/madeira --store sqlite,redis-pg \
	  --json $(BENCH_JSON)
	bash bench/sdk_drain.sh $(BENCH_BUILD)/madeira

# BullMQ and Asynq on one private Redis (AOF, appendfsync always) and the machine's limits, 3 runs
# each, into bench/peers/results.json (PEERS_OUT=FILE for another path); right after, in the same
# window, Madeira's c and d in the peers' own shapes (c at 2,000/s, 10,000 delayed tasks:
# madeira_bench --only peers, both stores, 3 runs, ~2 minutes) into PEER_SHAPES_JSON; then all the
# tables into docs/benchmarks.md, Madeira's a and b rows from BENCH_JSON when `make bench` left one
# (run that first for a side-by-side; the reading of the figures there is written by hand).
# Under 15 minutes in all.
PEERS_OUT ?= bench/peers/results.json
PEER_SHAPES_JSON ?= $(BENCH_BUILD)/bench-peer-shapes.json
bench-peers: deps-test
	cmake -S . -B $(BENCH_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DMADEIRA_BENCH=ON -DMADEIRA_TESTS=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target madeira madeira_bench
	bash bench/peers/run.sh --out $(PEERS_OUT)
	$(BENCH_BUILD)/madeira_bench --madeira $(BENCH_BUILD)/madeira --store sqlite,redis-pg \
	  --only peers --json $(PEER_SHAPES_JSON)
	python3 bench/peers/report.py $(PEERS_OUT) \
	  $(if $(wildcard $(BENCH_JSON)),--madeira $(BENCH_JSON)) --madeira $(PEER_SHAPES_JSON) \
	  --into docs/benchmarks.md
	@echo "bench-peers: tables written into docs/benchmarks.md$(if $(wildcard $(BENCH_JSON)),, (no $(BENCH_JSON): Madeira's a and b rows missing))"

# One clang-format version for everyone: another one lays some lines out differently.
CLANG_FORMAT ?= clang-format-14
format:
	git ls-files '*.cc' '*.h' | xargs $(CLANG_FORMAT) -i

format-check:
	git ls-files '*.cc' '*.h' | xargs $(CLANG_FORMAT) --dry-run --Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(BENCH_BUILD)
