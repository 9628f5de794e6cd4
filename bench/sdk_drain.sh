#!/usr/bin/env bash
# No-op SDK workers (64 slots) draining preloaded tasks from a fresh embedded server, one SDK
# after another, median of 3 runs each: the "make bench" half that the C++ load generator
# cannot show. Usage: bench/sdk_drain.sh MADEIRA_BIN
set -uo pipefail
cd "$(dirname "$0")/.."
export MADEIRA_BIN="$(realpath "${1:?usage: bench/sdk_drain.sh MADEIRA_BIN}")"
median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'; }
rate() { grep -o '= [0-9.,]* tasks/s' | awk '{gsub(",", "", $2); print $2}'; }
report() { printf '%-8s drain, 64 slots  median %8s tasks/s  (runs: %s)\n' "$1" "$(echo "$2" | median)" "$(echo $2)"; }

runs() { for _ in 1 2 3; do "$@" 2>/dev/null | rate | tail -1; done; }

cpp_drain="$(dirname "$MADEIRA_BIN")/madeira_cpp_drain"
[ -x "$cpp_drain" ] && report c++ "$(runs "$cpp_drain" 50000)"
report go "$(cd sdk/go && runs go run ./cmd/madeira-bench -n 50000)"
report python "$(runs python3 sdk/python/bench/bench.py --tasks 20000 --runs 1)"
(cd sdk/node && { [ -d node_modules ] || npm ci --silent; } && npm run --silent build) >/dev/null
report node "$(runs node sdk/node/dist/bench/drain.js 20000 1)"
report java "$(cd sdk/java && BENCH_WARMUP=20000 bash bench/run.sh 50000 64 2>/dev/null | grep '^drained' | rate)"
