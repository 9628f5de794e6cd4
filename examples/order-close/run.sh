#!/usr/bin/env bash
# The order-close demo, end to end (what `make demo` runs):
#   a throwaway Madeira server on a free loopback port, three workers (Python, Node.js, Java)
#   sharing queue "orders", and a Go producer that places ORDERS orders and submits every
#   order's close_timeout task twice with the same idempotency_key. Then it waits until every
#   task is terminal, stops everything and checks the ledger: each order closed exactly once.
#
# Environment: MADEIRA_BIN (default <repo>/build/madeira), ORDERS (60), DELAY (3 seconds;
# 15 minutes in production), WORK_MS (simulated work per close, 100), KEEP=1 keeps the temp dir,
# IDEMPOTENCY=off submits without idempotency_key: the incident this prevents (orders closed
# twice) — the report then fails on purpose.
# Needs the SDKs built first (make demo does it):
#   (cd sdk/node && npm ci && npm run build)
#   mvn -q -B -f sdk/java/pom.xml install -DskipTests
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MADEIRA_BIN="${MADEIRA_BIN:-$REPO/build/madeira}"
case "$MADEIRA_BIN" in /*) ;; *) MADEIRA_BIN="$PWD/$MADEIRA_BIN" ;; esac
ORDERS="${ORDERS:-60}"
DELAY="${DELAY:-3}"
export WORK_MS="${WORK_MS:-100}"
WITH_KEY=true
[ "${IDEMPOTENCY:-on}" = off ] && WITH_KEY=false

die() { echo "run.sh: $*" >&2; exit 2; }
[ -x "$MADEIRA_BIN" ] || die "no server binary at $MADEIRA_BIN (make build, or set MADEIRA_BIN)"
for tool in go python3 node java mvn; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ -f "$REPO/sdk/node/dist/src/index.js" ] ||
  die "the Node.js SDK is not built: (cd sdk/node && npm ci && npm run build)"
SDK_JAR="$HOME/.m2/repository/dev/madeira/madeira-sdk/0.1.0/madeira-sdk-0.1.0.jar"
[ -f "$SDK_JAR" ] || die "the Java SDK is not installed: mvn -q -B -f sdk/java/pom.xml install -DskipTests"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/order-close.XXXXXX")"
LEDGER="$WORK/ledger.txt"
PIDS=()          # every process this script started, newest last
STATUS=1

stop_pid() {     # stop_pid PID SECONDS: SIGTERM, wait up to SECONDS, then SIGKILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "run.sh: pid $pid ignored SIGTERM for $2 s: killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}" 10; done
  if [ "$STATUS" -eq 0 ] && [ -z "${KEEP:-}" ]; then
    rm -rf "$WORK"
  else
    echo "logs, ledger and data kept in $WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for_line() { # wait_for_line FILE PATTERN SECONDS PID
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || { echo "run.sh: process $4 exited early; its log:" >&2; tail -n 30 "$1" >&2; return 1; }
    sleep 0.1
  done
  echo "run.sh: no '$2' in $1 after $3 s:" >&2; tail -n 30 "$1" >&2
  return 1
}

echo "== building the Go producer and the Java worker"
(cd "$HERE/producer-go" && go build -o "$WORK/producer-go" .)
mvn -q -B -Dstyle.color=never -f "$HERE/worker-java/pom.xml" compile dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt >"$WORK/mvn.log" 2>&1 || { cat "$WORK/mvn.log"; exit 1; }
JAVA_CP="$HERE/worker-java/target/classes:$(cat "$HERE/worker-java/target/classpath.txt")"

echo "== starting madeira ($MADEIRA_BIN) on a free loopback port"
"$MADEIRA_BIN" serve --listen 127.0.0.1:0 --data-dir "$WORK/data" --store sqlite \
  >"$WORK/server.out" 2>"$WORK/server.log" &
PIDS+=($!)
wait_for_line "$WORK/server.out" "listening on " 15 "${PIDS[0]}"
ADDR="$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$WORK/server.out" | head -n 1)"
export MADEIRA_URL="http://$ADDR" LEDGER
echo "   $MADEIRA_URL (data in $WORK/data)"

echo "== starting the workers: Python, Node.js, Java (4 slots each, queue \"orders\")"
PYTHONPATH="$REPO/sdk/python${PYTHONPATH:+:$PYTHONPATH}" python3 -u "$HERE/worker-python/worker.py" \
  >"$WORK/python.log" 2>&1 &
PIDS+=($!); PY=$!
node "$HERE/worker-node/worker.mjs" >"$WORK/node.log" 2>&1 &
PIDS+=($!); NODE=$!
java -cp "$JAVA_CP" example.OrderCloseWorker >"$WORK/java.log" 2>&1 &
PIDS+=($!); JAVA=$!
wait_for_line "$WORK/python.log" "ready" 20 $PY
wait_for_line "$WORK/node.log" "ready" 20 $NODE
wait_for_line "$WORK/java.log" "ready" 30 $JAVA
grep -h "ready" "$WORK/python.log" "$WORK/node.log" "$WORK/java.log" | sed 's/^/   /'

echo "== placing $ORDERS orders; their close fires in ${DELAY}s (production: 15 min)"
"$WORK/producer-go" -server "$MADEIRA_URL" -orders "$ORDERS" -delay "${DELAY}s" \
  -idempotency-key=$WITH_KEY | sed 's/^/   /'

echo "== waiting (at most 60 s after the delay) until every task is terminal"
python3 "$HERE/report.py" wait "$MADEIRA_URL" $((2 * ORDERS)) $((DELAY + 60))

echo "== stopping the workers (SIGTERM: graceful close)"
for pid in $PY $NODE $JAVA; do stop_pid "$pid" 25; done
grep -h "stopped" "$WORK/python.log" "$WORK/node.log" "$WORK/java.log" | sed 's/^/   /' || true

set +e
python3 "$HERE/report.py" report "$MADEIRA_URL" "$LEDGER" "$ORDERS"
STATUS=$?
set -e
stop_pid "${PIDS[0]}" 15
exit $STATUS
