# shellcheck shell=sh
# Sourced by the workers. `wfctl jobs` runs a worker once per job, with the
# job's variables (a JSON object) on stdin and the job in WF_JOB_* /
# WF_IDEMPOTENCY_KEY; exit 0 with a JSON object on stdout completes the
# job with those variables, any other exit fails it (it is retried while
# attempts remain). Each run is appended to $CHECKOUT_LOG, when set, as
# "ORDER JOB_TYPE ATTEMPT OUTCOME", the job type without the example's
# prefix "checkout.".
VARS=$(cat)

# var NAME: the variable's value ("" when absent).
var() {
    if command -v jq >/dev/null 2>&1; then
        printf '%s' "$VARS" | jq -r --arg k "$1" '.[$k] // empty'
    else
        printf '%s' "$VARS" | /usr/bin/python3 -c \
            'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print("" if v is None else v)' "$1"
    fi
}

ORDER=$(var order_id)

# done_with OUTCOME: logs this run.
done_with() {
    if [ -n "${CHECKOUT_LOG:-}" ]; then
        echo "$ORDER ${WF_JOB_TYPE#checkout.} $WF_JOB_ATTEMPT $1" >>"$CHECKOUT_LOG"
    fi
}
