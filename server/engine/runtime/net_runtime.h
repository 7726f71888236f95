/*
 * net_runtime: the case runtime of Petri-net (NET) definitions over the
 * store (docs/architecture.md). It turns the pure engine's diffs (net.h)
 * into rows and events inside one unit of work (uow.h) per root.
 *
 * No protobuf, grpc or handler type appears here: the handlers convert
 * requests into these calls, the timer scheduler calls wf_runtime_fire_timer.
 */
#ifndef WF_NET_RUNTIME_H
#define WF_NET_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "referral.h"
#include "store.h"
#include "uow.h"
#include "wf_error.h"

/* Wake-up topics passed to wf_runtime_host.wake (the same strings as the rpc
 * layer's WF_TOPIC_EVENTS and WF_TOPIC_JOBS_PREFIX + job type). */
#define WF_RUNTIME_TOPIC_EVENTS "events"
#define WF_RUNTIME_TOPIC_JOBS_PREFIX "jobs:"
/* A commit created a timer: the host wakes its timer scheduler, so a
 * timer due at once does not wait for the next poll (WF_TOPIC_TIMERS). */
#define WF_RUNTIME_TOPIC_TIMERS "timers"

/* Called after a commit, once per topic that changed ("events", or
 * "jobs:<type>" for a job that became activatable). Must be cheap and must
 * not block. */
typedef void (*wf_runtime_wake_fn)(void *arg, const char *topic);

/* What the runtime needs from its host: the store and how to wake waiters.
 * Borrowed for the duration of each call; wake may be NULL. */
typedef struct wf_runtime_host {
    wf_store *store;
    wf_runtime_wake_fn wake;
    void *wake_arg;
} wf_runtime_host;

/* The context of one engine call made for a client: the referral
 * context (store, directory, tenant, actor, deadline, arena, violation
 * sink) plus the wake-up hook run after a commit. */
typedef struct wf_runtime_ctx {
    wf_ref_ctx ref;
    wf_runtime_wake_fn wake; /* may be NULL */
    void *wake_arg;
} wf_runtime_ctx;

/* ---- definitions ----------------------------------------------------------- */

typedef struct wf_runtime_deploy_in {
    wf_def_kind kind;   /* 0 = unset: a REQUIRED finding */
    const wf_net *net;  /* the content; an AD_HOC uses key, name, description,
                           the validity window and must have no net elements */
    bool validate_only; /* validate, store nothing */
} wf_runtime_deploy_in;

typedef struct wf_runtime_deployed {
    wf_definition_row row;       /* the version stored, or the identical latest one */
    const wf_net *net;           /* its model (version set); NULL with validate_only */
    bool created;                /* a new version was stored */
    wf_validation_error *errors; /* every finding (validate_only), else the warnings */
    size_t n_errors;
} wf_runtime_deployed;

/* DeployDefinition: validates (every finding at once), then in one unit of
 * work returns the latest version of the key when its kind and content
 * hash are the same (created = false), else stores version N+1. Invalid:
 * WF_E_DEFINITION_INVALID, each ERROR finding reported to
 * ctx->ref.violation as (path, "CODE: message"), and out->errors filled. */
/* Items one for-each transition may have (WF_FOREACH_MAX_ITEMS; 1000
 * until set). Process-wide. */
void wf_runtime_set_foreach_max_items(int n);

wf_code wf_runtime_deploy(const wf_runtime_ctx *ctx, const wf_runtime_deploy_in *in,
                          wf_uow_idem *idem, wf_runtime_deployed *out, wf_error *err);

/* GetDefinition: key at version (0 = the latest). */
wf_code wf_runtime_get_definition(const wf_runtime_ctx *ctx, const char *key, int32_t version,
                                  wf_definition_row *row, const wf_net **net, wf_error *err);

/* GetDefinitionStatistics: the live totals of key's instances of version
 * (0: every version; see wf_store_fleet_counts). INVALID_ARGUMENT for a
 * missing key or a negative version, DEFINITION_NOT_FOUND as
 * wf_runtime_get_definition. */
wf_code wf_runtime_definition_statistics(const wf_runtime_ctx *ctx, const char *key,
                                         int32_t version, wf_fleet_counts *out, wf_error *err);

