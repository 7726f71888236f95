#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script).
#
#   ./test.sh          build with -Werror in build/ and run every suite, then
#                      again with ASan+UBSan in build-asan/, then again as
#                      shipped (Release, -Werror) in build-rel/
#   ./test.sh --fast   skip the sanitizer pass, and only build the Release
#                      pass (local use)
#
# Installs the Debian packages first (scripts/install-deps.sh; nothing to do
# when they are present). Starts a throwaway Postgres 15 on 127.0.0.1
# (tests/support/pg.sh) for the store suites and stops it on exit. Works as
# root or as a normal user and can be run again at once: a Postgres left over
# by an interrupted run is stopped first. Each suite's own output is printed (Check's "100%: Checks: N,
# Failures: 0, Errors: 0" lines), then ctest's summary and the ten slowest
# suites. Exit status: 0 when every pass built and every suite passed (none
# skipped: with the database given, no suite may skip), 1 otherwise, 2 for a
# usage error.
#
# Suites run in parallel (ctest -j): each Postgres suite on a database of
# its own in the one cluster (tests/support/pg_db.sh), a suite that stops or
# kills Postgres on a cluster of its own (tests/support/own_pg.sh), every
# server on a port picked at run time; only the overload suites, which
# measure latencies, run alone (RUN_SERIAL). Time bounds in the suites
# stretch under sanitizers and with the load of the machine.
#
# Environment (all optional):
#   WF_TEST_PG_PORT    first port to try for Postgres (default 55432; the next
#                      free one is taken when it is busy)
#   WF_TEST_WORK       scratch directory (default: /tmp/wf-test-<uid>-<hash of
#                      this checkout>), holds the Postgres data directory
#   WF_TEST_JOBS       parallel build jobs (default: number of CPUs)
#   WF_TEST_PARALLEL   suites run at once (default: 2 x CPUs, at least 4;
#                      most suites wait on servers and Postgres more than
#                      they compute); 1 runs them one at a time
#   WF_TEST_TIME_SCALE stretches the suites' time bounds by this factor, on
#                      top of what sanitizers and the load average add
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

fast=0
for arg in "$@"; do
    case "$arg" in
    --fast) fast=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")"
ROOT=$PWD
# Debian packages (a no-op when present; needs root or sudo otherwise).
scripts/install-deps.sh
PG_SH=$ROOT/tests/support/pg.sh
JOBS=${WF_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
PARALLEL=${WF_TEST_PARALLEL:-$(($(nproc 2>/dev/null || echo 2) * 2))}
[ "${WF_TEST_PARALLEL+set}" = set ] || [ "$PARALLEL" -ge 4 ] || PARALLEL=4
case $PARALLEL in
'' | *[!0-9]* | 0) echo "test.sh: WF_TEST_PARALLEL must be a positive number: $PARALLEL" >&2; exit 2 ;;
esac
WORK=${WF_TEST_WORK:-${TMPDIR:-/tmp}/wf-test-$(id -u)-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)}
PG_DIR=$WORK/pg

log() { printf '\n==== %s\n' "$*"; }

# ---- Postgres ---------------------------------------------------------------
[ -x "$PG_SH" ] || { echo "test.sh: $PG_SH is missing or not executable" >&2; exit 1; }
mkdir -p "$WORK"

pg_stop() { "$PG_SH" stop "$PG_DIR" >/dev/null 2>&1 || true; }

# A previous run that was killed may have left its server running. Every run
# starts from a new cluster (pg.sh keeps the port of an existing one).
if [ -e "$PG_DIR" ]; then
    log "stopping and removing a Postgres left over in $PG_DIR"
    pg_stop
    rm -rf "$PG_DIR"
fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_free_port() { # first port from $1 on that nothing listens on
    local p=$1
    while port_busy "$p"; do
        p=$((p + 1))
        [ "$p" -lt $(($1 + 100)) ] || { echo "test.sh: no free port for Postgres" >&2; return 1; }
    done
    echo "$p"
}

trap pg_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Another process may take the port between the check and the start: then
# try the next one, from a new cluster (pg.sh keeps an existing one's port).
port=${WF_TEST_PG_PORT:-55432}
for attempt in 1 2 3 4 5; do
    port=$(next_free_port "$port")
    log "starting Postgres on 127.0.0.1:$port ($PG_DIR)"
    pg_out=$("$PG_SH" start "$PG_DIR" "$port") && break
    pg_stop
    rm -rf "$PG_DIR"
    [ "$attempt" -lt 5 ] || { echo "test.sh: Postgres did not start" >&2; exit 1; }
    port=$((port + 1))
