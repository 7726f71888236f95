/*
 * store: the storage port of the engine (docs/architecture.md).
 *
 * One contract, two implementations: the in-memory store (development and
 * tests) and the connection-pooled Postgres store (production). Both must
 * behave identically; tests/store/test_store_contract.c holds them to it.
 *
 * Shape. Every mutation is one unit of work on ONE root instance aggregate:
 *
 *     wf_store_begin(st, &ctx, &tx, err);        open a transaction
 *     wf_tx_lock_root(tx, id, &agg, err);         lock + load the aggregate
 *     ... the engine computes rows and events ...
 *     wf_tx_apply(tx, &changes, err);             write them
 *     wf_tx_commit(tx, err);                      (or wf_tx_rollback(tx))
 *
 * Everything else (inbox, job activation, due timers, signal correlation,
 * event reads, listings) is a cross-instance query outside any aggregate.
 *
 * Rules every caller can rely on:
 *   - Every call takes a wf_store_ctx: the tenant (every row is scoped by it;
 *     rows of another tenant are invisible), the call's deadline and the
 *     arena that receives returned rows. Rows and strings returned by the
 *     store live in ctx->arena and are never freed one by one.
 *   - Rows passed IN are borrowed for the duration of the call and copied.
 *     Their tenant field is ignored: writes always use ctx->tenant.
 *   - Strings are NUL-terminated; NULL and "" are distinct and preserved.
 *     Times are int64 microseconds since the Unix epoch, 0 = unset.
 *     JSON is kept as text and never parsed here.
 *   - Out-parameters are written only on WF_OK.
 *   - A deadline already past gives WF_E_DEADLINE_EXCEEDED before any work.
 *     An unreachable database or an exhausted pool gives
 *     WF_E_STORE_UNAVAILABLE quickly; concurrent-update failures give
 *     WF_E_CONFLICT. Both are retryable by the caller.
 *   - After any failed wf_tx_* call the unit of work is poisoned (Postgres
 *     has aborted it): only wf_tx_rollback is accepted; commit gives
 *     WF_E_INTERNAL and rolls back.
 *   - Inside a unit of work use only wf_tx_* calls: with Postgres a
 *     wf_store_* call would borrow a second connection (and could wait for
 *     the pool); with the memory store it would see uncommitted writes.
 *
 * No SQL, libpq, protobuf or grpc type appears in this header.
 */
#ifndef WF_STORE_H
#define WF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wf_arena.h"
#include "wf_error.h"

typedef struct wf_store wf_store;
typedef struct wf_tx wf_tx;

/* Per-call context, borrowed for the duration of the call (for a unit of
 * work: until commit or rollback). */
typedef struct wf_store_ctx {
    const char *tenant;  /* required for every tenant-scoped call */
    int64_t deadline_ms; /* monotonic ms (wf_mono_ms()); 0 = none */
    wf_arena *arena;     /* receives every returned row and string */
} wf_store_ctx;

/* ---- enums: their numeric values are persisted; never renumber ---------- */

/* WF_DEF_STEPS: a step list stored with the net compiled from it; it runs
 * as a net. */
typedef enum wf_def_kind { WF_DEF_AD_HOC = 1, WF_DEF_NET = 2, WF_DEF_STEPS = 3 } wf_def_kind;

/* The kinds whose instances run a net (NET, and STEPS compiled to one). */
#define WF_DEF_RUNS_NET(kind) ((kind) == WF_DEF_NET || (kind) == WF_DEF_STEPS)

typedef enum wf_instance_status {
    WF_INSTANCE_RUNNING = 1,
    WF_INSTANCE_COMPLETED = 2,
    WF_INSTANCE_CANCELLED = 3,
    WF_INSTANCE_FAILED = 4,
    WF_INSTANCE_COMPENSATING = 5,
    WF_INSTANCE_COMPENSATED = 6,
    /* SuspendInstance: a root only, its tree waits for ResumeInstance (no
     * job is leased, no timer claimed; see wf_store_activate_jobs and
     * wf_store_claim_timers). Resumed, it is RUNNING again. */
    WF_INSTANCE_SUSPENDED = 7,
} wf_instance_status;

/* True for the statuses an instance never leaves: COMPLETED, CANCELLED and
 * COMPENSATED (FAILED may be retried, COMPENSATING is still running). */
bool wf_instance_ended(wf_instance_status s);

typedef enum wf_join_mode {
    WF_JOIN_NONE = 0,
    WF_JOIN_ALL = 1,
    WF_JOIN_ANY = 2,
    WF_JOIN_QUORUM = 3,
} wf_join_mode;

typedef enum wf_assignee_kind { WF_ASSIGNEE_USER = 1, WF_ASSIGNEE_GROUP = 2 } wf_assignee_kind;

typedef enum wf_task_status {
    WF_TASK_OPEN = 1,
    WF_TASK_CLAIMED = 2,
    WF_TASK_DONE = 3,
    WF_TASK_CANCELLED = 4,
} wf_task_status;

/* Where a task stands in a delegation (DelegateTask). */
typedef enum wf_delegation {
    WF_DELEGATION_NONE = 0,     /* never delegated */
    WF_DELEGATION_PENDING = 1,  /* held by the delegate until resolved */
    WF_DELEGATION_RESOLVED = 2, /* back with its owner */
} wf_delegation;

/* The priority of a task nobody chose one for (Camunda's default). */
#define WF_TASK_PRIORITY_DEFAULT 50
#define WF_TASK_PRIORITY_MAX 100

typedef enum wf_trigger {
    WF_TRIGGER_USER = 1,
    WF_TRIGGER_AUTO = 2,
    WF_TRIGGER_TIME = 3,
    WF_TRIGGER_MSG = 4,
    WF_TRIGGER_CALL = 5, /* an instance of another definition, in the caller's tree */
} wf_trigger;

/* A work item's life. ENABLED and FIRED rows are live: the aggregate of
 * wf_tx_lock_root holds them. WITHDRAWN and FINISHED rows are history
 * only: kept for wf_store_list_work_items, never loaded with the
 * aggregate. */
typedef enum wf_work_item_state {
    WF_WORK_ITEM_ENABLED = 1,
    WF_WORK_ITEM_FIRED = 2,     /* fired; kept live for the saga (compensable) */
    WF_WORK_ITEM_WITHDRAWN = 3, /* withdrawn (cancelled) */
    WF_WORK_ITEM_FINISHED = 4,  /* fired (or compensated), history only */
} wf_work_item_state;

typedef enum wf_job_state {
    WF_JOB_ACTIVATABLE = 1, /* waiting for a worker once activatable_at <= now */
    WF_JOB_ACTIVATED = 2,   /* leased to worker until lease_expires_at */
    WF_JOB_FAILED = 3,      /* out of retries: an incident; never activated */
} wf_job_state;

typedef enum wf_signal_outcome {
    WF_SIGNAL_CORRELATED = 1,
    WF_SIGNAL_BUFFERED = 2,
    WF_SIGNAL_DUPLICATE = 3,
    WF_SIGNAL_DROPPED = 4,
    WF_SIGNAL_STARTED = 5, /* started an instance and waits buffered for it */
    WF_SIGNAL_QUEUED = 6,  /* by aggregate, behind earlier deliveries to it */
} wf_signal_outcome;

/* A delivery of a fanned-out signal to one instance (signal_deliveries). */
typedef enum wf_delivery_state {
    WF_DELIVERY_PENDING = 0,
    WF_DELIVERY_DELIVERED = 1, /* fired the instance's wait */
    WF_DELIVERY_SKIPPED = 2,   /* the instance no longer waited */
} wf_delivery_state;

/* What a batch operation does to each instance it matches (the engine's
 * entry functions of CancelInstance, RetryInstance, SuspendInstance and
 * ResumeInstance). 5 is kept for the next action. */
typedef enum wf_batch_action {
    WF_BATCH_CANCEL = 1,
    WF_BATCH_RETRY = 2,
    WF_BATCH_SUSPEND = 3,
    WF_BATCH_RESUME = 4,
    WF_BATCH_MIGRATE = 5,
} wf_batch_action;

/* A batch operation's life: RUNNING until its walk is done (COMPLETED)
 * or CancelBatchOperation stops it (CANCELLED); both are final. */
typedef enum wf_batch_state {
    WF_BATCH_RUNNING = 1,
    WF_BATCH_COMPLETED = 2,
    WF_BATCH_CANCELLED = 3,
} wf_batch_state;

/* A schedule's state: ACTIVE schedules fire; PAUSED ones (PauseSchedule,
 * or too many failed instances in a row) do not, and neither does one
 * whose spec has no fire time left (next_fire_at 0). */