/* GetDefinitionStatistics with `at`: a page of the ids of the instances
 * the totals count that are at element (kind: wf_fleet_kind; 0 or another
 * number, or an empty element, INVALID_ARGUMENT). page_size 0 = 50, at
 * most 500; cursor NULL/"" or a next_cursor of the same query. */
typedef struct wf_runtime_fleet_page_in {
    const char *key;
    int32_t version;
    int kind;
    const char *element;
    int32_t page_size;
    const char *cursor;
} wf_runtime_fleet_page_in;

wf_code wf_runtime_definition_instances(const wf_runtime_ctx *ctx,
                                        const wf_runtime_fleet_page_in *in, char ***ids, size_t *n,
                                        char **next_cursor, wf_error *err);

/* ListDefinitions: key NULL/"": the latest version of every key, by key;
 * else every version of key, newest first. page_size 0 = 50, at most 500.
 * cursor: NULL/"" or a next_cursor of the same query. */
wf_code wf_runtime_list_definitions(const wf_runtime_ctx *ctx, const char *key, int32_t page_size,
                                    const char *cursor, wf_definition_row **rows,
                                    const wf_net ***nets, size_t *n, char **next_cursor,
                                    wf_error *err);

/* ---- jobs ------------------------------------------------------------------------ */

#define WF_RUNTIME_MAX_JOBS_PER_CALL 100
#define WF_RUNTIME_MAX_LEASE_MS ((int64_t)24 * 3600 * 1000)
#define WF_RUNTIME_MAX_WAIT_MS ((int64_t)60 * 1000)

typedef struct wf_runtime_activation {
    const char *job_type; /* required */
    const char *worker;   /* 0-128 printable bytes */
    int32_t max_jobs;     /* 0 = 1, above 100 lowered to 100 */
    int64_t lease_ms;     /* 0 = each transition's lease */
} wf_runtime_activation;

/* Checks an activation request (violations to ctx->ref.violation). */
wf_code wf_runtime_activation_check(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                                    wf_error *err);

/* One activation pass (no waiting): leases what is activatable now. */
wf_code wf_runtime_activate_jobs(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                                 wf_job_row **rows, size_t *n, wf_error *err);

/* Whether key is still a live activation: the current key of a job that
 * is ACTIVATED with a lease running past now (µs). *held tells; when held,
 * *expires_at is the lease's end (µs). A read only (one store lookup by
 * key): job streams use it to give credit back for jobs finished or
 * extended elsewhere. */
wf_code wf_runtime_job_lease_held(const wf_runtime_ctx *ctx, const char *key, int64_t now,
                                  bool *held, int64_t *expires_at, wf_error *err);

/* What one activation pass leased. */
typedef struct wf_runtime_activated {
    const wf_job_row *rows;
    size_t n;
} wf_runtime_activated;

/* wf_runtime_activate_jobs with idempotency (idem may be NULL): the leases
 * and the request record commit in one transaction, so a retry after a
 * crash never leases again what the first call got. A pass that leased
 * nothing records nothing unless last (the long poll's final answer).
 * On a replay (wf_uow_idem_replayed) out is empty and idem holds the
 * first response; *out is what the encoder of idem was given. */
wf_code wf_runtime_activate_recorded(const wf_runtime_ctx *ctx, const wf_runtime_activation *a,
                                     wf_uow_idem *idem, bool last, wf_runtime_activated *out,
                                     wf_error *err);

/* CompleteJob: merges variables_json into the instance and fires the
 * transition. JOB_NOT_FOUND for a key that cannot be a key, JOB_LEASE_LOST
 * for one that is not the job's current activation. */
wf_code wf_runtime_complete_job(const wf_runtime_ctx *ctx, const char *key,
                                const char *variables_json, wf_uow_idem *idem, wf_error *err);

/* CompleteJob with next_step (NULL or "" = none): a worker's "goto" in a
 * STEPS definition; the token goes to that step instead of the step's
 * `next` rules. Before anything changes: WF_E_UNKNOWN_STEP when the
 * instance's pinned definition has no such step, WF_E_INVALID_ARGUMENT
 * for a job of a NET definition or a compensation job (each also
 * reported to ctx->ref.violation as field "next_step"). */
