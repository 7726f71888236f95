#!/usr/bin/env bash
# The checkout saga of README.md (this directory), end to end, with checks.
#
#   docs/examples/checkout/run.sh [HOST:PORT]
#
# The address is the argument, else $WFCTL_ADDR, else 127.0.0.1:50051. The
# API key and tenant are wfctl's own WFCTL_API_KEY and WFCTL_TENANT (not
# needed for a development server without keys). Needs a running workflowd
# on the memory store or Postgres; wfctl is taken from $WFCTL, else
# build-run/client/wfctl (built by ./run.sh), else `wfctl` on the PATH.
# Values are read from `wfctl --json` with jq when it is installed, else
# with /usr/bin/python3.
#
# It deploys the step list, starts one `wfctl jobs` worker loop per job
# type (the scripts in workers/), then runs four orders:
#   1. the carrier webhook arrives while the order waits for it: COMPLETED;
#   2. the webhook arrives before the order exists (it is buffered), then
#      shipping fails after its retries: refund, then release the stock,
#      COMPENSATED;
#   3. the card is declined on every attempt: the stock is released (there
#      is nothing to refund), COMPENSATED;
#   4. the order is collected in the shop: the charge worker answers "goto
#      ship" (a worker's next_step), so it never waits for the carrier.
# Prints every command and its output. Exits 0 when every outcome is the
# expected one; otherwise prints "FAILED: ..." and exits 1 (2 when wfctl or
# the server cannot be reached).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT_DIR=$(cd "$HERE/../../.." && pwd)
ADDR=${1:-${WFCTL_ADDR:-127.0.0.1:50051}}
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
# Bounds every wait of the script (seconds).
WAIT_S=${CHECKOUT_WAIT_S:-60}