typedef enum wf_schedule_state {
    WF_SCHEDULE_ACTIVE = 1,
    WF_SCHEDULE_PAUSED = 2,
} wf_schedule_state;

/* What a schedule does at a fire time while the instance it started
 * last still runs. */
typedef enum wf_schedule_overlap {
    WF_OVERLAP_SKIP = 1,         /* record SKIPPED, start nothing (the default) */
    WF_OVERLAP_BUFFER_ONE = 2,   /* keep one fire until the running one ends */
    WF_OVERLAP_ALLOW_ALL = 3,    /* start anyway */
    WF_OVERLAP_CANCEL_OTHER = 4, /* cancel the running one, then start */
} wf_schedule_overlap;

/* What became of one fire time of a schedule (its run row). */
typedef enum wf_schedule_outcome {
    WF_RUN_STARTED = 1, /* an instance started (instance_id) */
    WF_RUN_SKIPPED = 2, /* the overlap policy started nothing */
    WF_RUN_MISSED = 3,  /* older than the catch-up window when it was seen */
    WF_RUN_FAILED = 4,  /* the start was refused (detail says why) */
    WF_RUN_BUFFERED = 5,
} wf_schedule_outcome;

/* ---- rows -------------------------------------------------------------- */

/* A deployed definition version; (tenant, key, version) is unique. */
typedef struct wf_definition_row {
    char *tenant;
    char *key;
    int32_t version; /* assigned by wf_tx_put_definition */
    wf_def_kind kind;
    char *name;
    unsigned char *content; /* opaque blob; the engine decides its encoding */
    size_t content_len;
    char *content_hash; /* lets the engine detect "same content, same version" */
    int64_t valid_from;
    int64_t valid_until;
    int64_t created_at;
    char *created_by;
} wf_definition_row;

typedef struct wf_instance_row {
    char *id;
    char *tenant;
    char *definition_key;
    int32_t definition_version;
    char *parent_id; /* NULL for a root */
    char *root_id;   /* == id for a root */
    wf_instance_status status;
    char *variables_json;
    char *aggregate_type; /* correlation key, may be NULL */
    char *aggregate_id;
    char *started_by;
    char *title;
    char *last_error;
    /* The open incident, set while status is FAILED (the engine clears
     * code and time when the instance leaves FAILED; transition and
     * attempts stay as history). code: a stable reason (wf_incident_code). */
    char *incident_code;
    char *incident_transition_id;
    int64_t incident_at;
    int32_t incident_attempts;
    int32_t retries; /* incidents RetryInstance resolved */
    /* referral join state (AD_HOC children) */
    wf_join_mode join_mode;
    int32_t join_quorum;
    unsigned char *on_all_completed; /* opaque: the AssignTo to run on join */
    size_t on_all_completed_len;
    bool join_fired; /* the join ran; it never runs twice */
    int64_t created_at;
    int64_t updated_at;
    int64_t ended_at;
    /* Row version. On write the store requires the stored version to equal
     * this value (0 = the row must not exist yet) and stores version + 1;
     * a mismatch is WF_E_CONFLICT. Rows loaded by wf_tx_lock_root carry
     * the current version. */
    int64_t version;
} wf_instance_row;

typedef struct wf_task_row {
    char *id;
    char *tenant;
    char *instance_id;
    char *root_id;
    char *definition_key;
    char *transition_id; /* NULL for an AD_HOC referral task */
    char *work_item_id;
    char *title;
    wf_assignee_kind assignee_kind;
    char *assignee_id;
    char *assigned_by;
    wf_task_status status;
    char *claimed_by;
    char *completed_by;
    int64_t created_at;
    int64_t due_at;
    int64_t ended_at;
    int32_t priority;     /* 0-100; WF_TASK_PRIORITY_DEFAULT unless chosen */
    int64_t follow_up_at; /* 0 = none */
    char *owner;          /* who delegated it; NULL when never delegated */
    wf_delegation delegation;
    bool due_fixed; /* due_at was chosen (AssignTo, UpdateTask, a
                       due_expression): a competing timer does not
                       replace it */
} wf_task_row;

typedef struct wf_token_row {
    char *id;
    char *tenant;
    char *root_id;
    char *instance_id;
    char *place_id;
    int64_t created_seq; /* per-aggregate order: tokens are taken oldest first */
} wf_token_row;

typedef struct wf_work_item_row {
    char *id;
    char *tenant;
    char *root_id;
    char *instance_id;
    char *transition_id;
    wf_trigger trigger;
    char *token_ids; /* comma-separated ids of the bound tokens */
    wf_work_item_state state;
    int64_t enabled_at;
    int64_t finished_at;   /* fired or withdrawn; 0 while ENABLED */
    int64_t deadline;      /* its timer's due_at, or a competing timer's; 0 = none */
    int32_t assignee_kind; /* USER items: the net's assignee kind (0 = none) */
    char *assignee_id;     /* USER items: the assignee ids, comma-separated */
    char *job_type;        /* AUTO items with a job */
    char *signal_name;     /* MSG items */
    char *finished_by;     /* the completing actor or worker; NULL otherwise */
    char *foreach_json;    /* AUTO items of a for-each transition: the items'
                              state (engine/runtime/net_runtime_foreach.c);
                              NULL otherwise */
} wf_work_item_row;

typedef struct wf_job_row {
    char *id;
    char *key; /* changes at every activation; NULL until first activated */
    char *tenant;
    char *root_id;
    char *instance_id;
    char *work_item_id;
    char *transition_id;
    char *job_type;
    wf_job_state state;
    char *worker;
    int32_t attempt; /* owned by the engine; activation never changes it */
    int32_t max_attempts;
    int64_t activatable_at;
    int64_t lease_expires_at;
    int64_t initial_backoff_ms;
    double backoff_multiplier;
    int64_t max_backoff_ms;
    char *variables_json;
    char *idempotency_key; /* stable across attempts */
    bool compensation;
    char *last_error;
    int64_t created_at;
    int32_t priority;   /* 0-100, higher first (WF_JOB_PRIORITY_DEFAULT when created) */
    int64_t rank;       /* activation order, lowest first: set by wf_tx_apply from activatable_at
                           and priority (wf_store_job_rank); the engine's value is ignored */
    char *fairness_key; /* "" = no key; activation shares each pass between keys */
} wf_job_row;

/* A fairness key is at most this many bytes. */
#define WF_JOB_FAIRNESS_KEY_MAX 128

/* A job's priority: 0 to 100, 50 unless its transition's
 * job_priority_expression or UpdateJob says otherwise. */
#define WF_JOB_PRIORITY_DEFAULT 50
#define WF_JOB_PRIORITY_MAX 100
/* The aging step's default and range, in µs (WF_JOB_PRIORITY_AGING). */
#define WF_JOB_AGING_DEFAULT_US 1000000LL
#define WF_JOB_AGING_MIN_US 1000LL
#define WF_JOB_AGING_MAX_US 3600000000LL

/* The activation rank of a job: activatable_at less priority times the
 * aging step (µs). Jobs are activated lowest rank first, ties by id, so
 * a higher priority goes first among jobs activatable at the same time,
 * and a job of priority p activatable since k steps ranks with one of
 * priority p + k activatable now: no job waits more than
 * (100 - p) steps behind jobs that became activatable after it. */
int64_t wf_store_job_rank(int64_t activatable_at, int32_t priority, int64_t aging_us);

typedef struct wf_timer_row {
    char *id;
    char *tenant;
    char *root_id;
    char *instance_id;
    char *work_item_id;
    char *transition_id;
    int64_t due_at;
    int64_t created_at;
    int64_t claimed_until; /* set by wf_store_claim_due_timers; 0 = unclaimed */
} wf_timer_row;

typedef struct wf_subscription_row {
    char *id;
    char *tenant;
    char *root_id;
    char *instance_id;
    char *work_item_id;
    char *transition_id;
    char *signal_name;
    char *aggregate_type; /* copied from the instance for correlation */
    char *aggregate_id;
    int64_t created_at;
} wf_subscription_row;

