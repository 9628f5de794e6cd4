#!/usr/bin/env bash
# Installs playwright-core from the npm registry (no browser: it drives Debian's Chromium) and runs
# the console's browser tests against the server at $MADEIRA_BIN (default: <repo>/build/madeira).
set -euo pipefail
cd "$(dirname "$0")"
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
if [ ! -x "$MADEIRA_BIN" ]; then
  echo "test.sh: no madeira binary at $MADEIRA_BIN (set MADEIRA_BIN)" >&2
  exit 1
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "test.sh: no /usr/bin/chromium: run 'make deps-test' (Debian's chromium package)" >&2
  exit 1
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm ci --no-audit --no-fund --loglevel=error
npm test
