#!/usr/bin/env bash
# Runs the Go SDK's whole test suite against a real madeira binary.
# The SDK has no dependencies, so nothing is installed: only the Go toolchain
# (1.21 or newer) is needed. MADEIRA_BIN defaults to <repo>/build/madeira.
set -euo pipefail
cd "$(dirname "$0")"
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
export GOTOOLCHAIN=local
if ! command -v go >/dev/null; then
  echo "test.sh: the Go toolchain (go) is not on PATH" >&2
  exit 1
fi
if [ ! -x "$MADEIRA_BIN" ]; then
  echo "test.sh: madeira binary not found at $MADEIRA_BIN (set MADEIRA_BIN)" >&2
  exit 1
fi
go vet ./...
go test -count=1 ./...