/* One signal delivery (the workflow_signals log). */
typedef struct wf_signal_row {
    char *id;
    char *tenant;
    char *signal_id; /* client dedupe key; unique per tenant when non-NULL, among
                        the rows whose outcome is not WF_SIGNAL_DUPLICATE */
    char *name;
    char *instance_id; /* target instance, or NULL when sent to an aggregate */
    char *aggregate_type;
    char *aggregate_id;
    char *payload_json;
    wf_signal_outcome outcome;
    bool buffered; /* waiting in the buffer: not consumed, not discarded */
    int64_t received_at;
    int64_t expires_at;
    int64_t consumed_at;
    char *consumed_by_instance;
    char *transition_id; /* the MSG transition that consumed it */
    bool discarded;      /* expired or withdrawn from the buffer */
    /* wf_store_list_signals by instance only: the instance's delivery of
     * a signal fanned out to its aggregate (a signal_deliveries row);
     * false, 0 everywhere else. */
    bool delivery;
    wf_delivery_state delivery_state;
    int64_t delivered_at; /* when it ran (DELIVERED or SKIPPED); 0 while PENDING */
} wf_signal_row;

/* One delivery of a signal sent to an aggregate and fanned out to the
 * instances that waited for it (migrations/0016_signal_deliveries.sql):
 * written PENDING with the signal's log row, consumed (DELIVERED or
 * SKIPPED) by the unit of work that fires the instance. */
typedef struct wf_delivery_row {
    char *tenant;
    char *signal_log_id; /* wf_signal_row.id */
    char *instance_id;
    char *root_id;
    char *aggregate_type;
    char *aggregate_id;
    int64_t seq; /* 1, 2, ... in the order the instances began to wait */
    wf_delivery_state state;
    int64_t created_at;
    int64_t done_at;
    int64_t claimed_until; /* wf_store_claim_deliveries; 0 = unclaimed */
} wf_delivery_row;

/* One domain event. The sequence is assigned by the store (ignored on
 * write); see wf_store_read_events for what it guarantees. */
typedef struct wf_event_row {
    int64_t sequence; /* 1, 2, 3, ... as events become visible; never reused */
    char *tenant;
    char *root_id;
    char *instance_id;
    char *type; /* e.g. "TASK_CREATED" */
    char *actor;
    char *data_json;
    int64_t time;
} wf_event_row;

/* AIP-155 request record, written in the same transaction as its effect. */
typedef struct wf_idempotency_row {
    char *tenant;
    char *method;
    char *request_id;
    char *request_hash;
    unsigned char *response;
    size_t response_len;
    int64_t created_at;
} wf_idempotency_row;

/* A batch operation (migrations/0014_batch_operations.sql). The store
 * keeps filter_json, errors_json and cursor as opaque text; the engine
 * owns their meaning (engine/batch.h). */
typedef struct wf_batch_row {
    char *id;
    char *tenant;
    wf_batch_action action;
    wf_batch_state state;
    char *filter_json;   /* the matching rule, as the engine wrote it */
    char *reason;        /* passed to each action; may be NULL */
    char *created_by;    /* the actor that started it; each action runs as them */
    int64_t total;       /* instances matched when it started */
    int64_t done;        /* actions applied */
    int64_t failed;      /* actions refused (see errors_json) */
    char *errors_json;   /* the first refusals, a JSON array */
    char *cursor;        /* where the walk stands; NULL = at the start */
    char *lease_owner;   /* the scheduler holding it; NULL = none */
    int64_t lease_until; /* the claim runs out then; a claim needs <= now */
    int64_t created_at;  /* also the end of the matching set (engine/batch.h) */
    int64_t updated_at;
    int64_t ended_at; /* 0 while RUNNING */
    /* Row version, as wf_instance_row.version: wf_store_update_batch
     * requires the stored one and stores version + 1; claims bump it
     * too. */
    int64_t version;
    char *args_json; /* the action's arguments (engine-owned JSON); may be NULL */
} wf_batch_row;

/* A schedule (migrations/0017_schedules.sql): starts instances of a
 * definition on a calendar (engine/schedules.h). spec_json is the
 * engine's; the store reads state, due_at and the lease only. */
typedef struct wf_schedule_row {
    char *id; /* chosen by the caller, unique per tenant */
    char *tenant;
    char *definition_key;
    int32_t def_version; /* 0 = the latest at each fire */
    char *variables_json;
    char *aggregate_type; /* both or neither */
    char *aggregate_id;
    char *spec_json;
    int32_t overlap; /* a wf_schedule_overlap */
    int64_t catchup_window_ms;
    int32_t pause_after_failures; /* 0 = never */
    int32_t state;                /* a wf_schedule_state */
    char *pause_reason;
    char *note;
    int64_t next_fire_at; /* the next nominal fire time; 0 = none left */
    int64_t due_at;       /* when it fires: next_fire_at + its jitter; 0 = never */
    char *last_instance_id;
    int32_t failures; /* failed starts in a row */
    char *created_by;
    char *lease_owner;
    int64_t lease_until;
    int64_t created_at;
    int64_t updated_at;
    /* Row version, as wf_batch_row.version. */
    int64_t version;
    /* BUFFER_ONE: the nominal time of the fire waiting for the last
     * instance to end (its run is BUFFERED); 0 = none. */
    int64_t buffered_at;
} wf_schedule_row;

/* One fire time of a schedule and what became of it; (tenant,
 * schedule_id, nominal_at) is unique, so each fire time is recorded, and
 * starts an instance, at most once. */
typedef struct wf_schedule_run_row {
    char *schedule_id;
    char *tenant;
    int64_t nominal_at;          /* the fire time (TriggerSchedule: when it was asked) */
    int64_t actual_at;           /* when it was handled */
    int32_t outcome;             /* a wf_schedule_outcome */
    int32_t manual;              /* 1: TriggerSchedule */
    char *instance_id;           /* STARTED */
    char *detail;                /* FAILED: the reason and message */
    int64_t buffered_at;         /* a fire that waited (BUFFER_ONE): when it was buffered */
    char *cancelled_instance_id; /* CANCEL_OTHER: the instance cancelled for it */
    int32_t backfill;            /* 1: BackfillSchedule */
} wf_schedule_run_row;

/* A resource of a tenant (migrations/0024_resources.sql): a limit shared
 * by the definitions of the tenant (engine/resources.h). */
typedef struct wf_resource_row {
    char *name; /* chosen by the caller, unique per tenant */
    char *tenant;
    int32_t capacity;       /* units held at once at most; 0 = no such limit */
    int32_t per_key;        /* 1: the limits apply per value of a key */
    int32_t rate_limit;     /* acquisitions per period at most; 0 = no rate */
    int64_t rate_period_ms; /* the rate's period; 0 = no rate */
    int32_t strategy;       /* a wf_resource_strategy */
    char *created_by;
    int64_t created_at;
    int64_t updated_at;
    /* Row version, as wf_batch_row.version: 1 when inserted. */
    int64_t version;
} wf_resource_row;

/* What a work item that needs a full resource does. */
typedef enum wf_resource_strategy {
    WF_RESOURCE_QUEUE = 1,         /* waits for a unit */
    WF_RESOURCE_CANCEL_NEWEST = 2, /* fails with an incident */
} wf_resource_strategy;

/* A root instance with all its descendants and their live rows, as loaded
 * under the root's lock. Orders are fixed (both stores agree):
 * instances by (created_at, id) with the root first; tasks, jobs and
 * subscriptions by (created_at, id); tokens by (created_seq, id); work
 * items by (enabled_at, id); timers by (due_at, id). */
typedef struct wf_aggregate {
    wf_instance_row *instances;
    size_t n_instances;
    wf_task_row *tasks;
    size_t n_tasks;
    wf_token_row *tokens;
    size_t n_tokens;
    wf_work_item_row *work_items;
    size_t n_work_items;
    wf_job_row *jobs;
    size_t n_jobs;
    wf_timer_row *timers;
    size_t n_timers;
    wf_subscription_row *subscriptions;
    size_t n_subscriptions;
} wf_aggregate;

/* What one mutation produced. Rows are upserted by (tenant, id); the
 * del_* arrays name ids of rows of the root the unit of work locked (a
 * deletion before wf_tx_lock_root is WF_E_INTERNAL); events are appended
 * in array order. All pointers are borrowed for the duration of
 * wf_tx_apply. */
typedef struct wf_store_changes {
    const wf_instance_row *instances;
    size_t n_instances;
    const wf_task_row *tasks;
    size_t n_tasks;
    const wf_token_row *tokens;
    size_t n_tokens;
    const wf_work_item_row *work_items;
    size_t n_work_items;
    const wf_job_row *jobs;
    size_t n_jobs;
    const wf_timer_row *timers;
    size_t n_timers;
    const wf_subscription_row *subscriptions;
    size_t n_subscriptions;
    const wf_signal_row *signals;
    size_t n_signals;
    const wf_event_row *events;
    size_t n_events;
    const char *const *del_tokens;
    size_t n_del_tokens;
    const char *const *del_jobs;
    size_t n_del_jobs;
    const char *const *del_timers;
    size_t n_del_timers;
    const char *const *del_subscriptions;
    size_t n_del_subscriptions;
} wf_store_changes;

