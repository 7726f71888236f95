#!/usr/bin/env bash
# Runs a suite against a Postgres cluster of its own.
#
#   own_pg.sh [--durable] COMMAND [ARGS...]
#
# Creates a cluster (pg.sh start DIR PORT; with --durable one with fsync,
# synchronous_commit and full_page_writes on) in a scratch directory under
# $TMPDIR, on a port free at run time, runs COMMAND with WF_TEST_PG_DSN,
# WF_TEST_PG_CTL, WF_TEST_PG_DIR and WF_TEST_PG_PORT naming that cluster
# (and WF_TEST_PG_DURABLE=1 with --durable), then stops and removes it.
# COMMAND may kill, stop and restart the cluster (test_e2e_faults_durable
# and store_pg do): the suites running beside it on the shared cluster do
# not notice. COMMAND is stopped after WF_TEST_OWN_PG_TIMEOUT seconds
# (default 280), so that the cluster is always removed. Exit status:
# COMMAND's; 77 (skipped) without WF_TEST_PG_DSN, as every Postgres suite
# (the run was not given Postgres).
set -euo pipefail

durable=0
if [ "${1:-}" = --durable ]; then
    durable=1
    shift
fi
[ $# -ge 1 ] || { echo "usage: own_pg.sh [--durable] COMMAND [ARGS...]" >&2; exit 2; }
if [ -z "${WF_TEST_PG_DSN:-}" ]; then
    echo "skipped: WF_TEST_PG_DSN is not set (test.sh sets it)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
PG_SH=$here/pg.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/wf-own-pg-XXXXXX")
chmod 755 "$work" # the postgres OS user enters it when we run as root
dir=$work/pg

cleanup() {
    "$PG_SH" stop "$dir" >/dev/null 2>&1 || "$PG_SH" ctl "$dir" stop -m immediate >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Below the kernel's ephemeral ports (32768 and up, where the suites' own
# picks come from): another cluster of this kind is the only contender,
# and pg.sh fails to start on a port taken meanwhile.
start_args=()
[ "$durable" = 0 ] || start_args=(--durable)
dsn=
for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 12000))
    port_busy "$port" && continue
    if out=$("$PG_SH" start "$dir" "$port" "${start_args[@]}"); then
        dsn=$(printf '%s\n' "$out" | tail -n 1)
        break
    fi
    "$PG_SH" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
done
[ -n "$dsn" ] || { echo "own_pg.sh: the cluster did not start" >&2; exit 1; }
kind=fast
[ "$durable" = 0 ] || kind=durable
echo "$kind cluster of its own on 127.0.0.1:$port ($dir)"

export WF_TEST_PG_DSN=$dsn WF_TEST_PG_CTL="$PG_SH ctl $dir" WF_TEST_PG_DIR=$dir \
    WF_TEST_PG_PORT=$port
if [ "$durable" = 1 ]; then
    export WF_TEST_PG_DURABLE=1
else
    unset WF_TEST_PG_DURABLE
fi
rc=0
timeout --kill-after=10 "${WF_TEST_OWN_PG_TIMEOUT:-280}" "$@" || rc=$?
exit "$rc"
