#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each one for a bounded time.
#
#   fuzz/run.sh [SECONDS]      default 30 s per target (CI: fuzz/run.sh 20)
#
# Each target starts from a temporary copy of fuzz/corpus/<target> (nothing
# new is written into the repository), with its dictionary from fuzz/dict/
# when there is one, -max_total_time=SECONDS -rss_limit_mb=2048 -timeout=5
# and ASAN_OPTIONS=detect_leaks=1. A crash, leak, timeout or out-of-memory
# input is written to fuzz/crashes/<target>/ (git-ignored) and makes the
# script exit 1 after the remaining targets ran; each target's final stats
# line is printed either way. See fuzz/README.md for longer runs and for
# reproducing a finding.
#
# Environment (all optional):
#   FUZZ_BUILD_DIR   build directory (default build-fuzz; configured with
#                    CC=clang -DWF_FUZZ=ON when it has no CMakeCache.txt)
#   FUZZ_TARGETS     targets to run (default: fuzz_requests fuzz_definition fuzz_expr)
#   FUZZ_JOBS        parallel build jobs (default: number of CPUs)
#   FUZZ_ARGS        extra libFuzzer arguments for every target
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in
-h | --help) usage; exit 0 ;;
esac
secs=${1:-30}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: SECONDS must be a positive integer" >&2; usage >&2; exit 2; }
[ $# -le 1 ] || { usage >&2; exit 2; }

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
TARGETS=${FUZZ_TARGETS:-fuzz_requests fuzz_definition fuzz_expr}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}

command -v clang >/dev/null 2>&1 ||
    { echo "run.sh: clang is missing (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

# ---- build ------------------------------------------------------------------
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    CC=clang cmake -S . -B "$BUILD" -DWF_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
grep -q '^WF_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" ||
    { echo "run.sh: $BUILD is not configured with -DWF_FUZZ=ON" >&2; exit 1; }
cmake --build "$BUILD" --target fuzz_all -j "$JOBS" >"$BUILD/fuzz-build.log" 2>&1 ||
    { tail -40 "$BUILD/fuzz-build.log" >&2; echo "run.sh: build failed (log: $BUILD/fuzz-build.log)" >&2; exit 1; }

# ---- run ----------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wf-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for t in $TARGETS; do
    bin=$BUILD/fuzz/$t
    [ -x "$bin" ] || { echo "run.sh: no target $t in $BUILD/fuzz" >&2; exit 2; }
    corpus=$WORK/corpus/$t
    mkdir -p "$corpus" "$ROOT/fuzz/crashes/$t"
    cp -R "$ROOT/fuzz/corpus/$t/." "$corpus/"
    dict=()
    [ -f "$ROOT/fuzz/dict/$t.dict" ] && dict=(-dict="$ROOT/fuzz/dict/$t.dict")
    log=$WORK/$t.log
    printf '==== %s: %ss\n' "$t" "$secs"
    rc=0
    "$bin" "$corpus" "${dict[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=5 \
        -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/crashes/$t/" \
        ${FUZZ_ARGS:-} >"$log" 2>&1 || rc=$?
    # The final stats: libFuzzer's last status line and its run count.
    grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|NEW|REDUCE|pulse)' "$log" | tail -1 || true
    grep -E '^Done [0-9]+ runs|^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
    # Known findings the harness tolerates (fuzz/README.md "Known findings").
    grep -E '^FUZZ KNOWN' "$log" | sort -u || true
    if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        echo "---- $t FAILED (exit $rc); the end of its log:"
        grep -vE '^(INFO|#[0-9]+)' "$log" | tail -60
        grep -E 'Test unit written to' "$log" || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh: findings in: ${failed[*]} (reproducers in fuzz/crashes/; see fuzz/README.md)" >&2
    exit 1
fi
echo "run.sh: no crash, leak or timeout in $TARGETS ($secs s each)"