/* ---- construction ------------------------------------------------------ */

/* Creates an empty in-memory store. NULL (and err) when out of memory. */
wf_store *wf_store_mem_new(wf_error *err);

typedef struct wf_store_pg_config {
    const char *dsn;        /* libpq connection string or URI; copied */
    int pool_size;          /* WF_DB_POOL_SIZE; 0 = 8 */
    int acquire_timeout_ms; /* longest wait for a free connection; 0 = 1000 */
    int connect_timeout_s;  /* per connection attempt; 0 = 2 */
} wf_store_pg_config;

/* Connects, applies pending migrations under an advisory lock (safe when
 * several replicas start together) and returns the store. NULL and err
 * (WF_E_STORE_UNAVAILABLE when Postgres cannot be reached) on failure. */
wf_store *wf_store_pg_new(const wf_store_pg_config *cfg, wf_error *err);

/* Applies the pending migrations as wf_store_pg_new does, then closes its
 * connections (`workflowd migrate`). *version gets the schema's version.
 * WF_E_SCHEMA_TOO_NEW when the schema holds a migration newer than this
 * binary's newest: nothing is applied then, and wf_store_pg_new fails
 * alike, so that no server starts on a schema it does not know. */
wf_code wf_store_pg_migrate(const wf_store_pg_config *cfg, int *version, wf_error *err);

/* Stops the listener (if any; joins its thread), closes every connection
 * and frees everything. NULL-safe. No call may be in flight, and it must
 * not be called from the listener callback. */
void wf_store_free(wf_store *st);

/* Bounds the pages of every listing (tasks, instances, definitions,
 * signals, work items) and every batch of events by bytes too: a page
 * stops before its rows, as estimated with their tags, take more than
 * bytes (at least one row per page; the next page token follows from the
 * last row kept). 0 (the default) counts rows only. Set once, before the
 * store is shared. */
void wf_store_set_page_bytes(wf_store *st, size_t bytes);

/* The aging step of job priorities, in µs (WF_JOB_AGING_MIN_US to
 * WF_JOB_AGING_MAX_US; WF_JOB_AGING_DEFAULT_US until set): every job
 * written after it gets its rank from it (wf_store_job_rank). Replicas
 * over one database must share it. Set once, before the store is shared. */
void wf_store_set_job_aging(wf_store *st, int64_t aging_us);

/* True when the store can serve calls now (health checks). */
bool wf_store_ready(wf_store *st);

/* The event types whose commits the store counts (for metrics), indexes
 * of wf_store_stats.events; wf_store_counted_events names them. */
enum {
    WF_CNT_INSTANCE_STARTED,
    WF_CNT_INSTANCE_COMPLETED,
    WF_CNT_INSTANCE_CANCELLED,
    WF_CNT_INSTANCE_FAILED,
    WF_CNT_INSTANCE_COMPENSATED,
    WF_CNT_INCIDENT_RESOLVED,
    WF_CNT_SIGNAL_RECEIVED,
    WF_CNT_SIGNAL_BUFFERED,
    WF_CNT_SIGNAL_DROPPED,
    WF_CNT_SIGNAL_DUPLICATE,
    WF_STORE_N_COUNTED
};
extern const char *const wf_store_counted_events[WF_STORE_N_COUNTED];

typedef struct wf_store_stats {
    int pool_size; /* 0 for the memory store */
    int in_use;    /* connections borrowed now */
    int waiting;   /* callers waiting for a connection */
    /* Round trips to the database (flights: statements sent together in
     * pipeline mode) and the statements they carried, since the store was
     * made, over every pooled connection. A test reads the difference
     * around a call. Memory store: 0. */
    int64_t flights;
    int64_t statements;
    /* The transactions those flights ended: a unit of work's COMMIT, and
     * each statement run on its own (an implicit transaction). */
    int64_t transactions;
    /* Committed events of the types in wf_store_counted_events, in that
     * order, since the store was made (this process's commits only; both
     * stores). */
    int64_t events[WF_STORE_N_COUNTED];
} wf_store_stats;

/* Snapshot of pool gauges for metrics. */
void wf_store_get_stats(wf_store *st, wf_store_stats *out);

/* ---- unit of work ------------------------------------------------------ */

/* Opens a transaction. *tx is owned by the caller until wf_tx_commit or
 * wf_tx_rollback, which free it. ctx must stay valid until then.
 * Postgres: borrows one pooled connection for the whole transaction and
 * sets statement_timeout from ctx->deadline_ms. Memory: holds the store's
 * one mutex until commit/rollback (every other call waits), except while
 * paused (wf_tx_pause). */
wf_code wf_store_begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **tx, wf_error *err);

/* A unit of work over several roots, for batches of small units (due
 * timers: engine/runtime/net_runtime_timers.c). As wf_store_begin, except that
 * wf_tx_lock_root_hint may lock further roots, each with a greater id
 * than the one locked before (byte order), every lock held until commit
 * or rollback: two batches, and a batch and any unit of work, then never
 * wait for each other in a cycle of root locks. Going back to a smaller
 * root is WF_E_INTERNAL (refused before locking when the hint says so).
 * Each root's rows are written (deletions address the root locked last)
 * before the next root is locked. One commit for the whole batch; any
 * failure poisons all of it (wf_tx_failed), so callers retry the rest
 * without the root that failed. Postgres: one transaction on one pooled
 * connection; memory: the one mutex, as any unit of work. */
wf_code wf_store_begin_batch(wf_store *st, const wf_store_ctx *ctx, wf_tx **tx, wf_error *err);

/* True once a call of tx failed (only wf_tx_rollback is accepted then). */
bool wf_tx_failed(const wf_tx *tx);

/* Locks the root of instance_id (which may be the root itself or any
 * descendant) and loads the aggregate into ctx->arena. Postgres: SELECT ...
 * FOR UPDATE on the root row, then the aggregate's jobs and timers are
 * locked too, so job activation and timer claims (SKIP LOCKED) never race a
 * mutation. WF_E_INSTANCE_NOT_FOUND when the instance does not exist. A
 * unit of work locks one root: locking another one is WF_E_INTERNAL.
 * Postgres addresses the root's rows by their root id (one shard of a
 * distributed table): it first takes instance_id for the root, and when
 * that is a child, reads its root by id (a read of every shard) and loads
 * again. */
wf_code wf_tx_lock_root(wf_tx *tx, const char *instance_id, wf_aggregate *out, wf_error *err);

/* As wf_tx_lock_root, for a caller that has read a row of the tree (task,
 * job, timer, subscription, child instance): root_hint is that row's
 * root_id, which never changes, so a child's root is locked in one round
 * trip too. The result, errors included, is the same as without the hint
 * (a hint that is wrong or NULL costs the lookup by id). */
wf_code wf_tx_lock_root_hint(wf_tx *tx, const char *instance_id, const char *root_hint,
                             wf_aggregate *out, wf_error *err);

/* Writes one mutation's rows, deletions and events. Instances are checked
 * against their version (see wf_instance_row.version). Events are appended
 * in array order; their sequences are assigned when they become visible
 * (see wf_store_read_events). */
wf_code wf_tx_apply(wf_tx *tx, const wf_store_changes *changes, wf_error *err);

/* Lets the writes of tx travel with its next statements (at the latest
 * its commit) instead of a round trip of their own: from now on
 * wf_tx_apply may return WF_OK for writes that then fail, and the failure
 * (WF_E_CONFLICT for a stale instance version or a duplicate signal id)
 * is reported by the next wf_tx_* call, the commit included. For a runner
 * that treats every failure of a unit of work alike (engine/base/uow.c).
 * Memory: writes are applied at once either way. */
void wf_tx_defer_writes(wf_tx *tx);

/* Lets other units of work run while tx waits for something slow that
 * reads and writes nothing of the store (an expression's evaluation or
 * compilation); wf_tx_resume takes tx back. The roots tx locked stay
 * locked, so what tx read of them still holds when it resumes; rows
 * outside them may have changed, as under Postgres's read committed.
 * Postgres: nothing to do (row locks never stopped other units of work).
 * Memory: the store mutex is let go when tx has written nothing yet and
 * took no correlation lock; otherwise the pause does nothing and tx keeps
 * the mutex. Every pause is followed by one resume on the same thread. */
void wf_tx_pause(wf_tx *tx);
void wf_tx_resume(wf_tx *tx);

