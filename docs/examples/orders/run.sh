#!/usr/bin/env bash
# An order paid line by line, end to end, with checks: the order process
# (order.json) calls the reusable payment process (payment.json) once per
# line item (a for-each over a CALL transition), and the shop backend
# starts each order with `wfctl start --await`, which answers once the
# order ended (StartInstance's await_result).
#
#   docs/examples/orders/run.sh [HOST:PORT]
#
# The address is the argument, else $WFCTL_ADDR, else 127.0.0.1:50051. The
# API key and tenant are wfctl's own WFCTL_API_KEY and WFCTL_TENANT (not
# needed for a development server without keys). Needs a running workflowd
# (./run.sh) on the memory store or Postgres. wfctl is taken from $WFCTL,
# else build-run/client/wfctl (built by ./run.sh), else `wfctl` on the
# PATH. Values are read from `wfctl --json` with jq when it is installed,
# else with /usr/bin/python3.
#
# It deploys both definitions, starts a `wfctl jobs` worker loop for the
# payment's job type (workers/charge-line.sh), then runs two orders:
#   1. three lines, paid: one payment instance per line, the payments
#      collected in line order, the order COMPLETED;
#   2. a declined card: the payment of each line fails, the order FAILED
#      with the incident CALL_CHILD_FAILED naming a line and its payment
#      instance, whose own diagram `wfctl show ID --dot` draws.
# Prints every command and its output. Exits 0 when every outcome is the
# expected one; otherwise prints "FAILED: ..." and exits 1 (2 when wfctl or
# the server cannot be reached).
set -euo pipefail

ADDR=${1:-${WFCTL_ADDR:-127.0.0.1:50051}}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT_DIR=$(cd "$HERE/../../.." && pwd)
# wfctl and the helpers that show and check each command.
source "$ROOT_DIR/docs/examples/lib.sh"

WORK=$(mktemp -d)
export ORDERS_LOG=$WORK/workers.log
: >"$ORDERS_LOG"
WORKER=""
stop_worker() {
    if [[ -n $WORKER ]]; then
        kill -TERM "$WORKER" 2>/dev/null || true
        wait "$WORKER" 2>/dev/null || true
    fi
    WORKER=""
}
trap 'stop_worker; rm -rf "$WORK" "$OUT" "$ERR"' EXIT

# paid ORDER: what the worker did for ORDER, as "SKU:INDEX:OUTCOME ...",
# in line order.
paid() {
    awk -v o="$1" '$1 == o { print $3, $2 ":" $3 ":" $4 }' "$ORDERS_LOG" | sort -n |
        cut -d' ' -f2 | paste -sd' ' -
}

if ! "$WFCTL" --addr "$ADDR" health >/dev/null 2>&1; then
    echo "run.sh: no SERVING workflowd at $ADDR" >&2
    exit 2
fi
# Order numbers unique to this run (Postgres keeps the orders of earlier runs).
RUN=$(date +%s)-$$
O1=O-$RUN-1 O2=O-$RUN-2

step "1. Deploy the payment process, then the order process that calls it per line"
wf --actor shop-backend deploy "$HERE/payment.json"
wf --actor shop-backend deploy "$HERE/order.json"
wf definition orders-order

step "2. Start a worker loop for the payment's job type"
echo "\$ wfctl jobs orders.charge-line --worker orders-charge --concurrency 3 -- workers/charge-line.sh &"
"$WFCTL" --addr "$ADDR" jobs orders.charge-line --worker orders-charge --concurrency 3 \
    -- "$HERE/workers/charge-line.sh" >>"$WORK/jobs.out" 2>&1 &
WORKER=$!

step "3. Order $O1: three lines, started and awaited in one call"
LINES='[{"sku": "book", "amount": 12}, {"sku": "pen", "amount": 3}, {"sku": "lamp", "amount": 40}]'
wfj "instance.id timed_out view.instance.status" --timeout 70000 --actor shop-backend \
    start orders-order --await --await-wait 60 \
    --vars "{\"order_id\": \"$O1\", \"card\": \"ok\", \"lines\": $LINES}"
ID1=$(j instance.id)
expect "timed out" "$(j timed_out)" false
expect "status" "$(j view.instance.status)" COMPLETED
expect "payments, in line order" "$(j view.instance.variables_json.payments)" \
    "[{\"payment_id\":\"P-$O1-book\"},{\"payment_id\":\"P-$O1-pen\"},{\"payment_id\":\"P-$O1-lamp\"}]"
expect "worker runs" "$(paid "$O1")" "book:0:paid pen:1:paid lamp:2:paid"
wf show "$ID1"
wf watch --instance "$ID1" --type call-started,call-completed,foreach-item-completed

step "4. Order $O2: the card is declined"
wfj "instance.id timed_out view.instance.status view.last_error" --timeout 70000 \
    --actor shop-backend start orders-order --await --await-wait 60 \
    --vars "{\"order_id\": \"$O2\", \"card\": \"declined\", \"lines\": [{\"sku\": \"tent\", \"amount\": 99}]}"
ID2=$(j instance.id)
expect "status" "$(j view.instance.status)" FAILED
wf incidents --definition orders-order
wf_quiet --json incidents --definition orders-order --all
expect "incident" "$(j code instance_id="$ID2")" CALL_CHILD_FAILED
CHILD=$(awk -v o="$O2" '$1 == o { print $5 }' "$ORDERS_LOG")
echo "   the payment instance of line 0: $CHILD"
wf show "$CHILD" --dot
grep -q "instance $CHILD: FAILED" "$OUT" || fail "the payment's diagram does not show it FAILED"

step "5. The worker's output"
stop_worker
sed 's/^/   /' "$WORK/jobs.out"

printf '\nevery order ended as expected\n'
