#!/usr/bin/env bash
# The inbox with wfctl, end to end, with checks: priorities and times on
# AssignTo, the inbox sorted and filtered by them, task-update, reassign,
# delegate (and the delegate's resolve), and a net whose USER transition
# sets its task's priority, due and follow-up times by expressions.
#
#   docs/examples/inbox/run.sh [HOST:PORT]
#
# The address is the argument, else $WFCTL_ADDR, else 127.0.0.1:50051. The
# API key and tenant are wfctl's own WFCTL_API_KEY and WFCTL_TENANT (not
# needed for a development server without keys). Needs a running workflowd
# (./run.sh) on the memory store or Postgres, with the open directory (no
# WF_USERS / WF_GROUP_*).
# wfctl is taken from $WFCTL, else build-run/client/wfctl (built by
# ./run.sh), else `wfctl` on the PATH. Values are read from `wfctl --json`
# with jq when it is installed, else with /usr/bin/python3. The people of a
# run carry a suffix of their own ($RUN, default the time and process id),
# so that a run on a store that keeps rows finds only its own tasks.
#
# Prints every command and its output. Exits 0 when every step gave the
# documented result; otherwise prints "FAILED: ..." and exits 1 (2 when
# wfctl or the server cannot be reached).
set -euo pipefail

ADDR=${1:-${WFCTL_ADDR:-127.0.0.1:50051}}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT_DIR=$(cd "$HERE/../../.." && pwd)
# wfctl and the helpers that show and check each command.
source "$ROOT_DIR/docs/examples/lib.sh"

RUN=${RUN:-$(date +%s)-$$}
ANN=ann-$RUN BOB=bob-$RUN CARL=carl-$RUN LEAD=lead-$RUN

# ids_of: the "id" of every JSON line in $OUT, space-separated, in order.
ids_of() { j id | tr '\n' ' ' | sed 's/ $//'; }

if ! "$WFCTL" --addr "$ADDR" health >/dev/null 2>&1; then
    echo "run.sh: no SERVING workflowd at $ADDR" >&2
    exit 2
fi
echo "wfctl: $WFCTL; server: $ADDR; run: $RUN"

# ---------------------------------------------------------------------------
step "1. The team lead starts a case and refers three tasks to $ANN"
wfj "instance.id instance.status" --actor "$LEAD" start inbox-claims
ROOT=$(j instance.id)
wfj "task.id task.priority task.due_at task.follow_up_at" --actor "$LEAD" assign --parent "$ROOT" \
    --user "$ANN" --title "Check the invoice" --priority 20 --due 2030-01-03T09:00:00Z
T1=$(j task.id)
expect "T1 priority" "$(j task.priority)" 20
wfj "task.id task.priority task.due_at" --actor "$LEAD" assign --parent "$ROOT" \
    --user "$ANN" --title "Call the customer" --priority 90 --due 2030-01-01T09:00:00Z \
    --follow-up 2029-12-31T09:00:00Z
T2=$(j task.id)
expect "T2 follow-up" "$(j task.follow_up_at)" 2029-12-31T09:00:00Z
wfj "task.id task.priority task.due_at" --actor "$LEAD" assign --parent "$ROOT" \
    --user "$ANN" --title "File the papers"
T3=$(j task.id)
expect "T3 default priority" "$(j task.priority)" 50
wf_fails INVALID_ARGUMENT INVALID_ARGUMENT --actor "$LEAD" assign --parent "$ROOT" \
    --user "$ANN" --title "Too urgent" --priority 101

# ---------------------------------------------------------------------------
step "2. $ANN's inbox, by priority, by due time, and within a due window"
wf --actor "$ANN" tasks --sort priority --desc
wf_quiet --json --actor "$ANN" tasks --sort priority --desc --all
expect "highest priority first" "$(ids_of)" "$T2 $T3 $T1"
wf_quiet --json --actor "$ANN" tasks --sort due --all
expect "earliest due first, undated last" "$(ids_of)" "$T2 $T1 $T3"
wf_quiet --json --actor "$ANN" tasks --sort due --desc --all
expect "descending: undated first" "$(ids_of)" "$T3 $T1 $T2"
wf_quiet --json --actor "$ANN" tasks --due-before 2030-01-02T00:00:00Z --all
expect "due before Jan 2" "$(ids_of)" "$T2"
wf_quiet --json --actor "$ANN" tasks --sort due --due-after 2030-01-01T09:00:00Z --all
expect "due after Jan 1, 09:00 (strictly)" "$(ids_of)" "$T1"

# ---------------------------------------------------------------------------
step "3. $ANN dates the third task (task-update)"
wfj "task.priority task.due_at task.follow_up_at" --actor "$ANN" task-update "$T3" \
    --priority 70 --due 2030-01-02T09:00:00Z --follow-up 2030-01-01T12:00:00Z