wf_code wf_runtime_complete_job_to(const wf_runtime_ctx *ctx, const char *key,
                                   const char *variables_json, const char *next_step,
                                   wf_uow_idem *idem, wf_error *err);

typedef struct wf_runtime_job_failure {
    const char *key;
    const char *error_message; /* cut to 4096 bytes */
    bool retryable;
    bool has_backoff;   /* backoff_override given */
    int64_t backoff_ms; /* >= 0 */
} wf_runtime_job_failure;

/* FailJob: a retry after the backoff while attempts remain and the failure
 * is retryable, else the job FAILS and the instance becomes FAILED. */
wf_code wf_runtime_fail_job(const wf_runtime_ctx *ctx, const wf_runtime_job_failure *f,
                            wf_uow_idem *idem, wf_error *err);

/* ExtendJobLease: the lease runs lease_ms from now; *expires_at (µs). */
wf_code wf_runtime_extend_job_lease(const wf_runtime_ctx *ctx, const char *key, int64_t lease_ms,
                                    wf_uow_idem *idem, int64_t *expires_at, wf_error *err);

/* UpdateJob: the new priority (0-100) of job job_id of instance_id, a
 * job not finished; JOB_UPDATED when it changes. *out is the job after
 * the change (strings in ctx's arena). */
wf_code wf_runtime_update_job(const wf_runtime_ctx *ctx, const char *instance_id,
                              const char *job_id, int32_t priority, wf_uow_idem *idem,
                              wf_job_row *out, wf_error *err);

/* ---- sagas and incidents (net_runtime_saga.c) --------------------------------------- */

/* RetryInstance: on a FAILED net instance re-arms the failed job with
 * fresh attempts (a failed compensation job resumes COMPENSATING, a failed
 * job RUNNING), INCIDENT_RESOLVED; with no failed job, re-fires the TIME or
 * MSG work item whose firing was refused, with the current variables
 * (INCIDENT_RESOLVED, then the firing; refused again: the firing's error,
 * e.g. NO_ARC_MATCHED, and nothing changes); the timeout of an await step
 * that failed the step is armed again instead (a new timer). A RUNNING or COMPENSATING
 * instance (or an incident with nothing to retry) is returned unchanged;
 * an ended one is INSTANCE_NOT_RUNNING. */
/* The deepest a chain of calls nests below its root (WF_CALL_MAX_DEPTH):
 * a call that would start a child deeper is the caller's incident
 * CALL_DEPTH_EXCEEDED. Set once at start; values below 1 are ignored. */
#define WF_RUNTIME_CALL_MAX_DEPTH_DEFAULT 16
void wf_runtime_set_call_max_depth(int depth);
int wf_runtime_call_max_depth(void);

wf_code wf_runtime_retry_instance(const wf_runtime_ctx *ctx, const char *instance_id,
                                  wf_uow_idem *idem, wf_instance_row *out, wf_error *err);

/* ---- suspension (net_runtime_suspend.c) --------------------------------------------- */

/* SuspendInstance: a RUNNING root instance (net or AD_HOC) becomes
 * SUSPENDED with INSTANCE_SUSPENDED (data: reason); its tree then leases
 * no job, fires no timer, correlates no signal and refuses task
 * operations with WF_E_INSTANCE_SUSPENDED until ResumeInstance. A
 * SUSPENDED root is returned unchanged. WF_E_INSTANCE_NOT_ROOT for a
 * child, WF_E_INSTANCE_NOT_RUNNING for an ended, FAILED or COMPENSATING
 * one, WF_E_INVALID_ARGUMENT for a reason over 1024 bytes. *out is the
 * root. */
wf_code wf_runtime_suspend_instance(const wf_runtime_ctx *ctx, const char *instance_id,
                                    const char *reason, wf_uow_idem *idem, wf_instance_row *out,
                                    wf_error *err);

/* ResumeInstance: a SUSPENDED root becomes RUNNING with INSTANCE_RESUMED
 * (data: reason), in the same unit of work its waits consume the signals
 * buffered for them; the workers of its job types and the scheduler are
 * woken. A root that is not suspended (and has not ended) is returned
 * unchanged; the refusals are those of wf_runtime_suspend_instance for a
 * child or an ended instance. */
