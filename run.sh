#!/usr/bin/env bash
# Builds and runs the service on the embedded default: development mode, the
# in-memory store, no API key, listening on 127.0.0.1:50051 (override with
# WF_ADDR). Installs the Debian packages it needs first (scripts/install-deps.sh).
#
#   ./run.sh                  build (Release) and run in the foreground; Ctrl-C stops it
#   WF_ADDR=0.0.0.0:6000 ./run.sh
#
# Every WF_* variable of README.md "Configuration" is passed through.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
cmake -S . -B build-run -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-run -j"$(nproc 2>/dev/null || echo 2)" --target workflowd wfctl >/dev/null
echo "run.sh: built build-run/server/workflowd and build-run/client/wfctl" >&2
export WF_ENV=${WF_ENV:-development}
export WF_ADDR=${WF_ADDR:-127.0.0.1:50051}
exec build-run/server/workflowd
