#!/bin/sh
# Hands the parcel over; a label the carrier rejects fails the job (after
# the last attempt: refund, then release the stock).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$(var label)" = rejected ]; then
    done_with failed
    echo "carrier rejected the shipping label" >&2
    exit 1
fi
done_with ok
echo '{"shipped": true}'