wf_code wf_runtime_resume_instance(const wf_runtime_ctx *ctx, const char *instance_id,
                                   const char *reason, wf_uow_idem *idem, wf_instance_row *out,
                                   wf_error *err);

/* StartInstance's unit of work inside tx (spec checked, vars normalised;
 * also a start on signal): the definition (wf_referral_start_definition);
 * a NET one starts here — the root row pinned to the version picked,
 * INSTANCE_STARTED, one token in START and everything the net does until
 * it waits —, an AD_HOC one as a referral root. *out is the new root. */
wf_code wf_runtime_start_in(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec,
                            const char *vars, wf_instance_row *out, wf_error *err);

/* CompleteTask of a task of a USER transition (task_id located in
 * instance_id by the caller, actor and ids checked): the referral task
 * rules, then the completion policy of the work item; when met the
 * remaining tasks are cancelled and the transition fires with the
 * instance's variables (patch merged). One unit of work. */
wf_code wf_runtime_complete_task(const wf_ref_ctx *ctx, const char *task_id,
                                 const char *instance_id, const char *root_id, const char *patch,
                                 wf_uow_idem *idem, wf_ref_completion *out, wf_error *err);

/* CompleteAndEnd of a task of a USER transition (located as for
 * wf_runtime_complete_task): the task is DONE with its output merged, every
 * other pending task of the tree CANCELLED, every other work item of the
 * net instance withdrawn (WORKITEM_WITHDRAWN), the jobs, timers and
 * subscriptions of the tree deleted, its buffered signals discarded, and
 * the root and all its running descendants COMPLETED. One unit of work. */
wf_code wf_runtime_complete_and_end(const wf_ref_ctx *ctx, const char *task_id,
                                    const char *instance_id, const char *root_id, const char *patch,
                                    wf_uow_idem *idem, wf_ref_end *out, wf_error *err);

/* CancelInstance{compensate}: when the (RUNNING or FAILED) net instance has
 * completed compensable transitions, abandons its work and starts
 * compensating (*started; out = the COMPENSATING instance). Otherwise
 * *started = false, nothing is written and the caller cancels plainly
 * (wf_referral_cancel), which also reports invalid requests. */
wf_code wf_runtime_cancel_compensate(const wf_runtime_ctx *ctx, const char *instance_id,
                                     const char *reason, wf_uow_idem *idem, wf_instance_row *out,
                                     bool *started, wf_error *err);

/* CancelInstance of a live call child (a net instance whose caller's CALL
 * work item waits for it): its subtree CANCELLED in one unit of work on
 * the root, which gives the caller its incident CALL_CHILD_CANCELLED
 * (*done; out = the child). Otherwise *done = false, nothing is written
 * and the caller cancels plainly (wf_referral_cancel). */
wf_code wf_runtime_cancel_call_child(const wf_runtime_ctx *ctx, const char *instance_id,
                                     const char *reason, wf_uow_idem *idem, wf_instance_row *out,
                                     bool *done, wf_error *err);

/* ---- ModifyInstance (net_runtime_modify.c) ------------------------------------------ */

/* Tokens of one place (GetInstance, ModifyInstance). */
typedef struct wf_runtime_marking {
    const char *place_id;
    int32_t count;
} wf_runtime_marking;

/* What ModifyInstance is asked. ops are applied in order (net.h). */
typedef struct wf_runtime_modify_in {
    const char *instance_id;
    const wf_net_mod *ops;
    size_t n_ops;               /* 1 .. WF_NET_MAX_MODIFY_OPS */
    const char *variables_json; /* NULL or "" = none; else a JSON object merged first */
    bool allow_empty;           /* a change that leaves nothing cancels the instance */
    const char *reason;         /* 0 .. 1024 bytes, recorded in INSTANCE_MODIFIED */
} wf_runtime_modify_in;

/* A token of the resulting marking. */
typedef struct wf_runtime_token {
    const char *id;
    const char *place_id;
} wf_runtime_token;

/* What ModifyInstance did. */
typedef struct wf_runtime_modified {
    wf_instance_row instance;
    wf_runtime_marking *marking; /* places with tokens, in net order */
    size_t n_marking;
    wf_runtime_token *tokens; /* oldest first */
    size_t n_tokens;
} wf_runtime_modified;

