#!/usr/bin/env bash
# The benchmark, in one command: builds workflowd and wfbench (Release, in
# build-bench/), starts a throwaway Postgres 15 (tests/support/pg.sh) and
# workflowd (with its metrics) on 127.0.0.1 free ports, runs wfbench
# (baselines, every workload with its cost per unit, the half-rate p99
# pass, the RSS soak, bytes per instance), prints the tables and writes
# them to a results file. Stops the server and Postgres on exit, also on
# Ctrl-C. See bench/README.md.
#
#   bench/run.sh                 quick mode: ~6-8 minutes (10 s per workload,
#                                30 s soak, 250k-row inbox, 10k timers,
#                                backlogs of 1k and 100k waiting jobs)
#   bench/run.sh --full          30 s per workload, 10-minute soak, 1M-row
#                                inbox, 100k timers, 10k parked instances,
#                                the same backlogs
#   bench/run.sh read start      only these workloads (health and the
#                                pgbench ceiling always run)
#
# Options:
#   --full             the long run described above
#   --durable          turn fsync and synchronous_commit back on in the
#                      throwaway Postgres (pg.sh turns them off), so that the
#                      commit ceiling is a disk-flush ceiling
#   --threads N        load threads = connections = pgbench clients (default 8)
#   --out FILE         results file (default build-bench/bench-results-<mode>.txt)
#   --no-build         use the binaries already in build-bench/
#   --history          then each key workload (start jobs jobs-stream steps2
#                      signal timers, those of them asked for) again, alone,
#                      on a new Postgres and server: its ratio to C there
#                      against the one in the sequence (~5-6 more minutes)
#   --grown N          before the sequence, add N ended instances, each with
#                      the events of a finished job (bench/grow.sql), as a
#                      service with retention off accumulates; with
#                      --history, the sequence then runs on the grown
#                      tables and each workload fresh on empty ones
#   -h, --help         this text
#
# Environment (optional):
#   BENCH_PG_PORT      first port to try for Postgres (default 55732)
#   BENCH_PORT         first port to try for workflowd (default 56151)
#   BENCH_WF_THREADS   WF_THREADS of the server (default: the server's own, 4 x CPUs)
#   BENCH_DB_POOL_SIZE WF_DB_POOL_SIZE of the server (default: the server's own)
#   BENCH_ARGS         extra wfbench options, e.g. "--no-request-ids --duration 20"
#   BENCH_WORK         scratch directory (default /tmp/wf-bench-<uid>-<hash>)
#   BENCH_BUILD        build directory (default build-bench/ in the tree)
#   PG_BIN             Postgres binaries (default /usr/lib/postgresql/15/bin)
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

mode=quick
durable=0
threads=8
out=""
build=1
history=0
grown=0
workloads=()
while [ $# -gt 0 ]; do
    case "$1" in
    --full) mode=full ;;
    --durable) durable=1 ;;
    --threads)
        [ $# -ge 2 ] || { echo "run.sh: --threads needs a value" >&2; exit 2; }
        threads=$2
        shift
        ;;
    --out)
        [ $# -ge 2 ] || { echo "run.sh: --out needs a value" >&2; exit 2; }
        out=$2
        shift
        ;;
    --no-build) build=0 ;;
    --history) history=1 ;;
    --grown)
        [ $# -ge 2 ] || { echo "run.sh: --grown needs a value" >&2; exit 2; }
        grown=$2
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    *) workloads+=("$1") ;;
    esac
    shift
done

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BENCH_BUILD:-$ROOT/build-bench}
PG_SH=$ROOT/tests/support/pg.sh
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PG_BIN
export PATH="$PG_BIN:$PATH" # pgbench and psql of the same major version
WORK=${BENCH_WORK:-${TMPDIR:-/tmp}/wf-bench-$(id -u)-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)}
PG_DIR=$WORK/pg
[ -n "$out" ] || out=$BUILD/bench-results-$mode.txt

log() { printf 'run.sh: %s\n' "$*" >&2; }

# ---- packages and build ---------------------------------------------------------
if [ -x scripts/install-deps.sh ]; then
    scripts/install-deps.sh
fi
for tool in cmake pkg-config "$PG_BIN/pgbench" "$PG_BIN/initdb"; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "run.sh: $tool is missing (Debian: postgresql, postgresql-contrib, cmake, pkg-config)" >&2
        exit 1
    }
