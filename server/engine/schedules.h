/*
 * schedules.h: schedules that start instances on a calendar
 * (CreateSchedule, GetSchedule, ListSchedules, UpdateSchedule,
 * DeleteSchedule, PauseSchedule, UnpauseSchedule, TriggerSchedule,
 * ListScheduleRuns, BackfillSchedule) and the scheduler's passes that fire them
 * (docs/behaviour.md, "Schedules").
 *
 * A schedule names a definition (version 0: the latest at each fire), the
 * variables and aggregate of each instance it starts, a spec
 * (schedule_spec.h) and a policy: what to do while the instance it
 * started last still runs (overlap), how old a fire time may be and still
 * start (the catch-up window), and after how many failed starts in a row
 * it pauses.
 *
 * Exactly once. Each fire time is one run row, unique per (schedule,
 * nominal time), inserted in the unit of work that starts its instance
 * (the instance id chosen first, so the run names it). Whichever replica
 * claims the schedule (wf_store_claim_schedules: a lease, SKIP LOCKED),
 * and however often one dies between that commit and the schedule's
 * progress, a fire time that committed is found by its run and starts
 * nothing again. A new definition version changes nothing here: the
 * schedule keeps its own next fire time.
 *
 * Each pass, per claimed schedule, first starts the fire kept waiting
 * under BUFFER_ONE once the last instance has ended (its BUFFERED run
 * settled STARTED by an update that requires it still BUFFERED, in the
 * unit of work of the start: once, whichever replica sees the end), then
 * handles its due fire times oldest first (at most
 * WF_SCHEDULE_FIRES_PER_PASS):
 *   older than the catch-up window        MISSED
 *   the last one runs, overlap SKIP       SKIPPED
 *   the last one runs, BUFFER_ONE         BUFFERED (the fire kept waiting),
 *                                         or SKIPPED when one already waits
 *   the last one runs, CANCEL_OTHER       that one cancelled (under a request
 *                                         id of the fire time), then STARTED
 *   otherwise                             STARTED, or FAILED when the start
 *                                         (or the cancel) is refused (the
 *                                         failure counts)
 * then writes next_fire_at, due_at (next_fire_at + its jitter; while a
 * fire waits, at most WF_SCHEDULE_BUFFER_RECHECK_MS away), the waiting
 * fire and the last instance against the claimed version and lets the
 * lease go. A fire time that another try had handled is taken as that
 * run says (a BUFFERED one is the waiting fire again).
 *
 * The started instance carries the variable "schedule":
 * {"id": <schedule id>, "nominalTime": <RFC 3339 UTC>}.
 *
 * "now" is a parameter everywhere (the host's clock in the scheduler), so
 * tests run a schedule through a DST change or an outage in one go.
 */
#ifndef WF_SCHEDULES_H
#define WF_SCHEDULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net_runtime.h"
#include "referral.h"
#include "schedule_spec.h"
#include "uow.h"

/* Fire times GetSchedule shows. */
#define WF_SCHEDULE_UPCOMING 10
/* Catch-up window unless the policy sets one. */
#define WF_SCHEDULE_CATCHUP_DEFAULT_MS 60000
/* Fire times one pass handles per schedule (the rest on the next pass). */
#define WF_SCHEDULE_FIRES_PER_PASS 100
/* Fire times one BackfillSchedule may run unless the host says
 * (WF_SCHEDULE_BACKFILL_MAX). */
#define WF_SCHEDULE_BACKFILL_MAX_DEFAULT 1000
/* How long a claim keeps other replicas off, unless the host says. */
#define WF_SCHEDULE_LEASE_MS_DEFAULT 30000
/* While a fire waits (BUFFER_ONE), how soon a pass looks again whether
 * the instance before it has ended. */
#define WF_SCHEDULE_BUFFER_RECHECK_MS 1000
/* Longest schedule id, note and pause reason (bytes). */
#define WF_SCHEDULE_ID_MAX 128
#define WF_SCHEDULE_TEXT_MAX 1024

/* What CreateSchedule and UpdateSchedule ask for. Strings borrowed. */
typedef struct wf_schedule_in {
    const char *id;
    const char *definition_key;
    int32_t version;
    const char *variables_json; /* NULL/"" = {} */
    const char *aggregate_type; /* both or neither */
    const char *aggregate_id;
    wf_schedule_spec_in spec;
    int overlap;                  /* a wf_schedule_overlap; 0 = SKIP */
    int64_t catchup_window_ms;    /* 0 = WF_SCHEDULE_CATCHUP_DEFAULT_MS; negative refused */
    int32_t pause_after_failures; /* 0 = never */
    bool paused;
    const char *note;
} wf_schedule_in;

/* A schedule as answered: the row, its spec read back, and the next fire
 * times in UTC and as wall-clock text of its zone. In the call's arena. */
typedef struct wf_schedule_view {
    wf_schedule_row row;
    wf_schedule_spec_in spec;
    int64_t upcoming[WF_SCHEDULE_UPCOMING];
    const char *upcoming_local[WF_SCHEDULE_UPCOMING];
    size_t n_upcoming;
} wf_schedule_view;

/* CreateSchedule: checks the input (INVALID_ARGUMENT for a missing or
 * too long id or key, INVALID_CRON, UNKNOWN_TIME_ZONE, INVALID_SCHEDULE,
 * INVALID_JSON), that
 * the definition exists (DEFINITION_NOT_FOUND), then stores the schedule
 * with its first fire time after now, in one unit of work with the
 * request record. An id the tenant uses: SCHEDULE_ALREADY_EXISTS. */
