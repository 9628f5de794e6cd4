#!/usr/bin/env bash
# Peer benchmark: BullMQ and Asynq on one private Redis (AOF on), plus the machine's limits.
#
#   bench/peers/run.sh [--out FILE] [--runs N] [--scale X] [--appendfsync always|everysec]
#                      [--budget SECONDS]
#
# Installs what is missing (redis-server/redis-tools with apt, node_modules with npm ci, the Go
# drivers with go build), starts redis-server in a temp dir on a free loopback port, tunes each
# peer's worker concurrency once, then runs every scenario --runs times (FLUSHALL before each)
# and the limits as often, and writes FILE (default bench/peers/results.json): median, min and
# max per figure with versions and the commands run. Bounded: about 8 minutes at --scale 1 on an
# idle machine; when another run would end past --budget (default 780 s from the first scenario),
# the later runs are skipped and the results say how many were done.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="$here/results.json"
runs=3
scale=1
appendfsync=always
budget=780
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --scale) scale="$2"; shift 2 ;;
    --appendfsync) appendfsync="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

log() { printf '[peers %s] %s\n' "$(date +%T)" "$*" >&2; }
# Scaled task count, never below `floor`.
count() { python3 -c "import sys; print(max(int(sys.argv[3]), round(int(sys.argv[1]) * float(sys.argv[2]))))" "$1" "$scale" "${2:-1000}"; }

# --- 1. what is needed --------------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "installing redis-server and redis-tools"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq redis-server redis-tools >/dev/null
fi
for tool in node npm go python3; do
  command -v "$tool" >/dev/null || { echo "bench/peers needs $tool (make deps installs it)" >&2; exit 1; }
done
if [ ! -f "$here/bullmq/node_modules/.package-lock.json" ] ||
   [ "$here/bullmq/package-lock.json" -nt "$here/bullmq/node_modules/.package-lock.json" ]; then
  log "npm ci (bullmq)"
  (cd "$here/bullmq" && npm ci --no-audit --no-fund --loglevel=error)
fi
mkdir -p "$here/bin"
log "go build (asynq driver, limits)"
(cd "$here/asynq" && go build -o "$here/bin/asynq-bench" .)
(cd "$here/limits" && go build -o "$here/bin/limits" .)

# --- 2. a private Redis -------------------------------------------------------------------------
tmp="$(mktemp -d -t madeira-peers.XXXXXX)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis_conf=(--bind 127.0.0.1 --port "$port" --dir "$tmp" --appendonly yes --appendfsync "$appendfsync"
            --save "" --daemonize no --logfile "$tmp/redis.log")
redis-server "${redis_conf[@]}" &
redis_pid=$!
cleanup() {
  kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done
redis-cli -p "$port" ping >/dev/null
url="redis://127.0.0.1:$port/0"
log "redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-) on $url (pid $redis_pid), AOF appendfsync $appendfsync, dir $tmp"

lines="$tmp/lines.jsonl"
failures="$tmp/failures.txt"
commands="$tmp/commands.txt"
notes="$tmp/notes.txt"
: >"$notes"
: >"$lines"
: >"$failures"
: >"$commands"
flush() { redis-cli -p "$port" flushall >/dev/null; }
# step RUN LABEL CMD...: FLUSHALL, run CMD bounded in time, tag its JSON lines with the run.
step() {
  local run="$1" label="$2"
  shift 2
  flush
  log "run $run: $label"
  local output bound=(timeout 300)
  if [ "$(type -t "$1")" = function ]; then
    bound=()
  else
    echo "$*" | sed "s#$here/#bench/peers/#g; s#$url#\$REDIS_URL#g" >>"$commands"
  fi
  if output="$("${bound[@]}" "$@" 2>"$tmp/stderr")"; then
    printf '%s\n' "$output" | grep '^{' | sed "s/^{/{\"run\":$run,/" | tee -a "$lines" |
      python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); v = r.get("value")
    print("    %-8s %-10s %12s %s" % (r["peer"], r["id"], "n/a" if v is None else "%.1f" % v, r["unit"]), file=sys.stderr)' || true
  else
    log "FAILED: $label: $(tail -3 "$tmp/stderr" | tr '\n' ' ')"
    echo "run $run: $label: $(tail -3 "$tmp/stderr" | tr '\n' ' ')" >>"$failures"
  fi
}

