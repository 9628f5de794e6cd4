#!/usr/bin/env bash
# No-op worker throughput, median of 3 runs: bench/run.sh [N] [slots]
# Each run starts its own server, warms the JVM up on BENCH_WARMUP tasks (default 50000),
# then preloads N tasks (default 100000) and times one 64-slot worker draining them.
set -euo pipefail
cd "$(dirname "$0")/.."
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
export BENCH_WARMUP="${BENCH_WARMUP:-50000}"
mvn -q -B compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >/dev/null
CP="target/classes:$(cat target/classpath.txt)"
javac -d target/bench-classes -cp "$CP" bench/Bench.java
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rates=()
for i in 1 2 3; do
  java -cp "target/bench-classes:$CP" Bench "${1:-100000}" "${2:-64}" | tee "$out"
  rates+=("$(grep '^drained' "$out" | awk '{print $(NF-1)}')")
done
median=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n 2p)
echo "median of 3: ${median} tasks/s"
