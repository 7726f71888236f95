#!/usr/bin/env bash
# The worked example of docs/referrals.md, end to end, with checks.
#
#   docs/examples/termination/run.sh [HOST:PORT]
#
# The address is the argument, else $WFCTL_ADDR, else 127.0.0.1:50051. The
# API key and tenant are wfctl's own WFCTL_API_KEY and WFCTL_TENANT (not
# needed for a development server without keys). Needs a running workflowd
# (./run.sh) on the memory store or Postgres, with the open directory (no WF_USERS / WF_GROUP_*) and
# without WF_TRUST_ACTOR_GROUPS. wfctl is taken from $WFCTL, else
# build-run/client/wfctl (built by ./run.sh), else `wfctl` on the PATH.
# Values are read from `wfctl --json` with jq when it is installed, else
# with /usr/bin/python3.
#
# Prints every command and its output. Exits 0 when every step gave the
# documented result; otherwise prints "FAILED: ..." and exits 1 (2 when
# wfctl or the server cannot be reached).
set -euo pipefail

ADDR=${1:-${WFCTL_ADDR:-127.0.0.1:50051}}
ROOT_DIR=$(cd "$(dirname "$0")/../../.." && pwd)
# wfctl and the helpers that show and check each command.
source "$ROOT_DIR/docs/examples/lib.sh"

EMPLOYEE=${EMPLOYEE:-E-1042}

if ! "$WFCTL" --addr "$ADDR" health >/dev/null 2>&1; then
    echo "run.sh: no SERVING workflowd at $ADDR" >&2
    exit 2
fi
echo "wfctl: $WFCTL; server: $ADDR; employee: $EMPLOYEE"

# ---------------------------------------------------------------------------
step "1. HR (hr-anna) starts a termination process"
wfj "instance.id instance.status instance.variables_json" --actor hr-anna start termination \
    --vars "{\"employee_id\": \"$EMPLOYEE\", \"name\": \"Dana Roe\", \"last_day\": \"2024-06-30\"}"
ROOT=$(j instance.id)
expect "root status" "$(j instance.status)" RUNNING
expect "started by" "$(j instance.started_by)" hr-anna
wf_quiet --json --actor hr-anna processes --state not-started --all
expect "listed as not-started" "$(j id id="$ROOT")" "$ROOT"

# ---------------------------------------------------------------------------
step "2. HR refers the case to IT (group it) and finance (group finance), in parallel"
wfj "instance_id task.id task.assignee_kind task.assignee_id task.status" \
    --actor hr-anna assign --parent "$ROOT" --group it \
    --title "Revoke access and collect the laptop of $EMPLOYEE" --request-id "$ROOT-it"
IT_REF=$(j instance_id) IT_TASK=$(j task.id)
expect "IT task" "$(j task.assignee_kind):$(j task.assignee_id):$(j task.status)" GROUP:it:OPEN
wfj "instance_id task.id task.assignee_kind task.assignee_id task.status" \
    --actor hr-anna assign --parent "$ROOT" --group finance \
    --title "Final pay for $EMPLOYEE" --request-id "$ROOT-finance"
FIN_REF=$(j instance_id) FIN_TASK=$(j task.id)
expect "finance task" "$(j task.assignee_kind):$(j task.assignee_id):$(j task.status)" GROUP:finance:OPEN
wf_quiet --json --actor hr-anna processes --state open --all
expect "listed as open" "$(j id id="$ROOT")" "$ROOT"

# ---------------------------------------------------------------------------
step "3. The IT queue shows the task; it-carol claims it; a second claimer is refused"
wf --actor it-carol tasks --group it
wf_quiet --json tasks --group it --all
expect "IT queue has the task" "$(j id root_instance_id="$ROOT")" "$IT_TASK"
wfj "task.status task.claimed_by" --actor it-carol claim "$IT_TASK"
expect "claimed" "$(j task.status):$(j task.claimed_by)" CLAIMED:it-carol

wf_fails FAILED_PRECONDITION TASK_ALREADY_CLAIMED --actor it-erik claim "$IT_TASK"
wf_fails PERMISSION_DENIED NOT_ASSIGNEE --actor it-erik complete "$IT_TASK"
wf_quiet --json tasks --group it --all
expect "a claimed task leaves the group queue" "$(j id root_instance_id="$ROOT")" ""
wf_quiet --json tasks --group it --state claimed --all
expect "the group's claimed tasks, asked for, list it" "$(j id root_instance_id="$ROOT")" "$IT_TASK"

step "4. it-carol completes the IT task"
wfj "task.status task.completed_by completion next" --actor it-carol complete "$IT_TASK" \
    --vars '{"access_revoked": true, "laptop_returned": true}'
expect "IT task" "$(j task.status):$(j task.completed_by)" DONE:it-carol
expect "IT referral all completed" "$(j completion.all_completed)" true
expect "no next referral" "$(j next)" null