wf_code wf_schedules_create(const wf_ref_ctx *ctx, const wf_schedule_in *in, int64_t now,
                            wf_uow_idem *idem, wf_schedule_view *out, wf_error *err);

/* GetSchedule: SCHEDULE_NOT_FOUND for an unknown id (another tenant's
 * included); the upcoming fire times are those after now. */
wf_code wf_schedules_get(const wf_ref_ctx *ctx, const char *id, int64_t now, wf_schedule_view *out,
                         wf_error *err);

/* ListSchedules: newest first; page_size 0 = 50, at most 500. */
wf_code wf_schedules_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor, int64_t now,
                          wf_schedule_view **rows, size_t *n, char **next_cursor, wf_error *err);

/* UpdateSchedule: replaces what CreateSchedule set (in->id names it; the
 * same checks); the next fire time is recomputed from now. */
wf_code wf_schedules_update(const wf_ref_ctx *ctx, const wf_schedule_in *in, int64_t now,
                            wf_uow_idem *idem, wf_schedule_view *out, wf_error *err);

/* DeleteSchedule: the schedule and its runs; the instances it started
 * stay. */
wf_code wf_schedules_delete(const wf_ref_ctx *ctx, const char *id, wf_uow_idem *idem,
                            wf_error *err);

/* PauseSchedule (pause) / UnpauseSchedule: sets the state and the reason.
 * Unpausing resets the failure count and moves the next fire time to
 * after now (the fire times of the pause are not caught up). */
wf_code wf_schedules_pause(const wf_ref_ctx *ctx, const char *id, bool pause, const char *reason,
                           int64_t now, wf_uow_idem *idem, wf_schedule_view *out, wf_error *err);

/* TriggerSchedule: one instance now, outside the calendar and its
 * overlap policy (a run with nominal time now, manual). */
wf_code wf_schedules_trigger(const wf_ref_ctx *ctx, const char *id, int64_t now, wf_uow_idem *idem,
                             wf_schedule_run_row *out, wf_error *err);

/* ListScheduleRuns: newest fire time first; SCHEDULE_NOT_FOUND for an
 * unknown schedule. */
wf_code wf_schedules_runs(const wf_ref_ctx *ctx, const char *id, int32_t page_size,
                          const char *cursor, wf_schedule_run_row **rows, size_t *n,
                          char **next_cursor, wf_error *err);

/* What BackfillSchedule asks for. */
typedef struct wf_schedule_backfill_in {
    const char *id;
    int64_t from, to; /* the range [from, to), µs; both required, to not after now */
    int overlap;      /* a wf_schedule_overlap; 0 = the schedule's */
    size_t max;       /* fire times one call may run; 0 = WF_SCHEDULE_BACKFILL_MAX_DEFAULT */
} wf_schedule_backfill_in;

/* What a backfill did: the runs it recorded, oldest first (in the call's
 * arena), and the fire times that had a run before. */
typedef struct wf_schedule_backfill_out {
    wf_schedule_run_row *runs;
    size_t n_runs;
    size_t already;
} wf_schedule_backfill_out;

/* BackfillSchedule: every fire time of the spec in [from, to) without a
 * run, oldest first, recorded with backfill set: under the overlap policy
 * (in's, else the schedule's; BUFFER_ONE acts as SKIP), without the
 * catch-up window or jitter, each in a unit of work of its own under the
 * run's unique key, so a fire time the calendar or another backfill
 * handled first is left as it is (out->already). A range of more than
 * max fire times is refused whole (BACKFILL_TOO_LARGE). The request
 * record is written once every fire time is handled: a call that failed
 * halfway and is repeated handles the rest. Instances start as rt's
 * actor; the one started last becomes the schedule's last instance. */
wf_code wf_schedules_backfill(const wf_runtime_ctx *rt, const wf_schedule_backfill_in *in,
                              int64_t now, wf_uow_idem *idem, wf_schedule_backfill_out *out,
                              wf_error *err);

/* ---- the scheduler's side ----------------------------------------------- */

/* What the passes need from their host (borrowed for each call). */
typedef struct wf_schedule_host {
    wf_store *store;
    const wf_directory *dir;    /* NULL = open directory */
    size_t max_variables_bytes; /* as wf_ref_ctx */
    wf_runtime_wake_fn wake;    /* after each start; may be NULL */
    void *wake_arg;
    int64_t lease_ms; /* 0 = WF_SCHEDULE_LEASE_MS_DEFAULT */
} wf_schedule_host;

/* What a pass did. */
typedef struct wf_schedule_pass_counts {
    size_t schedules; /* schedules claimed */
    size_t started, skipped, missed, failed, buffered;
    size_t already;     /* fire times another replica (or an earlier try) had handled */
    int64_t max_lag_us; /* largest start - nominal time among the started */
} wf_schedule_pass_counts;

/* Claims up to limit due schedules of tenant (NULL: every tenant) as
 * owner at now and handles the due fire times of each as described
 * above. A store outage ends the pass (returned); any other failure of
 * one schedule is logged and that schedule retried after its lease. */
wf_code wf_schedules_pass(const wf_schedule_host *h, const char *tenant, const char *owner,
                          int64_t now, size_t limit, int64_t deadline_ms,
                          wf_schedule_pass_counts *out, wf_error *err);

#endif /* WF_SCHEDULES_H */
