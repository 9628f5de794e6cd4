#!/usr/bin/env bash
# Runs the Java SDK's whole test suite against a real madeira server.
# Needs: JDK 17+ and Maven (Maven downloads Jackson, JUnit and the two plugins from Maven Central).
# MADEIRA_BIN: the server binary (default: <repo>/build/madeira).
set -euo pipefail
cd "$(dirname "$0")"
export MADEIRA_BIN="${MADEIRA_BIN:-$(cd ../.. && pwd)/build/madeira}"
rm -rf target/surefire-reports
status=0
mvn -q -B -Dstyle.color=never test || status=$?
echo
# mvn -q prints nothing on success: summarise the Surefire reports in one line
cat target/surefire-reports/*.txt 2>/dev/null | awk '
  /Tests run:/ { gsub(",", ""); run += $3; fail += $5; err += $7; skip += $9 }
  END { printf "java: %d passed, %d failed, %d skipped\n", run - fail - err - skip, fail + err, skip }'
exit $status
