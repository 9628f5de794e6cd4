#!/usr/bin/env bash
# Installs the Debian packages Madeira builds and tests with; installs only what is missing.
set -euo pipefail
build_pkgs=(
  cmake ninja-build g++ pkg-config ccache
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libcurl4-openssl-dev libhiredis-dev libcli11-dev libtomlplusplus-dev libspdlog-dev
  libvalijson-dev libsqlite3-dev libpq-dev libssl-dev libjemalloc-dev libmsgpuck-dev
)
# redis-server/postgresql: private instances for the redis-pg store tests (scripts/test-services.sh).
# chromium: the console's browser tests (tests/console drive it with playwright-core over CDP).
# clang-format-14: `make format-check`, the first step of `make test` (the style's version).
test_pkgs=(libgtest-dev libgmock-dev libbenchmark-dev clang-14 libclang-rt-14-dev clang-format-14
  redis-server redis-tools postgresql chromium)
want=("${build_pkgs[@]}")
[ "${1:-}" = "--test" ] && want+=("${test_pkgs[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