/* Commits and frees tx (also on failure: a failed commit is rolled back). */
wf_code wf_tx_commit(wf_tx *tx, wf_error *err);

/* Discards every write of tx and frees it. NULL-safe; never fails. */
void wf_tx_rollback(wf_tx *tx);

/* Looks up (ctx->tenant, method, request_id). *found is false when absent;
 * *out is filled when found. */
wf_code wf_tx_idempotency_get(wf_tx *tx, const char *method, const char *request_id,
                              wf_idempotency_row *out, bool *found, wf_error *err);

/* As wf_tx_idempotency_get, but the lookup may travel with the
 * transaction's next statements instead of a round trip of its own:
 * *found and *out (both must stay valid until the transaction ends) are
 * set when its answer is in, at the latest when the next wf_tx_* call
 * returns. When a record is found, that call fails (WF_E_CONFLICT: the
 * request was already recorded), so a body stops at once; its writes are
 * rolled back with the transaction. Memory: looked up at once. */
wf_code wf_tx_idempotency_prefetch(wf_tx *tx, const char *method, const char *request_id,
                                   wf_idempotency_row *out, bool *found, wf_error *err);

/* Records a request's result. A record with the same key is WF_E_CONFLICT
 * (a concurrent retry of the same request won; retrying reads its record). */
wf_code wf_tx_idempotency_put(wf_tx *tx, const wf_idempotency_row *in, wf_error *err);

/* wf_tx_idempotency_put, then wf_tx_commit: one round trip on Postgres
 * instead of two. Frees tx either way (a failure rolls back); a record
 * with the same key is WF_E_CONFLICT. */
wf_code wf_tx_commit_recorded(wf_tx *tx, const wf_idempotency_row *in, wf_error *err);

/* As wf_tx_commit_recorded, but a record of the same (method, request_id)
 * with the same request_hash is replaced instead of refused: a call whose
 * effect spans several units of work (SendSignal to an aggregate fires
 * one root per unit of work) records with the first and amends the
 * response with each later one, so every committed effect has its record.
 * A record with another hash is left as it is. */
wf_code wf_tx_commit_amended(wf_tx *tx, const wf_idempotency_row *in, wf_error *err);

/* Stores in as the next version of in->key (in->version is ignored) and
 * returns that version in *version. Two concurrent puts of one key: one
 * gets WF_E_CONFLICT. A key never changes kind: when it holds a version of
 * another kind than in->kind, WF_E_DEFINITION_KIND_CONFLICT and nothing is
 * stored (also against a concurrent put of the other kind). */
wf_code wf_tx_put_definition(wf_tx *tx, const wf_definition_row *in, int32_t *version,
                             wf_error *err);

/* Definition key at version (0 = latest), seen inside the transaction.
 * *found is false when there is none; *out is filled when found. */
wf_code wf_tx_get_definition(wf_tx *tx, const char *key, int32_t version, wf_definition_row *out,
                             bool *found, wf_error *err);

/* Consumes the oldest buffered, unexpired signal called name that targets
 * instance_id or the aggregate (aggregate_type, aggregate_id), marking it
 * consumed by consumer_instance through transition_id at now. Signals
 * locked by another transaction are skipped (SKIP LOCKED), so a buffered
 * signal is delivered at most once; a rollback puts it back. *found is
 * false when none matched. */
wf_code wf_tx_consume_signal(wf_tx *tx, const char *name, const char *instance_id,
                             const char *aggregate_type, const char *aggregate_id,
                             const char *consumer_instance, const char *transition_id, int64_t now,
                             wf_signal_row *out, bool *found, wf_error *err);

/* Serialises buffering a signal with awaiting it, per aggregate
 * (ctx->tenant, aggregate_type, aggregate_id; one lock for every signal
 * name, so that a unit of work enabling several waits of one aggregate
 * cannot deadlock with another): takes a lock held until tx ends, then,
 * when awaited is not NULL, sets *awaited to whether a committed
 * subscription of a RUNNING instance waits for signal name on that
 * aggregate (a FAILED instance's wait fires only after RetryInstance,
 * which looks at the buffer then).
 * SendSignal by aggregate takes it before buffering, a unit of work
 * enabling an AGGREGATE MSG wait before it looks for a buffered signal;
 * whichever of the two commits second sees the other's row, so neither
 * can miss the other. Postgres: a transaction-scoped advisory lock on a
 * hash of the key (a hash collision only serialises two keys); memory: the
 * store mutex already serialises every transaction, only the check runs.
 * Lock order: after wf_tx_lock_root, never before it. */
wf_code wf_tx_lock_correlation(wf_tx *tx, const char *name, const char *aggregate_type,
                               const char *aggregate_id, bool *awaited, wf_error *err);

/* Under wf_tx_lock_correlation of that aggregate: *live is whether a root
 * instance bound to (aggregate_type, aggregate_id) has not ended (RUNNING,
 * FAILED or COMPENSATING), as committed when the lock was granted or
 * written by tx. SendSignal with start reads it to start at most one
 * instance per aggregate. */
wf_code wf_tx_aggregate_live(wf_tx *tx, const char *aggregate_type, const char *aggregate_id,
                             bool *live, wf_error *err);

/* ---- fan-out of a signal sent to an aggregate --------------------------
 *
 * Under wf_tx_lock_correlation of the aggregate: when deliveries of an
 * earlier signal to it are pending, or a signal to it is QUEUED that was
 * received before (before_at, before_id) (INT64_MAX: any), *queued is set
 * and nothing is written. Otherwise one PENDING delivery row of
 * signal_log_id is written per RUNNING instance whose subscription waits
 * for signal name on the aggregate (seq in the order they began to
 * wait), *count is how many, and ids (ctx->arena) the first page of
 * their instance ids (at most page). received_at is the signal's receipt
 * (its log row's), the order of each instance's log. */
typedef struct wf_fanout_out {
    bool queued;
    int64_t count;
    char **ids;
    size_t n_ids;
} wf_fanout_out;

wf_code wf_tx_fanout_targets(wf_tx *tx, const char *signal_log_id, const char *name,
                             const char *aggregate_type, const char *aggregate_id,
                             int64_t before_at, const char *before_id, int64_t received_at,
                             int64_t now, size_t page, wf_fanout_out *out, wf_error *err);

/* Consumes the PENDING delivery of signal_log_id to instance_id (of the
 * root root_id, the one tx locked): it becomes state at now. *taken is false when it was not
 * PENDING (delivered already, by another replica): the caller then changes nothing. Row locked
 * until tx ends, so two takers serialise. */
wf_code wf_tx_take_delivery(wf_tx *tx, const char *signal_log_id, const char *root_id,
                            const char *instance_id, wf_delivery_state state, int64_t now,
                            bool *taken, wf_error *err);

/* Up to limit PENDING deliveries to the aggregate (any signal), claimed
 * or not: a sender that would queue behind a few runs them itself. */
wf_code wf_store_pending_deliveries(wf_store *st, const wf_store_ctx *ctx,
                                    const char *aggregate_type, const char *aggregate_id,
                                    size_t limit, wf_delivery_row **rows, size_t *n, wf_error *err);

/* The delivery-log row id, as committed now (read inside tx). */
wf_code wf_tx_get_signal(wf_tx *tx, const char *id, wf_signal_row *out, bool *found, wf_error *err);

/* Claims up to limit PENDING deliveries whose claim ran out
 * (claimed_until <= now) for lease_ms: claimed_until = now + lease. Of
 * ctx->tenant, or of every tenant when it is NULL. Rows locked by another
 * claim or taker are skipped (SKIP LOCKED), so replicas share the work;
 * a claim is only a hint: the taker re-checks (wf_tx_take_delivery). */
wf_code wf_store_claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                  int64_t lease_ms, size_t limit, wf_delivery_row **rows, size_t *n,
                                  wf_error *err);

/* QUEUED signals whose turn came: the oldest QUEUED one of an aggregate
 * that has no pending deliveries, oldest first, at most limit. A read
 * only: the resolver re-checks under the correlation lock. */
wf_code wf_store_find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                     wf_signal_row **rows, size_t *n, wf_error *err);

/* The deliveries of signal_log_id by state. */
typedef struct wf_delivery_counts {
    int64_t pending, delivered, skipped;
} wf_delivery_counts;

wf_code wf_store_count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *signal_log_id,
                                  wf_delivery_counts *out, wf_error *err);

/* A count at one place or transition. */
typedef struct wf_element_count {
    char *element_id;
    int64_t count;
} wf_element_count;

