#!/usr/bin/env bash
# Runs a suite against a durable Postgres cluster of its own.
#
#   durable_pg.sh COMMAND [ARGS...]
#
# Creates a cluster with fsync, synchronous_commit and full_page_writes on
# (pg.sh start DIR PORT --durable) in a scratch directory under $TMPDIR, on
# a port free at run time, runs COMMAND with WF_TEST_PG_DSN, WF_TEST_PG_CTL,
# WF_TEST_PG_DIR and WF_TEST_PG_PORT naming that cluster and
# WF_TEST_PG_DURABLE=1, then stops and removes it. COMMAND may kill and
# restart the cluster (test_e2e_faults_durable does); it is stopped after
# WF_TEST_DURABLE_TIMEOUT seconds (default 280), so that the cluster is
# always removed. Exit status: COMMAND's; 77 (skipped) without
# WF_TEST_PG_DSN, as every Postgres suite (the run was not given Postgres).
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: durable_pg.sh COMMAND [ARGS...]" >&2; exit 2; }
if [ -z "${WF_TEST_PG_DSN:-}" ]; then
    echo "skipped: WF_TEST_PG_DSN is not set (test.sh sets it)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
PG_SH=$here/pg.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/wf-durable-XXXXXX")
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

dsn=
for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 30000))
    port_busy "$port" && continue
    if out=$("$PG_SH" start "$dir" "$port" --durable); then
        dsn=$(printf '%s\n' "$out" | tail -n 1)
        break
    fi
    "$PG_SH" stop "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
done
[ -n "$dsn" ] || { echo "durable_pg.sh: the durable cluster did not start" >&2; exit 1; }
echo "durable cluster on 127.0.0.1:$port ($dir)"

export WF_TEST_PG_DSN=$dsn WF_TEST_PG_CTL="$PG_SH ctl $dir" WF_TEST_PG_DIR=$dir \
    WF_TEST_PG_PORT=$port WF_TEST_PG_DURABLE=1
rc=0
timeout --kill-after=10 "${WF_TEST_DURABLE_TIMEOUT:-280}" "$@" || rc=$?
exit "$rc"