done
if [ "$build" = 1 ]; then
    log "building workflowd and wfbench (Release) in $BUILD"
    mkdir -p "$BUILD"
    if ! { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" --target workflowd wfbench; } \
        >"$BUILD/build.log" 2>&1; then
        tail -n 30 "$BUILD/build.log" >&2
        echo "run.sh: the build failed (full log: $BUILD/build.log)" >&2
        exit 1
    fi
fi
WORKFLOWD=$BUILD/server/workflowd
WFBENCH=$BUILD/bench/wfbench
if [ ! -x "$WORKFLOWD" ] || [ ! -x "$WFBENCH" ]; then
    echo "run.sh: binaries missing in $BUILD" >&2
    exit 1
fi

# ---- cleanup, also on Ctrl-C ---------------------------------------------------------
server_pid=""
pg_started=0
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do # up to 10 s, then kill
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
stop_pg() {
    if [ "$pg_started" = 1 ]; then
        "$PG_SH" stop "$PG_DIR" >/dev/null 2>&1 || true
    fi
    pg_started=0
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_server
    stop_pg
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_free_port() { # first port from $1 that nothing listens on (never 5432 or 50051)
    local p=$1
    while port_busy "$p" || [ "$p" = 5432 ] || [ "$p" = 50051 ]; do
        p=$((p + 1))
        [ "$p" -lt $(($1 + 200)) ] || { echo "run.sh: no free port from $1" >&2; return 1; }
    done
    echo "$p"
}

# ---- Postgres ---------------------------------------------------------------------
# start_pg: a new cluster in $PG_DIR on a free port; sets dsn and pg_pid (the
# postmaster, for the CPU of Postgres).
mkdir -p "$WORK"
start_pg() {
    if [ -e "$PG_DIR" ]; then # left over by a killed run: start from a new cluster
        "$PG_SH" stop "$PG_DIR" >/dev/null 2>&1 || true
        rm -rf "$PG_DIR"
    fi
    pg_port=${BENCH_PG_PORT:-55732}
    dsn=""
    for attempt in 1 2 3 4 5; do
        pg_port=$(next_free_port "$pg_port")
        log "starting Postgres on 127.0.0.1:$pg_port ($PG_DIR)"
        pg_started=1
        if pg_out=$("$PG_SH" start "$PG_DIR" "$pg_port"); then
            dsn=$(printf '%s\n' "$pg_out" | sed '/^[[:space:]]*$/d' | tail -n 1)
            break
        fi
        "$PG_SH" stop "$PG_DIR" >/dev/null 2>&1 || true
        pg_started=0
        rm -rf "$PG_DIR"
        [ "$attempt" -lt 5 ] || { echo "run.sh: Postgres did not start" >&2; exit 1; }
        pg_port=$((pg_port + 1))
    done
    [ -n "$dsn" ] || { echo "run.sh: pg.sh printed no DSN" >&2; exit 1; }
    pg_pid=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null || echo 0)
    if [ "$durable" = 1 ]; then
        log "durable commits: fsync, synchronous_commit and full_page_writes on"
        psql -q -X "$dsn" -c "ALTER SYSTEM SET fsync = on" -c "ALTER SYSTEM SET synchronous_commit = on" \
            -c "ALTER SYSTEM SET full_page_writes = on" -c "SELECT pg_reload_conf()" >/dev/null
    fi
}

# ---- workflowd ---------------------------------------------------------------------
# start_server: workflowd on a free port, its metrics on the next free one;
# sets server_pid, srv_port and metrics_port.
start_server() {
    srv_port=${BENCH_PORT:-56151}
    for attempt in 1 2 3 4 5; do
        srv_port=$(next_free_port "$srv_port")
        metrics_port=$(next_free_port $((srv_port + 1)))
        log "starting workflowd on 127.0.0.1:$srv_port (metrics on $metrics_port)"
        (
            export WF_ENV=development WF_ADDR=127.0.0.1:$srv_port DATABASE_URL=$dsn
            export WF_METRICS_ADDR=127.0.0.1:$metrics_port
            export WF_LOG_LEVEL=warn WF_API_KEYS=bench-key WF_TRUST_ACTOR_GROUPS=true
            [ -z "${BENCH_WF_THREADS:-}" ] || export WF_THREADS=$BENCH_WF_THREADS
            [ -z "${BENCH_DB_POOL_SIZE:-}" ] || export WF_DB_POOL_SIZE=$BENCH_DB_POOL_SIZE
            exec "$WORKFLOWD"
        ) >>"$WORK/workflowd.log" 2>&1 &
        server_pid=$!
        up=0
        for _ in $(seq 1 100); do # up to 10 s until it listens
            kill -0 "$server_pid" 2>/dev/null || break
            if port_busy "$srv_port" && port_busy "$metrics_port"; then
                up=1
                break
            fi
            sleep 0.1
        done
        [ "$up" = 1 ] && break
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
        tail -n 5 "$WORK/workflowd.log" >&2
        [ "$attempt" -lt 5 ] || { echo "run.sh: workflowd did not start" >&2; exit 1; }
        srv_port=$((metrics_port + 1))
    done
}

: >"$WORK/workflowd.log"
start_pg
start_server

# ---- the benchmark -------------------------------------------------------------------
if [ "$mode" = full ]; then
    args=(--duration 30 --soak 600 --inbox-rows 1000000 --timers 100000 --parked 10000
        --backlog 100000)
else
    args=(--duration 10 --soak 30 --inbox-rows 250000 --timers 10000 --parked 2000
        --backlog 100000)
fi
read -r -a extra <<<"${BENCH_ARGS:-}"
mkdir -p "$(dirname "$out")"
log "running wfbench ($mode mode); the table follows and goes to $out"
# wfbench against the server and Postgres started last, with extra options.
wfbench() {
    "$WFBENCH" --target "127.0.0.1:$srv_port" --api-key bench-key --actor bench-user \
        --actor-groups benchers --dsn "$dsn" --server-pid "$server_pid" --pg-pid "$pg_pid" \
        --metrics "127.0.0.1:$metrics_port" --pgbench-script "$ROOT/bench/insert.sql" \
        --threads "$threads" "${args[@]}" ${extra[@]+"${extra[@]}"} "$@"
}
if [ "$grown" -gt 0 ]; then
    log "growing the tables by $grown ended instances (a warm-up ends one to copy)"
    wfbench --label warm-up --duration 2 --baseline-duration 1 --no-half \
        --out "$WORK/warm-up.txt" jobs >/dev/null
    psql -q -X "$dsn" -v n="$grown" -f "$ROOT/bench/grow.sql" >&2
fi
summary=()
[ "$history" = 0 ] || summary=(--summary "$WORK/history-sequence.tsv")
wfbench --label "$mode" --out "$out" ${summary[@]+"${summary[@]}"} \
    ${workloads[@]+"${workloads[@]}"}
{
    echo
    echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
        "$(awk '/MemTotal/ {printf "%.1f GB RAM", $2 / 1048576}' /proc/meminfo)," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    cmdline="bench/run.sh"
    [ "$mode" = quick ] || cmdline+=" --full"
    [ "$durable" = 0 ] || cmdline+=" --durable"
    [ "$threads" = 8 ] || cmdline+=" --threads $threads"
    [ "$history" = 0 ] || cmdline+=" --history"
    [ "$grown" = 0 ] || cmdline+=" --grown $grown"
    [ ${#workloads[@]} -eq 0 ] || cmdline+=" ${workloads[*]}"
    echo "command: $cmdline" \
        "${BENCH_ARGS:+(wfbench $BENCH_ARGS) }(server WF_THREADS=${BENCH_WF_THREADS:-default}, Postgres $("$PG_BIN/postgres" --version | awk '{print $3}')," \
        "fsync $([ "$durable" = 1 ] && echo on || echo off))"
} | tee -a "$out"

# ---- history independence (--history) --------------------------------------------------
# Each key workload again, alone, on a new cluster and a new server, with
# short baselines of its own: its rate as a ratio to its own run's C, in the
# sequence above and fresh.
if [ "$history" = 1 ]; then
    fresh=()
    for w in start jobs jobs-stream steps2 signal timers; do
        if [ ${#workloads[@]} -eq 0 ] || printf '%s\n' "${workloads[@]}" | grep -qx -e "$w" -e all; then
            fresh+=("$w")
        fi
    done
    for w in ${fresh[@]+"${fresh[@]}"}; do
        stop_server
        stop_pg
        rm -rf "$PG_DIR"
        start_pg
        start_server
        log "history: $w alone on a new Postgres and server (report: $WORK/history-$w.txt)"
        rm -f "$WORK/history-$w.tsv"
        wfbench --label "fresh $w" --baseline-duration 5 --no-half \
            --summary "$WORK/history-$w.tsv" --out "$WORK/history-$w.txt" "$w" >/dev/null ||
            log "history: wfbench failed for $w"
    done
    {
        echo
        echo "history independence: each key workload in the sequence above, and alone on a new"
        echo "Postgres and server with its own C (5 s baselines); rates as ratios to their own run's C;"
        echo "target: sequence / fresh >= 0.8"
        printf '%-14s %10s %10s %10s  %s\n' workload "seq / C" "fresh / C" "seq/fresh" "met?"
        printf '%-14s %10s %10s %10s  %s\n' -------------- ---------- ---------- ---------- ----
        for w in ${fresh[@]+"${fresh[@]}"}; do
            seq=$(awk -F'\t' -v w="$w" '$1 == w { print $4 }' "$WORK/history-sequence.tsv" 2>/dev/null)
            new=$(awk -F'\t' -v w="$w" '$1 == w { print $4 }' "$WORK/history-$w.tsv" 2>/dev/null)
            awk -v w="$w" -v s="${seq:--}" -v f="${new:--}" 'BEGIN {
                if (s == "-" || f == "-" || f + 0 <= 0) {
                    printf "%-14s %10s %10s %10s  %s\n", w, s, f, "-", "-"
                } else {
                    r = s / f
                    printf "%-14s %10.3f %10.3f %10.2f  %s\n", w, s, f, r, (r >= 0.8 ? "met" : "NOT met")
                }
            }'
        done
    } | tee -a "$out"
fi
if grep -q '"level":"error"' "$WORK/workflowd.log" 2>/dev/null; then
    log "the server logged errors: $WORK/workflowd.log"
fi
