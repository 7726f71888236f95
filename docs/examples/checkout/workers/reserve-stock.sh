#!/bin/sh
# Reserves the order's items. The idempotency key is stable across retries:
# the stock service uses it so that a retried reservation reserves once.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
done_with ok
printf '{"reservation": "R-%s"}\n' "$ORDER"