/* ModifyInstance: in one unit of work the variables are merged, the
 * operations change the marking and the net settles as after a firing
 * (wf_net_modify): work items that lost a token are withdrawn
 * (WORKITEM_WITHDRAWN, their tasks CANCELLED, jobs, timers and
 * subscriptions deleted), new enablings create their tasks, jobs, timers
 * and subscriptions, silent AUTO transitions fire, and a token in END
 * completes the instance. INSTANCE_MODIFIED (operations with the tokens
 * taken and made, reason, actor) comes first. A FAILED instance may be
 * modified: when no failed job and no refused TIME or MSG item is left,
 * it runs again (INCIDENT_RESOLVED). With allow_empty, a change that
 * leaves no token and nothing enabled cancels the instance
 * (INSTANCE_CANCELLED). Refusals, each before anything changes:
 * INVALID_ARGUMENT (a malformed request, each reported to
 * ctx->ref.violation), INVALID_JSON, INSTANCE_NOT_FOUND,
 * NOT_A_NET_INSTANCE, INSTANCE_NOT_RUNNING, UNKNOWN_PLACE,
 * TOKENS_NOT_HELD, INSTANCE_WOULD_BE_EMPTY, MODIFICATION_DEADLOCKS,
 * VARIABLES_TOO_LARGE and a silent firing's error (NO_ARC_MATCHED). */
wf_code wf_runtime_modify_instance(const wf_runtime_ctx *ctx, const wf_runtime_modify_in *in,
                                   wf_uow_idem *idem, wf_runtime_modified *out, wf_error *err);

/* ---- MigrateInstance (net_runtime_migrate.c) ---------------------------------------- */

/* What MigrateInstance is asked: the one entry of every caller (the
 * RPC, and any caller migrating instances one by one). The actor is
 * ctx->ref.actor and the request id travels in the wf_uow_idem, as for
 * every other mutation. */
typedef struct wf_runtime_migrate_in {
    const char *instance_id;         /* the root instance */
    int32_t target_version;          /* a version of its definition key, >= 1 */
    const wf_net_place_map *mapping; /* source place -> target place (net.h) */
    size_t n_mapping;                /* 0 .. WF_NET_MAX_PLACE_MAPPINGS */
    bool dry_run;                    /* compute the plan, change nothing */
} wf_runtime_migrate_in;

/* One token of the plan: its place before and after. */
typedef struct wf_runtime_token_move {
    const char *token_id;
    const char *from_place;
    const char *to_place;
} wf_runtime_token_move;

/* One work item of the plan. work_item_id is empty for an item the
 * migration would create in a dry run (its id is chosen when it runs). */
typedef struct wf_runtime_plan_item {
    const char *work_item_id;
    const char *transition_id;
    wf_trigger trigger;
} wf_runtime_plan_item;

/* The plan of a migration, its problems, and the instance. */
typedef struct wf_runtime_migration {
    wf_instance_row instance; /* after the migration; as it is for a dry run or a no-op */
    int32_t source_version;
    int32_t target_version;
    bool applied; /* the migration was written (not a dry run, a no-op or refused) */
    wf_runtime_token_move *tokens; /* every token, oldest first */
    size_t n_tokens;
    wf_runtime_plan_item *kept; /* live items that keep their task, job, timer or wait */
    size_t n_kept;
    wf_runtime_plan_item *withdrawn; /* live items the target no longer enables */
    size_t n_withdrawn;
    wf_runtime_plan_item *created; /* items the target enables (after any silent firing) */
    size_t n_created;
    const char **fired; /* silent transitions fired while settling, in order */
    size_t n_fired;
    bool completes;                /* the instance ends COMPLETED */
    wf_validation_error *problems; /* every problem (net.h, wf_net_migrate); none = valid */
    size_t n_problems;
} wf_runtime_migration;