WORK=$(mktemp -d)
OUT=$WORK/out ERR=$WORK/err
export CHECKOUT_LOG=$WORK/workers.log
: >"$CHECKOUT_LOG"
WORKERS=()
stop_workers() {
    local pid
    for pid in ${WORKERS[@]+"${WORKERS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in ${WORKERS[@]+"${WORKERS[@]}"}; do wait "$pid" 2>/dev/null || true; done
    WORKERS=()
}
trap 'stop_workers; rm -rf "$WORK"' EXIT

fail() { echo "FAILED: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

# show_cmd ARGS...: prints "$ wfctl ARGS" as it could be pasted into a shell.
show_cmd() {
    local a line="\$ wfctl"
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then line+=" $a"; else line+=" '${a//\'/\'\\\'\'}'"; fi
    done
    echo "$line"
}

# wf ARGS...: runs wfctl, shows the command and its output (kept in $OUT).
wf() {
    show_cmd "$@"
    if ! "$WFCTL" --addr "$ADDR" "$@" >"$OUT" 2>"$ERR"; then
        cat "$OUT" "$ERR"
        fail "wfctl $* exited non-zero"
    fi
    cat "$OUT"
}

# wf_quiet ARGS...: the same, showing nothing (for checks and polls).
wf_quiet() {
    if ! "$WFCTL" --addr "$ADDR" "$@" >"$OUT" 2>"$ERR"; then
        cat "$ERR" >&2
        fail "wfctl $* exited non-zero"
    fi
}

# j FILTER: a jq filter (field paths, `length`, `|`) over the JSON in $OUT;
# strings raw.
if command -v jq >/dev/null 2>&1; then
    j() { jq -r "$1" <"$OUT"; }
else
    # Only the paths this script uses: .a.b[0].c and an optional "| length".
    j() {
        /usr/bin/python3 -c '
import json, re, sys
expr = sys.argv[1]
length = expr.endswith("| length")
path = expr[:-len("| length")].strip() if length else expr
for line in sys.stdin:
    if not line.strip():
        continue
    v = json.loads(line)
    for name, idx in re.findall(r"\.(\w+)(?:\[(\d+)\])?", path):
        v = v.get(name) if isinstance(v, dict) else None
        if idx and isinstance(v, list):
            v = v[int(idx)] if int(idx) < len(v) else None
    if length:
        v = len(v) if v is not None else 0
    print(v if isinstance(v, str) else "null" if v is None else json.dumps(v, separators=(",", ":")))
' "$1" <"$OUT"
    }
fi

# expect WHAT ACTUAL WANTED
expect() { [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; echo "   ok: $1 = $3"; }

# wait_until ID WHAT FILTER WANTED: polls `wfctl --json show ID` until the
# jq FILTER gives WANTED (at most $WAIT_S seconds).
wait_until() {
    local id=$1 what=$2 filter=$3 want=$4 got i
    for ((i = 0; i < WAIT_S * 5; i++)); do
        wf_quiet --json show "$id"
        got=$(j "$filter")
        if [[ $got == "$want" ]]; then
            echo "   ok: $what"
            return 0
        fi
        sleep 0.2
    done
    wf show "$id"
    fail "$what: still '$got' after ${WAIT_S}s, want '$want'"
}

# runs ORDER: what the workers did for ORDER, as "JOB_TYPE:OUTCOME ...".
runs() { awk -v o="$1" '$1 == o { printf "%s%s:%s", sep, $2, $4; sep = " " }' "$CHECKOUT_LOG"; }

if ! "$WFCTL" --addr "$ADDR" health >/dev/null 2>&1; then
    echo "run.sh: no SERVING workflowd at $ADDR" >&2
    exit 2
fi
# Order numbers unique to this run (Postgres keeps the orders of earlier runs).
RUN=$(date +%s)-$$
O1=A-$RUN-1 O2=A-$RUN-2 O3=A-$RUN-3 O4=A-$RUN-4
echo "wfctl: $WFCTL; server: $ADDR; orders: $O1 $O2 $O3 $O4"

# ---------------------------------------------------------------------------
step "1. Deploy the checkout step list (compiled into a net by the server)"
wf --actor shop-backend deploy "$HERE/checkout.json"
wf definition checkout
echo "   (a printed definition deploys again unchanged: wfctl drops the compiled net)"
wf_quiet --json definition checkout
j .definition >"$WORK/printed.json"
wf --actor shop-backend deploy "$WORK/printed.json"
grep -q "unchanged" "$OUT" || fail "the printed definition did not deploy unchanged"

step "2. Start one worker loop per job type (the scripts in workers/)"
# Job types are shared by every definition of a tenant (a worker of
# "charge" takes the jobs of any definition naming "charge"), so the
# example's carry its own prefix: checkout.charge, checkout.ship, ...
for type in reserve-stock charge ship refund release-stock; do
    echo "\$ wfctl jobs checkout.$type --worker checkout-$type --wait 2 -- workers/$type.sh &"
    "$WFCTL" --addr "$ADDR" jobs "checkout.$type" --worker "checkout-$type" --wait 2 \
        -- "$HERE/workers/$type.sh" >>"$WORK/jobs.out" 2>&1 &
    WORKERS+=($!)
done

# ---------------------------------------------------------------------------
step "3. Order $O1: reserve, charge, then wait for the carrier"
wf_quiet --json --actor shop-backend start checkout --aggregate "order:$O1" \
    --vars "{\"order_id\": \"$O1\", \"amount\": 120, \"card\": \"ok\", \"label\": \"ok\"}"
ID1=$(j .instance.id)
echo "   instance $ID1"
wait_until "$ID1" "parked, waiting for the carrier webhook" ".awaiting_signals | length" 1
wf show "$ID1"
wf_quiet --json show "$ID1"
expect "current step" "$(j .current_steps[0].id)" carrier
expect "awaited signal" "$(j .awaiting_signals[0].name)" carrier_picked_up
expect "its timeout" "$(j .timers[0].transition_id)" carrier:timeout
expect "status" "$(j .instance.status)" RUNNING

step "4. The carrier's webhook, by aggregate (the backend does not know the instance id)"
wf --json signal carrier_picked_up --aggregate "order:$O1" --id "carrier-evt-$O1" \
    --payload '{"carrier": "DHL", "tracking": "JD0146"}'
expect "outcome" "$(j .outcome)" CORRELATED
expect "woken instance" "$(j .instance_ids[0])" "$ID1"
echo "   (the carrier retries its webhook: the same event id changes nothing)"
wf --json signal carrier_picked_up --aggregate "order:$O1" --id "carrier-evt-$O1" \
    --payload '{"carrier": "DHL", "tracking": "JD0146"}'
expect "outcome" "$(j .outcome)" DUPLICATE
wait_until "$ID1" "order $O1 COMPLETED" .instance.status COMPLETED
wf show "$ID1"
wf_quiet --json show "$ID1"
expect "tracking from the webhook" "$(j .instance.variables_json.tracking)" JD0146
expect "shipped" "$(j .instance.variables_json.shipped)" true
expect "worker runs" "$(runs "$O1")" "reserve-stock:ok charge:ok ship:ok"

# ---------------------------------------------------------------------------
step "5. Order $O2: the webhook comes first and is buffered; then shipping fails"
wf --json signal carrier_picked_up --aggregate "order:$O2" --id "carrier-evt-$O2" --ttl 3600 \
    --payload '{"carrier": "DHL", "tracking": "JD0147"}'
expect "outcome" "$(j .outcome)" BUFFERED
wf_quiet --json --actor shop-backend start checkout --aggregate "order:$O2" \
    --vars "{\"order_id\": \"$O2\", \"amount\": 80, \"card\": \"ok\", \"label\": \"rejected\"}"
ID2=$(j .instance.id)
echo "   instance $ID2"
wait_until "$ID2" "order $O2 COMPENSATED" .instance.status COMPENSATED
wf show "$ID2"
wf_quiet --json show "$ID2"
expect "the buffered webhook was used" "$(j .instance.variables_json.tracking)" JD0147
expect "worker runs (refund first, then release)" "$(runs "$O2")" \
    "reserve-stock:ok charge:ok ship:failed ship:failed ship:failed refund:ok release-stock:ok"
wf signals --aggregate "order:$O2"
wf watch --instance "$ID2" --type job-failed,compensation-started,job-completed,instance-compensated

# ---------------------------------------------------------------------------
step "6. Order $O3: the card is declined on every attempt"
wf_quiet --json --actor shop-backend start checkout --aggregate "order:$O3" \
    --vars "{\"order_id\": \"$O3\", \"amount\": 999, \"card\": \"declined\", \"label\": \"ok\"}"
ID3=$(j .instance.id)
echo "   instance $ID3"
wait_until "$ID3" "order $O3 COMPENSATED" .instance.status COMPENSATED
wf show "$ID3"
expect "worker runs (nothing was charged: no refund)" "$(runs "$O3")" \
    "reserve-stock:ok charge:failed charge:failed charge:failed release-stock:ok"

# ---------------------------------------------------------------------------
step "7. Order $O4: collected in the shop, the charge worker skips the carrier (goto ship)"
wf_quiet --json --actor shop-backend start checkout --aggregate "order:$O4" \
    --vars "{\"order_id\": \"$O4\", \"amount\": 40, \"card\": \"ok\", \"label\": \"ok\", \"delivery\": \"pickup\"}"
ID4=$(j .instance.id)
echo "   instance $ID4"
wait_until "$ID4" "order $O4 COMPLETED" .instance.status COMPLETED
wf show "$ID4"
expect "worker runs (no wait for the carrier)" "$(runs "$O4")" "reserve-stock:ok charge:ok ship:ok"

step "8. The workers' output"
stop_workers
sed 's/^/   /' "$WORK/jobs.out"

printf '\nevery order ended as expected\n'
