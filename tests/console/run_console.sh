#!/usr/bin/env bash
# The web console's browser test: installs puppeteer-core (npm ci, pinned by
# package-lock.json; it downloads no browser) when missing, then runs
# console_test.js with Debian's chromium against a workflowd of its own.
#
#   tests/console/run_console.sh WORKFLOWD WFCTL WORKDIR memory|pg
#
# Screenshots of every page go to WORKDIR/screenshots/. With pg the server
# uses WF_TEST_PG_DSN (exit 77, skipped, without it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ ! -d $HERE/node_modules/puppeteer-core ]]; then
    PUPPETEER_SKIP_DOWNLOAD=1 npm --prefix "$HERE" ci --no-audit --no-fund
fi
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if [[ -z $CHROMIUM ]]; then
    echo "run_console.sh: chromium is not installed (scripts/install-deps.sh)" >&2
    exit 1
fi
mkdir -p "$3"
exec node "$HERE/console_test.js" --server "$1" --wfctl "$2" --work "$3" --chromium "$CHROMIUM" --store "$4"
