#!/usr/bin/env bash
# Private Redis + PostgreSQL for the redis-pg store tests: no system service, free loopback ports,
# everything under DIR.
#   scripts/test-services.sh start DIR   # prints (and writes to DIR/env) the two URLs
#   scripts/test-services.sh stop DIR
#   scripts/test-services.sh run DIR COMMAND...   # start, run COMMAND with the URLs exported,
#                                                 # then stop and remove DIR (exit code: COMMAND's)
# Redis runs with appendonly yes + appendfsync always: the setting the store's "accepted means
# durable" promise needs. PostgreSQL uses trust auth on 127.0.0.1 and a unix socket in DIR.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR | run DIR COMMAND..." >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
run_cmd=("$@")
if [ "$cmd" = run ]; then [ ${#run_cmd[@]} -gt 0 ] || usage; else [ ${#run_cmd[@]} -eq 0 ] || usage; fi
# Debian keeps the server binaries out of PATH, per major version: take the newest.
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
WAIT_STEPS=100  # x 0.1 s

# A loopback port nobody listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Runs a command as the unprivileged owner of the PostgreSQL files (postgres refuses root).
as_pg_user() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

wait_for() {  # wait_for WHAT COMMAND...: polls up to WAIT_STEPS times
  local what=$1; shift
  for _ in $(seq "$WAIT_STEPS"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "test-services: $what did not come up within $((WAIT_STEPS / 10)) s" >&2
  return 1
}

start() {
  [ -x "$PG_BIN/initdb" ] || { echo "test-services: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }
  command -v redis-server >/dev/null || { echo "test-services: no redis-server (apt-get install redis-server)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # Leftovers of a run that was killed before it could stop: stop them and start afresh.
  if [ -f "$dir/env" ]; then stop || true; fi
  rm -rf "$dir/redis" "$dir/pg" "$dir/pgsock"

  # Redis.
  local rport
  rport=$(free_port)
  mkdir -p "$dir/redis"
  redis-server --bind 127.0.0.1 --port "$rport" --dir "$dir/redis" --appendonly yes \
    --appendfsync always --daemonize yes --pidfile "$dir/redis/redis.pid" \
    --logfile "$dir/redis/redis.log" --save "" >/dev/null
  wait_for "redis on port $rport" redis-cli -h 127.0.0.1 -p "$rport" ping

  # PostgreSQL.
  local pport
  pport=$(free_port)
  PG_USER=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    PG_USER=madeira-test
    id -u "$PG_USER" >/dev/null 2>&1 ||
      useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
  fi
  mkdir -p "$dir/pg" "$dir/pgsock"
  [ "$(id -u)" -eq 0 ] && chown "$PG_USER" "$dir/pg" "$dir/pgsock" && chmod o+x "$dir"
  as_pg_user "$PG_BIN/initdb" -D "$dir/pg/data" -U madeira --auth=trust --no-sync -E UTF8 \
    >"$dir/pg/initdb.log" 2>&1 || { cat "$dir/pg/initdb.log" >&2; exit 1; }
  as_pg_user "$PG_BIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pgsock/postgres.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$pport -c unix_socket_directories=$dir/pgsock -c fsync=on" \
    start >/dev/null
  wait_for "postgresql on port $pport" as_pg_user "$PG_BIN/pg_isready" -h 127.0.0.1 -p "$pport"
  as_pg_user "$PG_BIN/createdb" -h 127.0.0.1 -p "$pport" -U madeira madeira

  {
    echo "MADEIRA_TEST_REDIS_URL=redis://127.0.0.1:$rport"
    echo "MADEIRA_TEST_DATABASE_URL=postgresql://madeira@127.0.0.1:$pport/madeira"
  } >"$dir/env"
  echo "$PG_USER" >"$dir/pg/user"
  cat "$dir/env"
}

stop() {
  [ -d "$dir" ] || exit 0
  local status=0
  if [ -f "$dir/redis/redis.pid" ]; then
    local pid
    pid=$(cat "$dir/redis/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq "$WAIT_STEPS"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { kill -9 "$pid" 2>/dev/null || true; status=1; }
  fi
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    PG_USER=$(cat "$dir/pg/user" 2>/dev/null || id -un)
    as_pg_user "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop >/dev/null || status=1
  fi
  rm -f "$dir/env"
  return $status
}

case $cmd in
  start) start ;;
  stop) stop ;;
  run)
    start >/dev/null
    trap 'stop; rm -rf "$dir"' EXIT
    set -a
    # shellcheck disable=SC1091
    . "$dir/env"
    set +a
    "${run_cmd[@]}"
    ;;
  *) usage ;;
esac