# The join over the two departments (see docs/referrals.md, "Joining two
# groups"): when both department referrals are complete, refer the case to
# the manager; the request_id makes the referral happen exactly once, however
# many completions (or retries) run this.
refer_to_manager_when_both_done() {
    local done=0 ref
    for ref in "$IT_REF" "$FIN_REF"; do
        wfj "all_completed done total" --actor hr-anna referral-status "$ref"
        if [[ $(j all_completed) == true ]]; then done=$((done + 1)); fi
    done
    echo "   departments done: $done of 2"
    if [[ $done -eq 2 ]]; then
        wfj "instance_id task.id task.assignee_id task.assigned_by" \
            --actor hr-anna assign --parent "$ROOT" --user mgr-bob \
            --title "Approve the termination of $EMPLOYEE" --request-id "$ROOT-approval"
        MGR_REF=$(j instance_id) MGR_TASK=$(j task.id)
    fi
}
step "5. The backend's join: finance is still working"
MGR_REF="" MGR_TASK=""
refer_to_manager_when_both_done
expect "no manager referral yet" "$MGR_REF" ""

# ---------------------------------------------------------------------------
step "6. Finance: fin-dave claims and completes; the manager is referred, once"
wf --actor fin-dave tasks --group finance
wfj "task.status task.claimed_by" --actor fin-dave claim "$FIN_TASK"
expect "claimed" "$(j task.status):$(j task.claimed_by)" CLAIMED:fin-dave
wfj "task.status task.completed_by completion" --actor fin-dave complete "$FIN_TASK" \
    --vars '{"final_pay": 4210.50}'
expect "finance task" "$(j task.status):$(j task.completed_by)" DONE:fin-dave

refer_to_manager_when_both_done
[[ -n $MGR_REF ]] || fail "no manager referral"
FIRST_MGR_REF=$MGR_REF
echo "   (the IT side runs the same check late: the request_id returns the first referral)"
refer_to_manager_when_both_done
expect "same manager referral" "$MGR_REF" "$FIRST_MGR_REF"

# ---------------------------------------------------------------------------
step "7. The manager's inbox shows the new task"
wf --actor mgr-bob tasks
wf_quiet --json --actor mgr-bob tasks --all
expect "manager task in the inbox" "$(j id root_instance_id="$ROOT")" "$MGR_TASK"
expect "assigned by" "$(j assigned_by id="$MGR_TASK")" hr-anna

step "8. The manager approves and ends the whole process (CompleteAndEnd)"
wfj "task.status root_instance.status root_instance.ended_at cancelled_tasks" \
    --actor mgr-bob complete-and-end "$MGR_TASK" --vars '{"approved": true}'
expect "root" "$(j root_instance.id):$(j root_instance.status)" "$ROOT:COMPLETED"
expect "cancelled tasks" "$(j cancelled_tasks)" "[]"

step "9. show and processes --state closed confirm"
wf show "$ROOT"
wf_quiet --json show "$ROOT"
expect "root status" "$(j instance.status)" COMPLETED
wf_quiet --json show "$IT_REF"
expect "IT output variables (on the IT referral)" "$(j instance.variables_json.laptop_returned)" true
wf_quiet --json --actor hr-anna processes --state closed --all
expect "listed as closed" "$(j status id="$ROOT")" COMPLETED
wf --actor hr-anna processes --state closed --key termination
wf_fails FAILED_PRECONDITION TASK_NOT_OPEN --actor it-carol complete "$IT_TASK"

# ---------------------------------------------------------------------------
step "10. The join inside the engine: --users with --join all and --then-user"
wfj "instance.id instance.status" --actor hr-anna start termination \
    --vars "{\"employee_id\": \"$EMPLOYEE-B\", \"name\": \"Lee Poe\"}"
ROOT2=$(j instance.id)
wfj "instance_id task.assignee_id" \
    --actor hr-anna assign --parent "$ROOT2" --users it-carol,fin-dave --join all \
    --title "Offboard $EMPLOYEE-B" --then-user mgr-bob --then-title "Approve the termination of $EMPLOYEE-B"
REF2=$(j instance_id)
wf_quiet --json --actor it-carol tasks --all
T_IT=$(j id root_instance_id="$ROOT2")
wf_quiet --json --actor fin-dave tasks --all
T_FIN=$(j id root_instance_id="$ROOT2")
[[ -n $T_IT && -n $T_FIN ]] || fail "the two personal tasks are not in the inboxes"

wfj "task.status completion next" --actor it-carol complete "$T_IT" --vars '{"access_revoked": true}'
expect "join not met yet" "$(j completion.done)/$(j completion.total):$(j next)" "1/2:null"
wf show "$ROOT2"
wfj "task.status completion next.instance_id next.task.id next.task.assignee_id next.task.assigned_by" \
    --actor fin-dave complete "$T_FIN" --vars '{"final_pay": 3100}'
expect "join fired" "$(j completion.all_completed)" true
NEXT_TASK=$(j next.task.id)
expect "next referral" "$(j next.task.assignee_id):$(j next.task.assigned_by)" mgr-bob:hr-anna
wf_quiet --json show "$REF2"
expect "the joined referral" "$(j instance.status)" COMPLETED
wf --actor mgr-bob tasks
wf_quiet --json --actor mgr-bob tasks --all
expect "manager task in the inbox" "$(j id root_instance_id="$ROOT2")" "$NEXT_TASK"
wfj "task.status root_instance.status cancelled_tasks" --actor mgr-bob complete-and-end "$NEXT_TASK"
expect "root" "$(j root_instance.status)" COMPLETED

printf '\nall steps gave the documented results\n'
