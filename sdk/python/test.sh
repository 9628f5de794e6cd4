#!/usr/bin/env bash
# Runs the Python SDK's whole test suite against $MADEIRA_BIN (default <repo>/build/madeira).
# Installs pytest from PyPI only if it is missing; the SDK itself has no dependencies.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
if ! "$PY" -m pytest --version >/dev/null 2>&1; then
    "$PY" -m pip install -q pytest || "$PY" -m pip install -q --user pytest \
        || "$PY" -m pip install -q --break-system-packages pytest
fi
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
exec "$PY" -m pytest -q -p no:cacheprovider "$@"
