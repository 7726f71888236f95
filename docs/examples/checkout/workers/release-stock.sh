#!/bin/sh
# Compensation of reserve: gives the reserved items back.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
done_with ok
echo '{"stock_released": true}'