bullmq=(node "$here/bullmq/bench.mjs" --redis "$url")
asynq=("$here/bin/asynq-bench" -redis "$url")
payload="$(python3 -c '
p = "{\"order_id\":202509110001,\"store_id\":\"S10086\",\"customer\":\"c-000042\",\"items\":[{\"sku\":\"A-1\",\"qty\":2},{\"sku\":\"B-7\",\"qty\":1}],\"note\":\""
print(p + "x" * (298 - len(p)) + "\"}")')"

# Redis pipelined XADD of the 300-byte payload: 16 connections, 64 commands per pipeline.
xadd() {
  local n
  n="$(count 300000 10000)"
  echo "redis-benchmark -h 127.0.0.1 -p \$PORT -c 16 -P 64 -n $n --csv XADD peers:limit:xadd '*' payload \$PAYLOAD_300_BYTES" >>"$commands"
  redis-benchmark -h 127.0.0.1 -p "$port" -c 16 -P 64 -n "$n" --csv XADD peers:limit:xadd '*' payload "$payload" |
    python3 -c '
import json, sys
# The CSV does not escape the quotes of the payload, so read the 7 numeric fields from the end.
rows = [l.strip().strip("\"").split("\",\"") for l in sys.stdin if l.startswith("\"XADD")]
print(json.dumps({"peer": "limit", "id": "limit.xadd", "what": "Redis XADD/s, 300-byte field, pipelined, AOF on",
                  "unit": "ops/s", "value": float(rows[-1][-7]),
                  "settings": {"tool": "redis-benchmark", "connections": 16, "pipeline": 64,
                               "ops": int(sys.argv[1]), "appendfsync": sys.argv[2]}}))' "$n" "$appendfsync"
}

# --- 3. the scenarios -----------------------------------------------------------------------------
started=$(date +%s)
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
enqueue_n=$(count 100000)
delayed_n=$(count 10000 100)
latency_s=$(python3 -c "print(max(2, round(10 * $scale)))")

step 0 "bullmq: tune worker concurrency" "${bullmq[@]}" --scenario tune --n "$(count 20000)" --candidates 8,32,128,512
step 0 "asynq: tune server Concurrency" "${asynq[@]}" -scenario tune -n "$(count 10000)" -candidates 8,32,128,512
best() { grep "\"peer\":\"$1\"" "$lines" | grep '"id":"b.best"' | grep -o '"value":[0-9]*' | cut -d: -f2 | tail -1; }
bullmq_c="$(best bullmq)"; bullmq_c="${bullmq_c:-32}"
asynq_c="$(best asynq)"; asynq_c="${asynq_c:-8}"
log "best concurrency: bullmq $bullmq_c, asynq $asynq_c"
# Drain counts: 200k, but no more than the tuning rate gives in 25 s, so that a slow peer (Asynq
# waits for one fsync per dequeue with appendfsync always) or a busy machine stays in the budget.
drain_count() {
  python3 - "$lines" "$1" "$2" "$(count 200000)" "$(count 20000)" <<'EOF'
import json, sys
lines, peer, conc, most, least = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rates = [r["value"] for r in map(json.loads, open(lines)) if r["peer"] == peer and r["id"] == "b.tune"
         and r["settings"]["concurrency"] == conc]
n = round(rates[-1] * 25, -3) if rates else most
print(int(min(most, max(least, n))))
EOF
}
bullmq_drain_n="$(drain_count bullmq "$bullmq_c")"
asynq_drain_n="$(drain_count asynq "$asynq_c")"
log "drain counts: bullmq $bullmq_drain_n, asynq $asynq_drain_n"

