#!/bin/sh
# Charges the card; a declined card fails the job (and so, after the last
# attempt, the order: the reservation is released). An order collected in
# the shop needs no carrier: the worker answers "goto ship" by writing the
# step into $WF_NEXT_STEP_FILE (CompleteJobRequest.next_step).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$(var card)" = declined ]; then
    done_with failed
    echo "card declined" >&2
    exit 1
fi
if [ "$(var delivery)" = pickup ]; then
    echo ship >"$WF_NEXT_STEP_FILE"
fi
done_with ok
printf '{"payment_id": "P-%s"}\n' "$ORDER"
