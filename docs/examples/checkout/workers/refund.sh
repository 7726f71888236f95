#!/bin/sh
# Compensation of charge (WF_JOB_COMPENSATION=1). It runs outside any lock
# and at least once: the payment provider deduplicates on the idempotency
# key.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
done_with ok
printf '{"refund_id": "F-%s"}\n' "$ORDER"