/* The live totals of one definition (GetDefinitionStatistics), over its
 * instances that have not ended (WF_FLEET_LIVE: RUNNING, FAILED,
 * COMPENSATING, SUSPENDED; roots and children) of one version (0: every
 * version): how many there are, the tokens per place, the ENABLED work
 * items per transition, and the open incidents (FAILED instances) per
 * incident_transition_id ("" for none). Each list is ordered by element
 * id; each is one grouped read served by an index (0025_fleet.sql). */
typedef struct wf_fleet_counts {
    int64_t live;
    wf_element_count *tokens, *enabled, *incidents;
    size_t n_tokens, n_enabled, n_incidents;
} wf_fleet_counts;

#define WF_FLEET_LIVE(s)                                                                           \
    ((s) == WF_INSTANCE_RUNNING || (s) == WF_INSTANCE_FAILED || (s) == WF_INSTANCE_COMPENSATING || \
     (s) == WF_INSTANCE_SUSPENDED)

wf_code wf_store_fleet_counts(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                              int32_t version, wf_fleet_counts *out, wf_error *err);

/* What wf_store_fleet_instances lists (numbers of the proto's
 * ElementCountKind). */
typedef enum wf_fleet_kind {
    WF_FLEET_TOKENS = 1,    /* a token in the place */
    WF_FLEET_ENABLED = 2,   /* an ENABLED work item of the transition */
    WF_FLEET_INCIDENTS = 3, /* FAILED, the incident at the transition ("": none) */
} wf_fleet_kind;

/* The ids of the instances counted by wf_store_fleet_counts that are at
 * element (as kind says), ascending (byte order), after the id after
 * (NULL: from the first), at most limit, in ctx->arena. */
wf_code wf_store_fleet_instances(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                                 int32_t version, wf_fleet_kind kind, const char *element,
                                 const char *after, size_t limit, char ***ids, size_t *n,
                                 wf_error *err);

/* ---- simple reads ------------------------------------------------------ */

/* Not-found codes: WF_E_DEFINITION_NOT_FOUND, WF_E_INSTANCE_NOT_FOUND,
 * WF_E_TASK_NOT_FOUND, WF_E_JOB_NOT_FOUND. */
wf_code wf_store_get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                int32_t version, wf_definition_row *out, wf_error *err);
wf_code wf_store_get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id,
                              wf_instance_row *out, wf_error *err);
wf_code wf_store_get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out,
                          wf_error *err);
wf_code wf_store_get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                wf_job_row *out, wf_error *err);

/* ---- listings (keyset pagination) --------------------------------------
 *
 * page_size 0 means 50; larger than 1000 is cut to 1000. cursor is NULL (or
 * "") for the first page, else a next_cursor from a previous call with the
 * same filter. *next_cursor is NULL on the last page. Cursors are opaque
 * and identical across stores; a malformed one is WF_E_INVALID_ARGUMENT.
 * Keyset pagination is stable: rows inserted between pages never shift
 * others, so a row present throughout is returned exactly once. */

/* Orders of a task listing. Each sorts by (key, created_at, id), the
 * whole key in one direction; CREATED's key is created_at alone. */
typedef enum wf_task_sort {
    WF_TASK_SORT_CREATED = 0,
    WF_TASK_SORT_PRIORITY = 1,
    WF_TASK_SORT_DUE = 2, /* key: due_at, INT64_MAX for a task without one */
} wf_task_sort;

/* The sort key of t under sort (CREATED: created_at). */
int64_t wf_task_sort_key(const wf_task_row *t, wf_task_sort sort);

/* Inbox filter (NULL = every task). With user set: the user's own tasks (assignee USER = user),
 * the OPEN group tasks of groups[], and tasks claimed by user. Else with
 * group set: that group's group tasks, any status. Else every task of the tenant. The
 * states filter (empty = any) and the due window apply on top. Ordered by
 * sort (wf_task_sort), ascending unless descending. The cursor of a page
 * holds the sort key of its last row, so it is bound to its sort. */
typedef struct wf_task_filter {
    const char *user;
    const char *const *groups;
    size_t n_groups;
    const char *group;
    const wf_task_status *states;
    size_t n_states;
    wf_task_sort sort;
    bool descending;
    int64_t due_after;  /* 0 = none; else only tasks with due_at > due_after */
    int64_t due_before; /* 0 = none; else only tasks with 0 < due_at < due_before */
} wf_task_filter;

wf_code wf_store_list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                            size_t page_size, const char *cursor, wf_task_row **rows, size_t *n,
                            char **next_cursor, wf_error *err);

/* NULL fields (and a NULL filter) do not filter. begun: whether work has
 * begun in the instance. It has not (WF_BEGUN_NO, TaskFlow's notStarted)
 * while it is RUNNING, its definition version is AD_HOC and it has no child
 * instance (no referral); every other instance has begun (WF_BEGUN_YES),
 * among them every instance of a NET, whose start creates its first work.
 * Ordered by (created_at, id). */
typedef enum wf_begun_filter {
    WF_BEGUN_ANY = 0,
    WF_BEGUN_NO = 1,
    WF_BEGUN_YES = 2,
} wf_begun_filter;

/* An equality on a variable: the value at the dotted path keys[0..n_keys)
 * of the variables equals value (a JSON scalar, checked by the caller).
 * Arrays are not entered; numbers compare by value; a missing path never
 * matches. */
typedef struct wf_var_filter {
    const char *const *keys;
    size_t n_keys;
    const char *value_json;
} wf_var_filter;

/* Time bounds (microseconds; 0 = unbounded): created_after <= created_at <
 * created_before, and likewise for ended_at, which an instance that has not
 * ended (ended_at 0) never meets. */
typedef struct wf_instance_filter {
    const char *started_by;
    const char *definition_key;
    const char *aggregate_type;
    const char *aggregate_id;
    const wf_instance_status *statuses;
    size_t n_statuses;
    bool roots_only;
    wf_begun_filter begun;
    int64_t created_after, created_before;
    int64_t ended_after, ended_before;
    const wf_var_filter *vars; /* every one holds (AND) */
    size_t n_vars;
    bool newest_first; /* order by (created_at, id) descending; the cursor continues downwards */
} wf_instance_filter;

wf_code wf_store_list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f,
                                size_t page_size, const char *cursor, wf_instance_row **rows,
                                size_t *n, char **next_cursor, wf_error *err);

/* Open incidents: FAILED instances (roots and children), filtered by
 * definition key and incident code (NULL = any), ordered by (incident_at,
 * id). */
typedef struct wf_incident_filter {
    const char *definition_key;
    const char *code;
} wf_incident_filter;

wf_code wf_store_list_incidents(wf_store *st, const wf_store_ctx *ctx, const wf_incident_filter *f,
                                size_t page_size, const char *cursor, wf_instance_row **rows,
                                size_t *n, char **next_cursor, wf_error *err);

/* Every version of every definition, ordered by (key, version). */
wf_code wf_store_list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t page_size,
                                  const char *cursor, wf_definition_row **rows, size_t *n,
                                  char **next_cursor, wf_error *err);

/* The delivery log. instance_id matches signals sent to or consumed by that
 * instance, and the signals fanned out to its aggregate with a delivery to
 * it (pending or run: wf_signal_row.delivery and the two fields after it
 * describe that delivery); the aggregate pair matches signals sent to that aggregate;
 * signal_id matches the dedupe key (the first delivery, never a
 * DUPLICATE row); buffered_only keeps signals still in
 * the buffer. Ordered by (received_at, id). */
typedef struct wf_signal_filter {
    const char *instance_id;
    const char *aggregate_type;
    const char *aggregate_id;
    const char *signal_id;
    bool buffered_only;
} wf_signal_filter;

wf_code wf_store_list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                              size_t page_size, const char *cursor, wf_signal_row **rows, size_t *n,
                              char **next_cursor, wf_error *err);

/* The work items of one instance, live and ended (history), whose state
 * is in states (bit 1u << state; 0 = any). Ordered by (enabled_at, id). */
wf_code wf_store_list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                                 unsigned states, size_t page_size, const char *cursor,
                                 wf_work_item_row **rows, size_t *n, char **next_cursor,
                                 wf_error *err);

/* ---- batch operations --------------------------------------------------
 *
 * One row per batch operation of a tenant. Writes are checked against
 * the row version, so a claim, a chunk's progress and a cancel never
 * overwrite each other unseen (the loser gets WF_E_CONFLICT and reads the
 * row again). */

/* Inserts in (in->version must be 0) in the unit of work, so that the
 * request record of StartBatchOperation commits with it. A row with the
 * same id is WF_E_CONFLICT. */
wf_code wf_tx_put_batch(wf_tx *tx, const wf_batch_row *in, wf_error *err);