/* MigrateInstance: moves a RUNNING root net instance (NET or STEPS, through
 * the compiled net) to another version of its definition in one unit of
 * work. Each token keeps its id and goes to its mapped place (mapping, or
 * the place of the same id); a live work item whose transition exists in
 * the target with the same trigger, job type and signal, and is still
 * enabled by its tokens, is kept with its task (id, claim, assignee), job,
 * timer or subscription; the net then settles as after a firing: items no
 * longer enabled are withdrawn, new enablings created, silent AUTO
 * transitions fired, a token in END completes the instance.
 * INSTANCE_MIGRATED (versions, mapping, token moves, kept items, actor)
 * comes before the events of the change. Every problem is found before
 * anything changes and listed in out->problems: a dry run answers WF_OK
 * with them and the plan, a real run is refused with
 * WF_E_MIGRATION_INVALID, each problem also reported to
 * ctx->ref.violation (field, code, message). The version the instance
 * already runs is a no-op (WF_OK, nothing written, applied false). Other
 * refusals: INVALID_ARGUMENT (a malformed request), INSTANCE_NOT_FOUND,
 * INSTANCE_NOT_ROOT, NOT_A_NET_INSTANCE, INSTANCE_NOT_RUNNING (ended,
 * FAILED, COMPENSATING), INSTANCE_SUSPENDED, DEFINITION_NOT_FOUND (no
 * such version). A dry run records no request id (idem is ignored). out
 * lives in ctx->ref.arena. */
wf_code wf_runtime_migrate_instance(const wf_runtime_ctx *ctx, const wf_runtime_migrate_in *in,
                                    wf_uow_idem *idem, wf_runtime_migration *out, wf_error *err);

/* The checks of in's target_version and mapping that need no instance
 * (INVALID_ARGUMENT naming target_version or place_mapping[i]), as
 * wf_runtime_migrate_instance makes them first; a batch operation makes them
 * once at its start. */
wf_code wf_runtime_migrate_check_args(const wf_ref_ctx *r, const wf_runtime_migrate_in *in,
                                      wf_error *err);

/* ---- GetInstance ------------------------------------------------------------------ */

typedef struct wf_runtime_awaiting {
    wf_subscription_row sub;
    wf_correlation correlation;
    int64_t times_out_at; /* due time of a competing TIME transition, 0 = none */
} wf_runtime_awaiting;

/* Progress of an enabled for-each transition (Transition.for_each). */
typedef struct wf_runtime_foreach {
    const char *transition_id;
    const char *work_item_id;
    int32_t total, completed;
    wf_join_mode mode; /* ALL, ANY or QUORUM */
    int32_t quorum;    /* QUORUM only */
    int32_t required;  /* items that must complete */
    bool sequential;
} wf_runtime_foreach;

/* A child a CALL transition of the instance started. */
typedef struct wf_runtime_call {
    const wf_instance_row *child;
    const char *transition_id;
} wf_runtime_call;

/* What a NET instance is waiting for (empty for an AD_HOC instance). */
typedef struct wf_runtime_view {
    bool is_net;
    wf_runtime_marking *marking; /* places with tokens, in net order */
    size_t n_marking;
    wf_job_row *jobs;
    size_t n_jobs;
    wf_timer_row *timers;
    size_t n_timers;
    wf_runtime_awaiting *awaiting;
    size_t n_awaiting;
    wf_ref_join *joins; /* USER work items with several tasks */
    size_t n_joins;
    wf_runtime_foreach *for_each; /* enabled for-each work items */
    size_t n_for_each;
    const wf_step **current_steps; /* STEPS: the steps it is in, in list order */
    size_t n_current_steps;
    const char **enabled; /* transitions with an enabled work item, in net order */
    size_t n_enabled;
    const wf_net *net;      /* the instance's net (its definition version) */
    wf_runtime_call *calls; /* children of its CALL transitions, in start order */
    size_t n_calls;
} wf_runtime_view;

wf_code wf_runtime_instance_view(const wf_ref_ctx *ctx, const char *instance_id,
                                 wf_runtime_view *out, wf_error *err);

/* ---- ListWorkItems (net_runtime_history.c) -------------------------------------------- */

/* A work item's state as clients see it. */
typedef enum wf_runtime_item_state {
    WF_RUNTIME_ITEM_ENABLED = 1,
    WF_RUNTIME_ITEM_FINISHED = 2,
    WF_RUNTIME_ITEM_CANCELLED = 3,
} wf_runtime_item_state;

typedef struct wf_runtime_list_items_in {
    const char *instance_id;
    const int *states; /* wf_runtime_item_state values; none = every state */
    size_t n_states;
    int32_t page_size; /* 0 = 50, at most 500 */
    const char *cursor;
} wf_runtime_list_items_in;

