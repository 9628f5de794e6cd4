#!/usr/bin/env bash
# Installs the dev dependencies from the npm registry, builds, and runs every test of the
# Node.js SDK against the server at $MADEIRA_BIN (default: <repo>/build/madeira).
set -euo pipefail
cd "$(dirname "$0")"
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
if [ ! -x "$MADEIRA_BIN" ]; then
  echo "test.sh: no madeira binary at $MADEIRA_BIN (set MADEIRA_BIN)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
npm run build
npm test