/* The batch operation id of ctx->tenant; WF_E_BATCH_OPERATION_NOT_FOUND
 * when there is none (another tenant's included). */
wf_code wf_store_get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_batch_row *out,
                           wf_error *err);

/* Replaces the row in->id when its stored version is in->version, and
 * stores in->version + 1; another version is WF_E_CONFLICT, a missing row
 * WF_E_BATCH_OPERATION_NOT_FOUND. */
wf_code wf_store_update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                              wf_error *err);

/* The batch operations of ctx->tenant, newest first: ordered by
 * (created_at, id) descending. */
wf_code wf_store_list_batches(wf_store *st, const wf_store_ctx *ctx, size_t page_size,
                              const char *cursor, wf_batch_row **rows, size_t *n,
                              char **next_cursor, wf_error *err);

/* Claims up to limit RUNNING batch operations whose lease ran out
 * (lease_until <= now) for owner until now + lease_ms (milliseconds; now
 * is microseconds): lease_owner and lease_until set, version bumped; of
 * ctx->tenant, or of every tenant when it is NULL (rows carry theirs).
 * Ordered by (lease_until, id), so the one that waited longest goes
 * first. Rows locked by another claim are skipped (FOR UPDATE SKIP
 * LOCKED), so one batch operation runs on one replica at a time; one
 * whose holder died is claimed again once its lease has run out. */
wf_code wf_store_claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                               int64_t now, int64_t lease_ms, size_t limit, wf_batch_row **rows,
                               size_t *n, wf_error *err);

/* ---- schedules ----------------------------------------------------------
 *
 * One row per schedule of a tenant, written against its version as batch
 * operations are, and one row per fire time (its run). */

/* Inserts in (in->version must be 0) in the unit of work; a schedule with
 * the same id is WF_E_SCHEDULE_ALREADY_EXISTS. */
wf_code wf_tx_put_schedule(wf_tx *tx, const wf_schedule_row *in, wf_error *err);

/* The schedule id of ctx->tenant; WF_E_SCHEDULE_NOT_FOUND when there is
 * none (another tenant's included). */
wf_code wf_store_get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                              wf_schedule_row *out, wf_error *err);

/* Replaces the row in->id when its stored version is in->version and
 * stores in->version + 1; another version is WF_E_CONFLICT, a missing row
 * WF_E_SCHEDULE_NOT_FOUND. */
wf_code wf_store_update_schedule(wf_store *st, const wf_store_ctx *ctx, const wf_schedule_row *in,
                                 wf_error *err);

/* Deletes the schedule id and its runs; WF_E_SCHEDULE_NOT_FOUND when
 * there is none. */
wf_code wf_store_delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                 wf_error *err);

/* The schedules of ctx->tenant, newest first ((created_at, id)
 * descending). */
wf_code wf_store_list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t page_size,
                                const char *cursor, wf_schedule_row **rows, size_t *n,
                                char **next_cursor, wf_error *err);

/* Claims up to limit ACTIVE schedules that are due (0 < due_at <= now)
 * and not held (lease_until <= now) for owner until now + lease_ms
 * (milliseconds): lease set, version bumped; of ctx->tenant, or of every
 * tenant when it is NULL. Ordered by (due_at, id); rows locked by another
 * claim are skipped (FOR UPDATE SKIP LOCKED). */
wf_code wf_store_claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                                 int64_t now, int64_t lease_ms, size_t limit,
                                 wf_schedule_row **rows, size_t *n, wf_error *err);

/* ---- resources ----------------------------------------------------------
 *
 * One row per resource of a tenant, written against its version. */

/* The resource name of ctx->tenant; WF_E_RESOURCE_NOT_FOUND when there is
 * none (another tenant's included). */
wf_code wf_store_get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                              wf_resource_row *out, wf_error *err);

/* in->version 0: inserts in with version 1; a resource of that name is
 * WF_E_CONFLICT. Otherwise replaces the row in->name when its stored
 * version is in->version and stores in->version + 1; another version is
 * WF_E_CONFLICT, a missing row WF_E_RESOURCE_NOT_FOUND. */
wf_code wf_store_save_resource(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                               wf_error *err);

/* Deletes the resource name; WF_E_RESOURCE_NOT_FOUND when there is none. */
wf_code wf_store_delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                 wf_error *err);

/* The resources of ctx->tenant, newest first ((created_at, name)
 * descending). */
wf_code wf_store_list_resources(wf_store *st, const wf_store_ctx *ctx, size_t page_size,
                                const char *cursor, wf_resource_row **rows, size_t *n,
                                char **next_cursor, wf_error *err);

/* Inserts the run of (in->schedule_id, in->nominal_at) in the unit of
 * work; one that exists is WF_E_CONFLICT (that fire time was handled). */
wf_code wf_tx_put_schedule_run(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err);

/* Replaces the BUFFERED run of (in->schedule_id, in->nominal_at) with in
 * (STARTED or FAILED) in the unit of work; WF_E_CONFLICT when that run is
 * not BUFFERED (settled before, by this replica or another). */
wf_code wf_tx_settle_schedule_run(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err);

/* The runs of schedule_id, newest fire time first. */
wf_code wf_store_list_schedule_runs(wf_store *st, const wf_store_ctx *ctx, const char *schedule_id,
                                    size_t page_size, const char *cursor,
                                    wf_schedule_run_row **rows, size_t *n, char **next_cursor,
                                    wf_error *err);

/* ---- cross-instance work ----------------------------------------------- */

/* Leases up to max jobs of job_type to worker (lease_ms is milliseconds;
 * now and row times are microseconds): jobs ACTIVATABLE with
 * activatable_at <= now, of a tree whose root is not SUSPENDED. A lease
 * that ran out comes back only through the scheduler
 * (wf_store_find_expired_leases: JOB_LEASE_EXPIRED, then
 * ACTIVATABLE without spending an attempt), so that every re-lease follows
 * its expiry event and this query is one index range with a limit. Each
 * gets state ACTIVATED, a fresh key and
 * lease_expires_at = now + lease_ms. No event is written: the engine
 * writes JOB_ACTIVATED in the transaction of the leases (wf_tx_activate_jobs
 * in a unit of work). Rows locked elsewhere are skipped (FOR UPDATE SKIP
 * LOCKED), so no job is leased twice. Returned ordered by
 * (activatable_at, id). Without a bound on bytes (see wf_tx_activate_jobs). */
wf_code wf_store_activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                               const char *worker, size_t max, int64_t lease_ms, int64_t now,
                               wf_job_row **rows, size_t *n, wf_error *err);

/* As wf_store_activate_jobs, inside a unit of work (which locks no root
 * for it): the leases commit or roll back with the transaction, and so
 * with the events and the request record written in it
 * (wf_tx_commit_recorded). A rollback gives the jobs back. max_bytes (0 =
 * none) bounds the answer: jobs are leased in order while the sum of
 * their wf_store__job_answer_bytes estimates stays within it, so a job
 * that would not fit is not leased; when the first one alone does not
 * fit, nothing is leased and the call fails with
 * WF_E_VARIABLES_TOO_LARGE naming the job. */
wf_code wf_tx_activate_jobs(wf_tx *tx, const char *job_type, const char *worker, size_t max,
                            size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows,
                            size_t *n, wf_error *err);

/*
 * Due timers of EVERY tenant (ctx->tenant is ignored; rows carry theirs):
 * up to limit timers with due_at <= now that are not claimed, or whose
 * claim ran out, and whose tree's root is not SUSPENDED, are claimed
 * until now + claim_ms (milliseconds; now is
 * microseconds) and returned ordered by
 * (due_at, id). Rows locked by another transaction are skipped.
 *
 * Firing protocol (what makes a timer fire at most once):
 *   1. claim_due_timers hands each due timer to one scheduler replica for
 *      claim_ms; this only avoids duplicate work.
 *   2. For each claimed timer the scheduler runs one unit of work with
 *      ctx.tenant = row.tenant: begin, lock_root(row.root_id), and fires
 *      the timer ONLY if its id is still in aggregate.timers; firing
 *      deletes the timer row in the same transaction (del_timers).
 *   3. Because the delete commits with the firing under the root lock, a
 *      second replica (or a retry after a crash) finds the timer gone and
 *      does nothing. A claim whose holder died expires after claim_ms and
 *      the timer is claimed again (the seed's "tick").
 */
wf_code wf_store_claim_due_timers(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                                  int64_t claim_ms, wf_timer_row **rows, size_t *n, wf_error *err);

