#!/bin/sh
# Charges one line item of an order: a job of the payment process, which
# the order process calls once per line. A declined card fails the job for
# good (exit 100): its payment instance fails, and so the order, with the
# incident naming the line. Each run is appended to $ORDERS_LOG, when set,
# as "ORDER SKU INDEX OUTCOME PAYMENT_INSTANCE".
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

ORDER=$(var order_id) SKU=$(var sku) INDEX=$(var line_index)
if [ "$(var card)" = declined ]; then
    [ -n "${ORDERS_LOG:-}" ] && echo "$ORDER $SKU $INDEX declined $WF_INSTANCE_ID" >>"$ORDERS_LOG"
    echo "card declined for $SKU" >&2
    exit 100
fi
[ -n "${ORDERS_LOG:-}" ] && echo "$ORDER $SKU $INDEX paid $WF_INSTANCE_ID" >>"$ORDERS_LOG"
printf '{"payment_id": "P-%s-%s", "amount": %s}\n' "$ORDER" "$SKU" "$(var amount)"
