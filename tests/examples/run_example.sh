#!/usr/bin/env bash
# Runs a docs/examples script against a workflowd of its own, so that the
# example cannot rot:
#
#   run_example.sh WORKFLOWD WFCTL memory|pg SCRIPT
#
# The server listens on a free 127.0.0.1 port in development mode, on the
# memory store or on Postgres at WF_TEST_PG_DSN (without it the pg run
# prints "skipped: ..." and exits 77, which CTest reports as skipped). Exits with the script's status; the
# server's log is printed when the script fails.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: run_example.sh WORKFLOWD WFCTL memory|pg SCRIPT" >&2; exit 2; }
SERVER=$1 WFCTL=$2 STORE=$3 SCRIPT=$4
if [[ $STORE == pg && -z ${WF_TEST_PG_DSN:-} ]]; then
    echo "skipped: WF_TEST_PG_DSN is not set"
    exit 77 # CTest SKIP_RETURN_CODE
fi

LOG=$(mktemp)
PID=""
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    if [[ -n $PID ]]; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -f "$LOG"
}
trap cleanup EXIT

# A port nobody listens on now (the kernel's pick), claimed for this run
# (tests/support/wf_testkit.py free_port); never 50051.
free_port() {
    /usr/bin/python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
import wf_testkit
print(wf_testkit.free_port())' "$(cd "$(dirname "$0")/../support" && pwd)"
}

# The server sees none of the caller's WF_* settings or DATABASE_URL.
UNSET=(-u DATABASE_URL)
while read -r v; do
    if [[ $v == WF_* ]]; then UNSET+=(-u "$v"); fi
done < <(compgen -e)
SERVER_ENV=(WF_ENV=development WF_LOG_LEVEL=warn WF_DRAIN_SECONDS=0)
if [[ $STORE == pg ]]; then SERVER_ENV+=("DATABASE_URL=$WF_TEST_PG_DSN"); fi
for _ in 1 2 3; do # the free port may be taken meanwhile
    ADDR=127.0.0.1:$(free_port)
    env "${UNSET[@]}" "${SERVER_ENV[@]}" WF_ADDR="$ADDR" "$SERVER" >"$LOG" 2>&1 &
    PID=$!
    for ((i = 0; i < 100; i++)); do # up to 10 s for the store and the port
        if "$WFCTL" --addr "$ADDR" --timeout 500 health >/dev/null 2>&1; then break 2; fi
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
done
if [[ -z $PID ]]; then
    cat "$LOG" >&2
    echo "run_example.sh: workflowd did not become SERVING" >&2
    exit 1
fi

rc=0
env -u WFCTL_ADDR -u WFCTL_API_KEY -u WFCTL_TENANT -u WFCTL_ACTOR -u WFCTL_ACTOR_GROUPS \
    WFCTL="$WFCTL" "$SCRIPT" "$ADDR" || rc=$?
if [[ $rc -ne 0 ]]; then
    echo "--- workflowd log ($STORE)" >&2
    cat "$LOG" >&2
fi
exit "$rc"