/* As wf_store_claim_due_timers, but only the timers of ctx->tenant: one
 * tenant's scheduler pass on demand (RunSchedulerPass). */
wf_code wf_store_claim_tenant_timers(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                     size_t limit, int64_t claim_ms, wf_timer_row **rows, size_t *n,
                                     wf_error *err);

/* Jobs whose lease ran out: ACTIVATED with lease_expires_at <= now, of
 * ctx->tenant (NULL: of every tenant; rows carry theirs), at most limit,
 * ordered by (lease_expires_at, id). Rows locked by a unit of work are
 * skipped (SKIP LOCKED), so replicas never wait on each other. A read
 * only: the scheduler then expires each job in a unit of work on its root
 * and re-checks there (still ACTIVATED, same key, lease still run out),
 * so two replicas finding the same job expire it once. */
wf_code wf_store_find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                     size_t limit, wf_job_row **rows, size_t *n, wf_error *err);

/* Signal TTL: up to limit buffered signals of ctx->tenant (NULL: every
 * tenant) with expires_at <= now leave the buffer: buffered = false,
 * discarded = true, consumed_at stays 0. The row stays in the delivery
 * log. Rows locked by a consumer are skipped. *n: how many expired. */
wf_code wf_store_expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                                size_t *n, wf_error *err);

/* What a retention sweep removes (wf_store_sweep). */
typedef enum wf_sweep_kind {
    /* Delivery-log rows that left the buffer unconsumed (expired or
     * discarded) with expires_at <= before. */
    WF_SWEEP_SIGNALS = 1,
    /* Request records (idempotency) with created_at <= before. */
    WF_SWEEP_IDEMPOTENCY = 2,
    /* Numbered events of trees whose root ended for good (COMPLETED,
     * CANCELLED or COMPENSATED) with ended_at <= before. A RUNNING,
     * COMPENSATING or FAILED (retryable) root keeps every event. */
    WF_SWEEP_EVENTS = 3,
    /* Fan-out deliveries that ran (DELIVERED or SKIPPED) with done_at <=
     * before; pending ones stay. Swept with the signals' retention. */
    WF_SWEEP_DELIVERIES = 4,
} wf_sweep_kind;

/* Retention: deletes up to limit rows of kind of ctx->tenant (NULL: every
 * tenant) in one short statement (rows locked elsewhere are skipped) and
 * sets *n to how many went. Callers repeat while *n == limit. */
wf_code wf_store_sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before,
                       size_t limit, size_t *n, wf_error *err);

/* Backlog counts of every tenant for the metrics gauges (ctx->tenant is
 * not used as a filter; ctx->arena receives the job types). */
typedef struct wf_store_job_count {
    char *job_type;
    int64_t count;
} wf_store_job_count;

typedef struct wf_store_counts {
    int64_t tasks_open;         /* OPEN or CLAIMED: waiting for a person */
    int64_t signals_buffered;   /* buffered, not consumed, not expired at now */
    int64_t deliveries_pending; /* fan-out deliveries not yet run */
    wf_store_job_count *jobs;   /* activatable at now (also a run-out lease), by */
    size_t n_jobs;              /* job type in type order, at most max_types */
} wf_store_counts;

/* Fills out with the counts at now. Postgres: one statement over partial
 * indexes (migrations/0003_gauges.sql); memory: one pass under the mutex. */
wf_code wf_store_count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                               wf_store_counts *out, wf_error *err);

/* Subscriptions waiting for signal name: those of instance_id when it is
 * set, else those whose aggregate is (aggregate_type, aggregate_id), at
 * most WF_FIND_SUBS_AGGREGATE_MAX of them, and none when deliveries to
 * the aggregate are pending or a signal to it is QUEUED (the sender then
 * queues behind them, under the correlation lock). Ordered by
 * (created_at, id). */
#define WF_FIND_SUBS_AGGREGATE_MAX 64
wf_code wf_store_find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                    const char *instance_id, const char *aggregate_type,
                                    const char *aggregate_id, wf_subscription_row **rows, size_t *n,
                                    wf_error *err);

/*
 * Events with sequence > after_sequence, ascending, at most limit (0 = 100,
 * cut to 1000). Filters (NULL/empty = none): instance_id matches events of
 * that instance and, when it is a root, of its whole tree; definition_key
 * matches events of instances of that definition; types[] is a set.
 *
 * Delivery guarantees (docs/behaviour.md), on both stores:
 *   - Sequences are 1, 2, 3, ... with no gaps, handed out as events
 *     become visible (after their transaction commits), never below a
 *     sequence already visible: every reader that sees sequence N also
 *     sees every sequence below N.
 *     A client that resumes after the last sequence it saw therefore never
 *     skips an event and never sees one twice, even when transactions
 *     commit in another order than they wrote (a slow transaction's events
 *     are numbered after everything already visible).
 *     Retention (wf_store_sweep, WF_SWEEP_EVENTS) later deletes old events
 *     of ended trees: the holes it leaves are below what readers have seen
 *     or are skipped by them, and sequences are never reused.
 *   - The events of one unit of work keep their array order, and units of
 *     work on one root (serialised by its lock) keep their commit order,
 *     so per-instance order is kept.
 *   - A call returns every matching event committed before it started
 *     (up to limit), so a caller reads its own writes. Postgres only: if
 *     sequencing is stuck behind another session for about a second the
 *     call returns what is numbered so far instead (fewer events, never
 *     a gap); the next call catches up.
 *
 * How. Memory: sequences are assigned at write time under the store's one
 * mutex, which the unit of work holds until commit; a rollback gives them
 * back. Postgres: writers insert events unnumbered; the sequencer (one
 * statement, one batch at a time across all replicas under an advisory
 * lock, see migrations/0001_init.sql) numbers the committed ones in
 * insertion order. This call runs the sequencer first (a no-op when
 * nothing is pending), so readers drive sequencing and no background
 * thread is needed for correctness.
 */
typedef struct wf_event_filter {
    const char *instance_id;
    const char *definition_key;
    const char *const *types;
    size_t n_types;
} wf_event_filter;

wf_code wf_store_read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after_sequence,
                             const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                             wf_error *err);

/* Numbers every committed event that has no sequence yet, in batches (a
 * background tick may call it to keep sequencing ahead of readers; nobody
 * has to). ctx->tenant is ignored: sequencing is global. Stops at the
 * deadline having kept the batches done. Memory store: a no-op. */
wf_code wf_store_sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err);

/* ---- wake-ups ------------------------------------------------------------
 *
 * Channels, the same on both stores:
 *   "wf_events", payload the root ids of the events written,
 *     space-separated, each once: a committed transaction wrote events of
 *     those roots. Past 32 roots, payload "" (any root).
 *   "wf_jobs", payload the job type: a committed transaction made a job
 *     activatable (inserted it ACTIVATABLE, or updated it to ACTIVATABLE
 *     with a state, activatable_at or job type it did not have before).
 *     Payload "" means "any type" (see below). A job whose lease expires,
 *     or whose activatable_at arrives, notifies nobody: pollers also need
 *     a timer.
 * Notifications are hints: one commit gives at most one per distinct
 * (channel, payload); they carry no tenant; a rollback gives none.
 * Postgres sends them after commit, outside the writing transaction,
 * coalescing the commits of a few milliseconds into one notification per
 * channel and payload (the roots of wf_events joined; past 32 job types,
 * wf_jobs ""). After
 * the Postgres listener reconnects (notifications sent while it was down
 * are lost) it calls fn once with ("wf_events", "") and ("wf_jobs", "") so
 * that waiters re-check.
 */

/* Receives one notification. channel and payload are valid only during
 * the call. It must be cheap and must not block (wake waiters and return):
 * Postgres calls it on the store's listener thread, so a slow callback
 * delays every later notification; the memory store calls it on the
 * committing thread right after the commit, with no store lock held. It
 * must not call wf_store_free. */
typedef void (*wf_store_listen_fn)(void *arg, const char *channel, const char *payload);

/* Delivers notifications of commits on this store (memory) or on any
 * store on the same database, i.e. every replica (Postgres), to fn(arg,
 * ...) until wf_store_free. Call at most once per store, before sharing it
 * between threads.
 * Postgres: starts a thread with one dedicated connection (outside the
 * pool) that LISTENs on both channels; when this returns the listener is
 * listening, or Postgres was unreachable and it keeps retrying with
 * back-off (250 ms doubling to 2 s, one log line per outage). It
 * reconnects the same way after a restart. WF_E_INTERNAL when called twice
 * or when the thread cannot start. */
wf_code wf_store_set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err);

#endif /* WF_STORE_H */