expect "T3 updated" "$(j task.priority) $(j task.due_at) $(j task.follow_up_at)" \
    "70 2030-01-02T09:00:00Z 2030-01-01T12:00:00Z"
wf_quiet --json --actor "$ANN" tasks --sort due --all
expect "T3 now second by due" "$(ids_of)" "$T2 $T3 $T1"
wf_fails INVALID_ARGUMENT INVALID_ARGUMENT --actor "$ANN" task-update "$T3" \
    --follow-up 2030-01-05T00:00:00Z
wfj "task.due_at task.follow_up_at" --actor "$ANN" task-update "$T3" --clear-follow-up
expect "follow-up cleared" "$(j task.follow_up_at)" null
wf_fails PERMISSION_DENIED NOT_ASSIGNEE --actor "$BOB" task-update "$T3" --priority 1

# ---------------------------------------------------------------------------
step "4. $ANN reassigns the invoice to $BOB"
wfj "task.assignee_kind task.assignee_id task.status" --actor "$ANN" reassign "$T1" \
    --user "$BOB" --reason "on leave next week"
expect "T1 reassigned" "$(j task.assignee_kind):$(j task.assignee_id):$(j task.status)" \
    "USER:$BOB:OPEN"
wf_quiet --json --actor "$BOB" tasks --all
expect "in $BOB's inbox" "$(ids_of)" "$T1"
wf_quiet --json --actor "$ANN" tasks --sort priority --desc --all
expect "gone from $ANN's" "$(ids_of)" "$T2 $T3"
wf_fails PERMISSION_DENIED NOT_ASSIGNEE --actor "$ANN" reassign "$T1" --user "$ANN"
wf_fails INVALID_ARGUMENT INVALID_ARGUMENT --actor "$BOB" reassign "$T1"

# ---------------------------------------------------------------------------
step "5. $ANN delegates the call to $CARL, who resolves it; $ANN completes it"
wfj "task.status task.claimed_by task.owner task.delegation_state" --actor "$ANN" delegate "$T2" \
    --user "$CARL"
expect "delegated" "$(j task.status):$(j task.claimed_by):$(j task.owner):$(j task.delegation_state)" \
    "CLAIMED:$CARL:$ANN:PENDING"
wf_fails PERMISSION_DENIED NOT_ASSIGNEE --actor "$ANN" complete "$T2"
wfj "task.status task.claimed_by task.delegation_state" --actor "$CARL" complete "$T2" \
    --vars '{"customer_reached": true}'
expect "resolved" "$(j task.status):$(j task.claimed_by):$(j task.delegation_state)" \
    "CLAIMED:$ANN:RESOLVED"
wfj "task.status task.completed_by" --actor "$ANN" complete "$T2"
expect "completed by the owner" "$(j task.status):$(j task.completed_by)" "DONE:$ANN"

# ---------------------------------------------------------------------------
step "6. A net whose USER transition dates its task by expressions"
wf --actor "$LEAD" deploy "$HERE/review.json"
wfj "instance.id instance.status" --actor "$LEAD" start inbox-review \
    --vars "{\"clerk\": \"$ANN\", \"amount\": 2500, \"received\": \"2030-02-01T08:00:00Z\"}"
NET=$(j instance.id)
wf_quiet --json --actor "$ANN" tasks --all
NT=$(j id root_instance_id="$NET")
[[ -n $NT ]] || fail "the review task is not in $ANN's inbox"
expect "priority by expression" "$(j priority id="$NT")" 80
expect "due by expression" "$(j due_at id="$NT")" 2030-02-04T08:00:00Z
expect "follow-up by expression" "$(j follow_up_at id="$NT")" 2030-02-02T08:00:00Z
wf_fails INVALID_ARGUMENT INVALID_ARGUMENT --actor "$LEAD" start inbox-review \
    --vars "{\"clerk\": \"$ANN\", \"amount\": 10, \"received\": \"Feb 1st\"}"

step "7. Reassigned, the net's work-item history names the new assignee"
wfj "task.assignee_id" --actor "$ANN" reassign "$NT" --user "$BOB"
wf --actor "$LEAD" show "$NET" --history
wf_quiet --json show "$NET" --history
expect "work item assignee" "$(j assignee_ids transition_id=review)" "[\"$BOB\"]"
wfj "task.status" --actor "$BOB" complete "$NT"
expect "the review" "$(j task.status)" DONE
wf_quiet --json show "$NET"
expect "the net" "$(j instance.status)" COMPLETED

printf '\nall steps gave the documented results\n'
