#!/usr/bin/env bash
# CPU seconds one redis-pg bench run costs each process, for A/B checks that throughput on a
# noisy machine cannot settle: Redis (INFO cpu; its forked AOF-rewrite children apart, as
# "rewrites"), PostgreSQL (the postmaster and the backends it reaped), and madeira_bench with
# the servers it reaped (time).
#   bench/store_cpu.sh DIR BINARY SCENARIOS SCALE
# DIR: a folder `scripts/test-services.sh start DIR` made (the services keep running); BINARY:
# the madeira to measure; SCENARIOS, SCALE: madeira_bench's --only and --scale.
set -euo pipefail
[ $# -eq 4 ] || { sed -n 2,7p "$0" >&2; exit 2; }
dir=$1 bin=$2 only=$3 scale=$4
here=$(cd "$(dirname "$0")/.." && pwd)
set -a
# shellcheck disable=SC1091
source "$dir/env"
set +a
rport=${MADEIRA_TEST_REDIS_URL##*:}
postmaster=$(head -1 "$dir/pg/data/postmaster.pid")
# Redis's own CPU seconds, then its reaped children's (the AOF rewrites), from one INFO.
redis_cpu() {
  redis-cli -p "$rport" INFO cpu | awk -F: '/^used_cpu_(user|sys):/ {s += $2}
    /^used_cpu_(user|sys)_children:/ {c += $2} END {printf "%.2f %.2f", s, c}'
}
pg_cpu() { awk '{printf "%.2f", ($14 + $15 + $16 + $17) / 100}' "/proc/$postmaster/stat"; }
read -r r0 c0 <<<"$(redis_cpu)"
p0=$(pg_cpu)
out=$({ /usr/bin/time -f "TIME %U %S" "$here/build-bench/madeira_bench" --madeira "$bin" \
  --store redis-pg --only "$only" --runs 1 --scale "$scale"; } 2>&1)
read -r r1 c1 <<<"$(redis_cpu)"
p1=$(pg_cpu)
rates=$(echo "$out" | awk '/^ +rp\./ {printf "%s=%d ", $1, $2}')
echo "$out" | awk -v r="$(echo "$r1 - $r0" | bc)" -v c="$(echo "$c1 - $c0" | bc)" \
  -v p="$(echo "$p1 - $p0" | bc)" -v n="$(basename "$bin")" -v rates="$rates" \
  '/^TIME/ {printf "%s redis=%ss rewrites=%ss postgres=%ss bench+madeira=%.2fs %s\n", n, r, c, p,
            $2 + $3, rates}'