typedef struct wf_runtime_item {
    wf_work_item_row row;
    wf_runtime_item_state state;
    int64_t finished_at;  /* FINISHED: when it fired; else 0 */
    int64_t cancelled_at; /* CANCELLED: when it was withdrawn; else 0 */
    const char *transition_name;
} wf_runtime_item;

/* The work items of an instance, open and ended, in (enabled_at, id)
 * order. A live item of an instance that has ended (COMPLETED,
 * CANCELLED, COMPENSATED) is CANCELLED at the instance's ended_at: it
 * can never fire. WF_E_INSTANCE_NOT_FOUND for an unknown instance (or one
 * of another tenant); WF_E_INVALID_ARGUMENT for a bad state, page size or
 * cursor (reported to ctx->violation). */
wf_code wf_runtime_list_work_items(const wf_ref_ctx *ctx, const wf_runtime_list_items_in *q,
                                   wf_runtime_item **items, size_t *n, char **next_cursor,
                                   wf_error *err);

/* ---- incidents ---------------------------------------------------------------------- */

typedef struct wf_runtime_incident_query {
    const char *definition_key; /* NULL/"" = any */
    const char *code;           /* NULL/"" = any; else a known code */
    int32_t page_size;          /* 0 = 50, at most 500 */
    const char *cursor;
} wf_runtime_incident_query;

/* One open incident (the strings point into the call's arena). */
typedef struct wf_runtime_incident {
    const char *instance_id, *root_id, *definition_key;
    int32_t definition_version;
    const char *transition_id; /* NULL when no transition is to blame */
    const char *code, *message;
    int64_t since; /* microseconds */
    int32_t attempts;
} wf_runtime_incident;

/* Whether code is one of the incident codes (Incident.code). */
bool wf_runtime_incident_code_known(const char *code);

/* The open incidents of the tenant (FAILED instances, roots and children),
 * longest open first. WF_E_INVALID_ARGUMENT for an unknown code, a
 * negative page size or a malformed cursor (reported to ctx->violation). */
wf_code wf_runtime_list_incidents(const wf_ref_ctx *ctx, const wf_runtime_incident_query *q,
                                  wf_runtime_incident **out, size_t *n, char **next_cursor,
                                  wf_error *err);

/* ---- timers ------------------------------------------------------------------------- */

/* Fires the due timer row->id of tenant row->tenant if it still exists
 * (one unit of work on row->root_id; a withdrawn or already-fired timer
 * is a no-op returning WF_OK with *fired = false). row is a row returned by
 * wf_store_claim_due_timers; the call uses its own context (tenant =
 * row->tenant, a private arena, deadline_ms: 0 = none). Retryable failures
 * (WF_E_CONFLICT after the runner's retries, WF_E_STORE_UNAVAILABLE) leave
 * the timer in place: its claim expires and it is claimed again. */
wf_code wf_runtime_fire_timer(const wf_runtime_host *rt, const wf_timer_row *row,
                              int64_t deadline_ms, bool *fired, wf_error *err);

/* Fires a batch of claimed timers (rows as wf_store_claim_due_timers
 * returns them: any tenants and roots, any order). They are grouped by
 * tenant and root and fired in batch units of work (wf_store_begin_batch)
 * of up to 50 roots each, locking the roots in ascending id order, each
 * root's due timers in (due_at, id) order, one commit per batch. Each
 * timer fires as wf_runtime_fire_timer would: only if it is still in its
 * aggregate with its work item still enabled (a withdrawn timer, one whose
 * token was consumed meanwhile, or one fired elsewhere gives *fired =
 * false). A root whose firing fails is taken out of its batch (which runs
 * again without it) and fired on its own, so one root's failure never
 * costs the others their firings. Per timer i: fired[i], codes[i] (WF_OK
 * or the failure, which leaves the timer for its claim to run out, as
 * wf_runtime_fire_timer) and errs[i]. Wake-ups follow each commit. */
void wf_runtime_fire_timers(const wf_runtime_host *rt, const wf_timer_row *rows, size_t n,
                            int64_t deadline_ms, bool *fired, wf_code *codes, wf_error *errs);

#endif /* WF_NET_RUNTIME_H */