runs_done=0
longest=0
for run in $(seq "$runs"); do
  run_started=$(date +%s)
  if [ "$run" -gt 1 ] && [ $((run_started + longest - started)) -gt "$budget" ]; then
    log "skipping runs $run..$runs: another run (~${longest} s) would end past the ${budget} s budget"
    echo "runs $run..$runs skipped: the machine was too slow to fit them in ${budget} s" >>"$notes"
    break
  fi
  step "$run" "bullmq: enqueue" "${bullmq[@]}" --scenario enqueue --n "$enqueue_n"
  step "$run" "bullmq: drain" "${bullmq[@]}" --scenario drain --n "$bullmq_drain_n" --concurrency "$bullmq_c"
  step "$run" "bullmq: latency" "${bullmq[@]}" --scenario latency --seconds "$latency_s" --concurrency "$bullmq_c"
  step "$run" "bullmq: delayed" "${bullmq[@]}" --scenario delayed --n "$delayed_n" --concurrency "$bullmq_c"
  step "$run" "asynq: enqueue" "${asynq[@]}" -scenario enqueue -n "$enqueue_n"
  step "$run" "asynq: drain" "${asynq[@]}" -scenario drain -n "$asynq_drain_n" -concurrency "$asynq_c"
  step "$run" "asynq: latency" "${asynq[@]}" -scenario latency -seconds "$latency_s" -concurrency "$asynq_c"
  step "$run" "asynq: delayed" "${asynq[@]}" -scenario delayed -n "$delayed_n" -concurrency "$asynq_c"
  step "$run" "limit: loopback HTTP" "$here/bin/limits" http -conns 64 -seconds 5
  step "$run" "limit: Redis XADD" xadd
  step "$run" "limit: fdatasync" "$here/bin/limits" fsync -dir "${TMPDIR:-/tmp}" -seconds 3
  runs_done=$run
  longest=$(( $(date +%s) - run_started > longest ? $(date +%s) - run_started : longest ))
done

# --- 4. the results file --------------------------------------------------------------------------
versions_bullmq="$(node "$here/bullmq/bench.mjs" --scenario version)"
export PEERS_META_BULLMQ="$versions_bullmq"
export PEERS_META_ASYNQ="$("$here/bin/asynq-bench" -scenario version)"
export PEERS_META_GO="$(go env GOVERSION)"
export PEERS_META_REDIS="$(redis-server --version)"
export PEERS_META_RUNS="$runs_done" PEERS_META_SCALE="$scale" PEERS_META_FSYNC="$appendfsync"
export PEERS_META_SECONDS="$(( $(date +%s) - started ))"
export PEERS_META_LOAD_START="$load_start" PEERS_META_LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
export PEERS_META_BEST="{\"bullmq\": $bullmq_c, \"asynq\": $asynq_c}"
export PEERS_META_COUNTS="{\"enqueue\": $enqueue_n, \"bullmq_drain\": $bullmq_drain_n, \"asynq_drain\": $asynq_drain_n, \"delayed\": $delayed_n, \"latency_seconds\": $latency_s}"
python3 - "$tmp/meta.json" "$failures" "$commands" "$notes" <<'EOF'
import datetime, json, os, platform, re, sys
env = os.environ
model = ""
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
with open("/proc/meminfo") as f:
    mem_kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
js = json.loads(env["PEERS_META_BULLMQ"])
redis = re.search(r"v=([0-9.]+)", env["PEERS_META_REDIS"]).group(1)
meta = {
    "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"cpus": os.cpu_count(), "cpu_model": model,
                "kernel": " ".join(platform.uname()[i] for i in (0, 2, 4)),
                "mem_gib": round(mem_kib / 2**20, 1),
                "loadavg_start": env["PEERS_META_LOAD_START"], "loadavg_end": env["PEERS_META_LOAD_END"]},
    "versions": {"bullmq": js["bullmq"], "ioredis": js["ioredis"], "node": js["node"],
                 "asynq": env["PEERS_META_ASYNQ"], "go": env["PEERS_META_GO"], "redis": redis},
    "redis_config": {"appendonly": "yes", "appendfsync": env["PEERS_META_FSYNC"], "save": "",
                     "bind": "127.0.0.1", "other": "redis-server defaults"},
    "runs": int(env["PEERS_META_RUNS"]), "scale": float(env["PEERS_META_SCALE"]),
    "counts": json.loads(env["PEERS_META_COUNTS"]),
    "best_concurrency": json.loads(env["PEERS_META_BEST"]),
    "seconds": int(env["PEERS_META_SECONDS"]),
    "commands": list(dict.fromkeys(l.strip() for l in open(sys.argv[3]) if l.strip())),
    "failures": [l.strip() for l in open(sys.argv[2]) if l.strip()],
    "notes": [l.strip() for l in open(sys.argv[4]) if l.strip()],
}
with open(sys.argv[1], "w") as f:
    json.dump(meta, f)
EOF
python3 "$here/aggregate.py" "$lines" "$tmp/meta.json" "$out"
log "wrote $out in $PEERS_META_SECONDS s; render it with: python3 bench/peers/report.py $out"
[ ! -s "$failures" ] || { log "some steps failed:"; cat "$failures" >&2; exit 1; }
