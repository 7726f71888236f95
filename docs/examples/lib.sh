#!/usr/bin/env bash
# Shared by the example scripts (docs/examples/*/run.sh), sourced after ADDR
# and ROOT_DIR are set: finds wfctl ($WFCTL, else build-run/client/wfctl,
# else `wfctl` on the PATH) and defines the helpers that show each command
# and check its outcome (wf, wf_quiet, wfj, wf_fails, j, expect, fail,
# step). The connection settings of the caller's environment reach wfctl as
# they would reach it by hand (WFCTL_API_KEY, WFCTL_TENANT, WFCTL_TIMEOUT,
# WFCTL_TLS; the scripts take their address from WFCTL_ADDR when no
# argument names one); who acts is the scripts' own choice, so
# WFCTL_ACTOR and WFCTL_ACTOR_GROUPS are cleared.

if [[ -n ${WFCTL:-} ]]; then
    :
elif [[ -x $ROOT_DIR/build-run/client/wfctl ]]; then
    WFCTL=$ROOT_DIR/build-run/client/wfctl
else
    WFCTL=$(command -v wfctl || true)
fi
if [[ -z $WFCTL || ! -x $WFCTL ]]; then
    echo "run.sh: wfctl not found (build it with ./run.sh, or set WFCTL)" >&2
    exit 2
fi
# Each command names its actor (--actor), or none on purpose.
unset WFCTL_ACTOR WFCTL_ACTOR_GROUPS

OUT=$(mktemp) ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT

fail() { echo "FAILED: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

# show_cmd ARGS...: prints "$ wfctl ARGS" as it could be pasted into a shell.
show_cmd() {
    local a line="\$ wfctl"
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then
            line+=" $a"
        else
            line+=" '${a//\'/\'\\\'\'}'"
        fi
    done
    echo "$line"
}

# wf ARGS...: runs wfctl against $ADDR, shows the command (without --addr)
# and its output; stdout is kept in $OUT. Fails the run on a non-zero exit.
wf() {
    show_cmd "$@"
    if ! "$WFCTL" --addr "$ADDR" "$@" >"$OUT" 2>"$ERR"; then
        cat "$OUT" "$ERR"
        fail "wfctl $* exited non-zero"
    fi
    cat "$OUT"
}

# wf_quiet ARGS...: the same, without showing anything (for checks).
wf_quiet() {
    if ! "$WFCTL" --addr "$ADDR" "$@" >"$OUT" 2>"$ERR"; then
        cat "$ERR" >&2
        fail "wfctl $* exited non-zero"
    fi
}

# wfj "PATH..." ARGS...: runs `wfctl --json ARGS`, shows the command and
# the listed values of its response (dotted paths, see j), keeps it in $OUT.
wfj() {
    local paths=$1 p
    shift
    show_cmd --json "$@"
    if ! "$WFCTL" --addr "$ADDR" --json "$@" >"$OUT" 2>"$ERR"; then
        cat "$OUT" "$ERR"
        fail "wfctl --json $* exited non-zero"
    fi
    for p in $paths; do printf '   %-28s %s\n' "$p" "$(j "$p")"; done
}

# wf_fails CODE REASON ARGS...: the call must fail (exit 1) with
# "error: CODE (REASON): ...".
wf_fails() {
    local code=$1 reason=$2 rc=0
    shift 2
    show_cmd "$@"
    "$WFCTL" --addr "$ADDR" "$@" >"$OUT" 2>"$ERR" || rc=$?
    cat "$OUT" "$ERR"
    echo "(exit status $rc)"
    [[ $rc -eq 1 ]] || fail "expected exit status 1, got $rc"
    grep -q "^error: $code ($reason): " "$ERR" || fail "expected $code ($reason)"
}

# j PATH [KEY=VALUE...]: from the JSON objects in $OUT (one per line), the
# value at the dotted PATH of every object whose top-level KEYs equal the
# VALUEs; strings raw, "null" when absent.
if command -v jq >/dev/null 2>&1; then
    j() {
        local path=$1 filter="." kv
        shift
        for kv in "$@"; do filter+=" | select(.${kv%%=*} == \"${kv#*=}\")"; done
        jq -c -r "$filter | .$path" <"$OUT"
    }
else
    j() {
        /usr/bin/python3 -c '
import json, sys
path, conds = sys.argv[1].split("."), [c.split("=", 1) for c in sys.argv[2:]]
for line in sys.stdin:
    if not line.strip():
        continue
    obj = json.loads(line)
    if any(str(obj.get(k)) != v for k, v in conds):
        continue
    for p in path:
        obj = obj.get(p) if isinstance(obj, dict) else None
    print(obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")))
' "$@" <"$OUT"
    }
fi

# expect WHAT ACTUAL WANTED
expect() { [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; echo "   ok: $1 = $3"; }