done
dsn=$(printf '%s\n' "$pg_out" | sed '/^[[:space:]]*$/d' | tail -n 1)
[ -n "$dsn" ] || { echo "test.sh: pg.sh start printed no DSN" >&2; exit 1; }
export WF_TEST_PG_DSN=$dsn
# For the suites that stop and restart the database (e.g. reconnection tests):
# "$WF_TEST_PG_CTL restart", "... stop -m fast", "... start -w" run pg_ctl on
# this very server (pg.sh ctl DIR PG_CTL_ARGS...).
export WF_TEST_PG_CTL="$PG_SH ctl $PG_DIR"
export WF_TEST_PG_DIR=$PG_DIR WF_TEST_PG_PORT=$port
echo "WF_TEST_PG_DSN=$WF_TEST_PG_DSN"
# Ports the suites' servers take are claimed here (tests/support/wf_testkit.py
# free_port), so that two suites running at once never pick the same one.
export WF_TEST_PORT_DIR=$WORK/ports
rm -rf "$WF_TEST_PORT_DIR"
mkdir -p "$WF_TEST_PORT_DIR"
# Check's per-case timeouts guard against hangs; suites side by side on a
# loaded machine (or under sanitizers) legitimately take several times
# longer, so they triple (the ctest timeouts triple under sanitizers too).
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3}

# ---- build and test passes ----------------------------------------------------
failed=()

# Prints every suite's own output from ctest's log, so that each Check
# summary line appears on a line of its own (ctest -V would prefix them).
print_suite_logs() {
    local logf=$1/Testing/Temporary/LastTest.log
    [ -f "$logf" ] || return 0
    awk '
        / Testing: / && !name { name = $3 }
        /^Output:$/ { getline; inout = 1; printf "\n---- %s\n", name; next }
        /^<end of output>$/ { inout = 0; name = ""; next }
        inout { print }
    ' "$logf"
}

# The ten slowest suites of a pass, from ctest's result lines.
print_slowest() {
    grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$1/ctest.out" |
        sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec.*$/\2 \1/' |
        sort -rn | head -n 10 | awk '{ printf "%9.1f s  %s\n", $1, $2 }' || true
}

# run_pass NAME BUILD_DIR [cmake args...]: configure, build, run ctest (with
# the NAME=value words of the array ctest_env in its environment; with
# build_only=1, stop after the build).
ctest_env=()
build_only=0
run_pass() {
    local name=$1 dir=$2
    shift 2
    log "$name: configure ($dir: $*)"
    if ! cmake -S "$ROOT" -B "$ROOT/$dir" "$@"; then
        failed+=("$name: configure")
        return
    fi
    log "$name: build"
    if ! cmake --build "$ROOT/$dir" -j "$JOBS"; then
        failed+=("$name: build")
        return
    fi
    if [ "$build_only" -eq 1 ]; then
        log "$name: ctest skipped (build only)"
        return
    fi
    log "$name: ctest (-j $PARALLEL)"
    local rc=0 t0=$SECONDS
    (cd "$ROOT/$dir" && env ${ctest_env[@]+"${ctest_env[@]}"} \
        ctest --output-on-failure --no-tests=error -j "$PARALLEL") 2>&1 |
        tee "$ROOT/$dir/ctest.out" || rc=${PIPESTATUS[0]}
    log "$name: output of each suite"
    print_suite_logs "$ROOT/$dir"
    log "$name: ctest summary"
    sed -n '/tests passed, /,$p' "$ROOT/$dir/ctest.out"
    log "$name: the slowest suites (ctest took $((SECONDS - t0)) s)"
    print_slowest "$ROOT/$dir"
    [ "$rc" -eq 0 ] || failed+=("$name: ctest (exit $rc)")
    # A suite skips (exit 77) only when it has no database; this run gave it
    # one, so a skipped suite ran nothing and is a failure.
    local skipped
    skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$ROOT/$dir/ctest.out" |
        sed -E 's/^.*Test +#[0-9]+: ([^ ]+).*$/\1/' | tr '\n' ' ' || true)
    if [ -n "$WF_TEST_PG_DSN" ] && [ -n "$skipped" ]; then
        failed+=("$name: skipped although WF_TEST_PG_DSN is set: $skipped")
    fi
}

run_pass "werror" build -DWF_WERROR=ON -DWF_SANITIZE=OFF

if [ "$fast" -eq 0 ]; then
    ctest_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
               LSAN_OPTIONS=suppressions=$ROOT/tests/support/lsan.supp
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
    run_pass "sanitize" build-asan -DWF_WERROR=ON -DWF_SANITIZE=ON
else
    log "sanitize: skipped (--fast)"
fi

# The configuration that ships (the Dockerfile builds Release): optimised
# builds warn about things -O0 does not see (-Wmaybe-uninitialized).
ctest_env=()
build_only=$fast
run_pass "release" build-rel -DCMAKE_BUILD_TYPE=Release -DWF_WERROR=ON -DWF_SANITIZE=OFF

if [ "${#failed[@]}" -gt 0 ]; then
    log "FAILED: ${failed[*]}"
    exit 1
fi
log "all passes succeeded"
