/*
 * pg/pg_int.h: what the files of the Postgres store share (pg/store.c,
 * pg/stmts.c, pg/tx.c, pg/reads.c, pg/migrate.c, pg/listen.c); see
 * pg/store.c for the design. Internal to server/store.
 */
#ifndef WF_STORE_PG_INT_H
#define WF_STORE_PG_INT_H

#include "pg/pool.h"
#include "store_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The statements of pg/stmts.c (wf_store_pg_statements), by id. */
enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_TIMEOUT_LOCAL,
    S_TIMEOUT_SESSION,
    S_PING,
    S_LOCK_ROOT,
    S_ROOT_OF,
    S_AGG_INSTANCES,
    S_AGG_TASKS,
    S_AGG_TOKENS,
    S_AGG_WORK_ITEMS,
    S_AGG_JOBS,
    S_AGG_TIMERS,
    S_AGG_SUBS,
    S_INSERT_INSTANCE,
    S_UPDATE_INSTANCE,
    S_UPDATE_INSTANCE_CHECKED,
    S_UPSERT_TASK,
    S_UPSERT_TOKEN,
    S_UPSERT_WORK_ITEM,
    S_UPSERT_JOB,
    S_UPSERT_TIMER,
    S_UPSERT_SUB,
    S_UPSERT_SIGNAL,
    S_INSERT_EVENTS,
    S_DEL_TOKEN,
    S_DEL_JOB,
    S_DEL_TIMER,
    S_DEL_SUB,
    S_IDEM_GET,
    S_IDEM_PUT,
    S_IDEM_AMEND,
    S_PUT_DEFINITION,
    S_GET_DEFINITION,
    S_CONSUME_SIGNAL,
    S_CONSUME_SIGNAL_INSTANCE,
    S_CONSUME_SIGNAL_AGGREGATE,
    S_LOCK_CORRELATION,
    S_SUB_AWAITED,
    S_AGGREGATE_LIVE,
    S_GET_INSTANCE,
    S_GET_TASK,
    S_GET_JOB_BY_KEY,
    /* Six per shape, in the order of wf_store_pg__list_tasks: by creation, priority
     * and due key, each ascending then descending. */
    S_LIST_TASKS_USER,
    S_LIST_TASKS_GROUP = S_LIST_TASKS_USER + 6,
    S_LIST_TASKS_ALL = S_LIST_TASKS_GROUP + 6,
    S_LIST_INSTANCES_AGGREGATE = S_LIST_TASKS_ALL + 6,
    S_LIST_INSTANCES_STARTED_BY,
    S_LIST_INSTANCES_DEFINITION,
    S_LIST_INSTANCES_ALL,
    S_LIST_INSTANCES_VARIABLES,
    /* The same five in the same order, newest first
     * (ListInstancesRequest.newest_first). */
    S_LIST_INSTANCES_AGGREGATE_NEWEST,
    S_LIST_INSTANCES_STARTED_BY_NEWEST,
    S_LIST_INSTANCES_DEFINITION_NEWEST,
    S_LIST_INSTANCES_ALL_NEWEST,
    S_LIST_INSTANCES_VARIABLES_NEWEST,
    S_LIST_INCIDENTS_DEFINITION,
    S_LIST_INCIDENTS_ALL,
    S_LIST_DEFINITIONS,
    S_LIST_WORK_ITEMS,
    S_LIST_SIGNALS_ID,
    S_LIST_SIGNALS_INSTANCE,
    S_LIST_SIGNALS_AGGREGATE,
    S_LIST_SIGNALS_ALL,
    S_ACTIVATE_JOBS,
    S_ACTIVATE_JOBS_FAIR,
    S_JOBS_KEYED,
    S_CLAIM_TIMERS,
    S_CLAIM_TIMERS_T,
    S_EXPIRED_LEASES,
    S_EXPIRED_LEASES_T,
    S_EXPIRE_SIGNALS,
    S_EXPIRE_SIGNALS_T,
    S_SWEEP_SIGNALS,
    S_SWEEP_SIGNALS_T,
    S_SWEEP_IDEMPOTENCY,
    S_SWEEP_IDEMPOTENCY_T,
    S_SWEEP_EVENTS,
    S_SWEEP_EVENTS_T,
    S_SWEEP_DELIVERIES,
    S_SWEEP_DELIVERIES_T,
    S_FIND_SUBS_INSTANCE,
    S_FIND_SUBS_AGGREGATE,
    S_READ_EVENTS_INSTANCE,
    S_READ_EVENTS_ALL,
    S_SEQUENCE,
    S_COUNT_BACKLOG,
    S_PUT_BATCH,
    S_GET_BATCH,
    S_UPDATE_BATCH,
    S_LIST_BATCHES,
    S_CLAIM_BATCHES,
    S_CLAIM_BATCHES_T,
    S_PUT_SCHEDULE,
    S_GET_SCHEDULE,
    S_UPDATE_SCHEDULE,
    S_DELETE_SCHEDULE,
    S_LIST_SCHEDULES,
    S_CLAIM_SCHEDULES,
    S_CLAIM_SCHEDULES_T,
    S_PUT_SCHEDULE_RUN,
    S_SETTLE_SCHEDULE_RUN,
    S_LIST_SCHEDULE_RUNS,
    S_GET_RESOURCE,
    S_PUT_RESOURCE,
    S_UPDATE_RESOURCE,
    S_DELETE_RESOURCE,
    S_LIST_RESOURCES,
    S_FANOUT_TARGETS,
    S_TAKE_DELIVERY,
    S_GET_SIGNAL,
    S_CLAIM_DELIVERIES,
    S_FIND_QUEUED,
    S_COUNT_DELIVERIES,
    S_FLEET_COUNTS,
    S_FLEET_INSTANCES,
    S_PENDING_DELIVERIES,
    S_LISTEN_EVENTS,
    S_LISTEN_JOBS,
    S_NOTIFY,
    S_ANALYZE_GROWN,
    S_MIG_LOCK,
    S_MIG_UNLOCK,
    S_MIG_TABLE,
    S_MIG_HAS,
    S_MIG_MAX,
    S_MIG_RECORD,
    S_COUNT_
};
typedef struct pg_listener pg_listener;

/* Notifier: the wake-ups this store's commits owe other replicas, sent
 * after commit by one thread (see "notifier" below). At most
 * NOTIFY_TYPES job types are named; past that, payload "" (any type). */
#define NOTIFY_TYPES 32
#define NOTIFY_INTERVAL_MS 5 /* at most one NOTIFY transaction per interval */
#define NOTIFY_RETRY_MS 250  /* after a failed send */
#define NOTIFY_SEND_MS 1000  /* deadline of one send */
/* Statistics of growing tables (migrations/0015): a backlog table of at
 * least ANALYZE_MIN_BYTES that was never analysed, or has grown
 * ANALYZE_GROWTH times since, is analysed by the notifier's thread,
 * checked at most once per ANALYZE_CHECK_MS (after commits). */
#define ANALYZE_MIN_BYTES (64 * 1024)
#define ANALYZE_GROWTH 4
#define ANALYZE_CHECK_MS 1000
#define ANALYZE_SEND_MS 10000

typedef struct pg_notifier {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; signalled by a note and by stop */
    bool pending, events, any_type, any_root, stop, started;
    const char *types[NOTIFY_TYPES]; /* malloc'd, distinct */
    size_t n_types;
    const char *roots[WF_STORE_EVENT_ROOTS]; /* malloc'd, distinct: the events' roots */
    size_t n_roots;
    int64_t next_ms;         /* monotonic: no send before */
    uint64_t sent;           /* NOTIFY transactions sent (tests, logs) */
    bool analysed;           /* every backlog table has statistics (0015) */
    int64_t next_analyse_ms; /* monotonic: no check before */
    pthread_t thread;
} pg_notifier;

/* Definition versions never change once committed, so reads by key and
 * version are answered from memory after the first. A row enters only
 * once the transaction that read it has committed: a version written by a
 * transaction that rolls back is handed out again by the next deploy. */
#define DEFS_MAX 256
#define DEFS_SEEN 4 /* rows a unit of work remembers for the cache */

typedef struct pg_store {
    wf_store base;
    wf_store_pg_pool *pool;
    pg_listener *listener; /* NULL until wf_store_set_listener */
    pg_notifier notifier;
    pthread_mutex_t defs_mu;
    wf_definition_row defs[DEFS_MAX]; /* malloc'd copies, tenant set */
    size_t n_defs;
} pg_store;

/* A request lookup riding on a flight (wf_tx_idempotency_prefetch). */
struct wf_store_pg_lookup {
    int slot;
    const char *request_id;
    wf_arena *arena;
    wf_idempotency_row *out;
    bool *found;
};

typedef struct pg_tx {
    wf_tx base;
    wf_store_pg_conn *c;
    const wf_definition_row *seen[DEFS_SEEN]; /* read here; cached at commit */
    int n_seen;
    /* What the commit owes the notifier: events written, job types made
     * activatable (ctx arena; any_type when more than fit). */
    bool wrote_events, any_type, any_root;
    const char *types[NOTIFY_TYPES];
    size_t n_types;
    const char *roots[WF_STORE_EVENT_ROOTS]; /* the roots of the events written */
    size_t n_roots;
    struct wf_store_pg_lookup lookup; /* wf_tx_idempotency_prefetch */
    bool defer;                       /* wf_tx_defer_writes */
} pg_tx;

/* ---- parameters ---------------------------------------------------------- */

#define MAXP 32

/* Statement parameters; text except bytea (binary). Strings are borrowed;
 * numbers are formatted into the arena. */
typedef struct params {
    const char *v[MAXP];
    int len[MAXP];
    int fmt[MAXP];
    int n;
    wf_arena *a;
    bool oom;
} params;

/* pg/store.c: lifecycle and the definition cache */
int wf_store_pg__defs_get(pg_store *s, const wf_store_ctx *ctx, const char *key, int32_t version,
                          wf_definition_row *out);
void wf_store_pg__defs_put(pg_store *s, const wf_definition_row *row);

/* pg/tx.c: parameters, statements in flights, connections, the unit of work */
void wf_store_pg__p_str(params *p, const char *s);
void wf_store_pg__p_i64(params *p, int64_t x);
void wf_store_pg__p_bool(params *p, bool b);
void wf_store_pg__p_text_array(params *p, const char *const *strs, size_t n);
void wf_store_pg__p_int_array(params *p, const int *v, size_t n);
/* The fields of row (of d's type) in column order, tenant forced, field
 * skip left out (-1: none). */
void wf_store_pg__p_row(params *p, const wf_row_desc *d, const void *row, const char *tenant,
                        int skip);
int64_t wf_store_pg__timeout_for(int64_t deadline_ms);
wf_code wf_store_pg__run(wf_store_pg_conn *c, int id, const params *p, int64_t deadline,
                         PGresult **res, wf_error *err);
wf_code wf_store_pg__run_cmd(wf_store_pg_conn *c, int id, const params *p, int64_t deadline,
                             long *affected, wf_error *err);
/* Statement first (pf) and then id (p) in one flight: first's result in
 * *first_res (the caller's to PQclear), id's rows as wf_store_pg__run_rows
 * gives them. */
wf_code wf_store_pg__run_then_rows(wf_store_pg_conn *c, int first, const params *pf,
                                   PGresult **first_res, int id, const params *p, int64_t deadline,
                                   const wf_row_desc *d, wf_arena *a, void *rows, size_t *n,
                                   wf_error *err);
wf_code wf_store_pg__run_rows(wf_store_pg_conn *c, int id, const params *p, int64_t deadline,
                              const wf_row_desc *d, wf_arena *a, void *rows, size_t *n,
                              wf_error *err);
void wf_store_pg__conn_put(pg_store *s, wf_store_pg_conn *c);
wf_code wf_store_pg__conn_get(pg_store *s, const wf_store_ctx *ctx, wf_store_pg_conn **out,
                              wf_error *err);
wf_code wf_store_pg__begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err);
wf_code wf_store_pg__commit(wf_tx *t, wf_error *err);
void wf_store_pg__defer_writes(wf_tx *t);
void wf_store_pg__rollback(wf_tx *t);
params wf_store_pg__p_tenant(const wf_store_ctx *ctx, const char *x);
wf_code wf_store_pg__lock_root(wf_tx *t, const char *instance_id, const char *root_hint,
                               wf_aggregate *out, wf_error *err);
wf_code wf_store_pg__apply(wf_tx *t, const wf_store_changes *c, wf_error *err);
wf_code wf_store_pg__idem_get(wf_tx *t, const char *method, const char *request_id,
                              wf_idempotency_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__idem_prefetch(wf_tx *t, const char *method, const char *request_id,
                                   wf_idempotency_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err);
wf_code wf_store_pg__idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err);
wf_code wf_store_pg__commit_recorded(wf_tx *t, const wf_idempotency_row *in, bool amend,
                                     wf_error *err);
wf_code wf_store_pg__put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version,
                                    wf_error *err);
wf_code wf_store_pg__read_definition(wf_store_pg_conn *c, const wf_store_ctx *ctx, const char *key,
                                     int32_t version, wf_definition_row *out, bool *found,
                                     wf_error *err);
wf_code wf_store_pg__tx_get_definition(wf_tx *t, const char *key, int32_t version,
                                       wf_definition_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__consume_signal(wf_tx *t, const char *name, const char *instance_id,
                                    const char *agg_type, const char *agg_id, const char *consumer,
                                    const char *transition_id, int64_t now, wf_signal_row *out,
                                    bool *found, wf_error *err);
wf_code wf_store_pg__lock_correlation(wf_tx *t, const char *name, const char *agg_type,
                                      const char *agg_id, bool *awaited, wf_error *err);
wf_code wf_store_pg__aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live,
                                    wf_error *err);

/* pg/reads.c: reads outside a unit of work, cross-instance work, events */
wf_code wf_store_pg__query(pg_store *s, const wf_store_ctx *ctx, int id, const params *p,
                           const wf_row_desc *d, void *rows, size_t *n, wf_error *err);
/* A page of a tenant's rows by statement id, whose parameters are the
 * tenant, the cursor (c_num, c_str; past every row when !has) and limit. */
wf_code wf_store_pg__query_page(pg_store *s, const wf_store_ctx *ctx, int id, const wf_row_desc *d,
                                size_t limit, bool has, int64_t c_num, const char *c_str,
                                void *rows, size_t *n, wf_error *err);
/* Runs statement id with (tenant, key) as its own transaction; *found: it
 * changed a row. */
wf_code wf_store_pg__delete_keyed(pg_store *s, const wf_store_ctx *ctx, int id, const char *key,
                                  bool *found, wf_error *err);
wf_code wf_store_pg__get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                    int32_t version, wf_definition_row *out, bool *found,
                                    wf_error *err);
wf_code wf_store_pg__get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                  wf_instance_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__get_task(wf_store *st, const wf_store_ctx *ctx, const char *id,
                              wf_task_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                    wf_job_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                                size_t limit, const wf_task_keyset *after, wf_task_row **rows,
                                size_t *n, wf_error *err);
wf_code wf_store_pg__list_incidents(wf_store *st, const wf_store_ctx *ctx,
                                    const wf_incident_filter *f, size_t limit, bool has,
                                    int64_t c_num, const char *c_str, wf_instance_row **rows,
                                    size_t *n, wf_error *err);
wf_code wf_store_pg__list_instances(wf_store *st, const wf_store_ctx *ctx,
                                    const wf_instance_filter *f, size_t limit, bool has,
                                    int64_t c_num, const char *c_str, wf_instance_row **rows,
                                    size_t *n, wf_error *err);
wf_code wf_store_pg__list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                      int64_t c_num, const char *c_str, wf_definition_row **rows,
                                      size_t *n, wf_error *err);
wf_code wf_store_pg__list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                                  size_t limit, bool has, int64_t c_num, const char *c_str,
                                  wf_signal_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                                     unsigned states, size_t limit, bool has, int64_t c_num,
                                     const char *c_str, wf_work_item_row **rows, size_t *n,
                                     wf_error *err);
wf_code wf_store_pg__activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                                   const char *worker, size_t max, size_t max_bytes,
                                   int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
                                   wf_error *err);
wf_code wf_store_pg__tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker,
                                      size_t max, size_t max_bytes, int64_t lease_ms, int64_t now,
                                      wf_job_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant,
                                      int64_t now, size_t limit, int64_t claim_ms,
                                      wf_timer_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                         size_t limit, wf_job_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                    size_t limit, size_t *n, wf_error *err);
wf_code wf_store_pg__sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind,
                           int64_t before, size_t limit, size_t *n, wf_error *err);
wf_code wf_store_pg__find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                        const char *instance_id, const char *agg_type,
                                        const char *agg_id, wf_subscription_row **rows, size_t *n,
                                        wf_error *err);
wf_code wf_store_pg__read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after,
                                 const wf_event_filter *f, size_t limit, wf_event_row **rows,
                                 size_t *n, wf_error *err);
wf_code wf_store_pg__count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                   size_t max_types, wf_store_counts *out, wf_error *err);
wf_code wf_store_pg__sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err);

/* pg/batch.c: batch operations */
wf_code wf_store_pg__put_batch(wf_tx *t, const wf_batch_row *in, wf_error *err);
wf_code wf_store_pg__get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id,
                               wf_batch_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                                  bool *found, wf_error *err);
wf_code wf_store_pg__list_batches(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                  int64_t c_num, const char *c_str, wf_batch_row **rows, size_t *n,
                                  wf_error *err);
wf_code wf_store_pg__claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                                   int64_t now, int64_t lease_ms, size_t limit, wf_batch_row **rows,
                                   size_t *n, wf_error *err);

/* pg/migrate.c: migrations */
wf_code wf_store_pg__migrate(pg_store *s, int *version, wf_error *err);

/* pg/listen.c: the notifier and the listener */
void wf_store_pg__notes_of_tx(pg_tx *tx);
void wf_store_pg__tx_note_type(pg_tx *tx, const char *type);
void wf_store_pg__tx_note_root(pg_tx *tx, const char *root_id);
bool wf_store_pg__notifier_start(pg_store *s);
void wf_store_pg__notifier_stop(pg_store *s);
void wf_store_pg__listener_stop(pg_listener *l);
wf_code wf_store_pg__set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err);

/* pg/schedules.c: schedules and their runs */
wf_code wf_store_pg__put_schedule(wf_tx *t, const wf_schedule_row *in, wf_error *err);
wf_code wf_store_pg__get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                  wf_schedule_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__update_schedule(wf_store *st, const wf_store_ctx *ctx,
                                     const wf_schedule_row *in, bool *found, wf_error *err);
wf_code wf_store_pg__delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                     bool *found, wf_error *err);
wf_code wf_store_pg__list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                    int64_t c_num, const char *c_str, wf_schedule_row **rows,
                                    size_t *n, wf_error *err);
wf_code wf_store_pg__claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                                     int64_t now, int64_t lease_ms, size_t limit,
                                     wf_schedule_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__put_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err);
wf_code wf_store_pg__settle_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err);
wf_code wf_store_pg__list_schedule_runs(wf_store *st, const wf_store_ctx *ctx,
                                        const char *schedule_id, size_t limit, bool has,
                                        int64_t c_num, wf_schedule_run_row **rows, size_t *n,
                                        wf_error *err);
/* pg/resources.c: the resources of each tenant */
wf_code wf_store_pg__get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                  wf_resource_row *out, bool *found, wf_error *err);
wf_code wf_store_pg__save_resource(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                                   bool *found, wf_error *err);
wf_code wf_store_pg__delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                     bool *found, wf_error *err);
wf_code wf_store_pg__list_resources(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                    int64_t c_num, const char *c_str, wf_resource_row **rows,
                                    size_t *n, wf_error *err);
/* fanout.c: the fan-out of a signal sent to an aggregate */
wf_code wf_store_pg__fanout_targets(wf_tx *t, const char *log_id, const char *name,
                                    const char *agg_type, const char *agg_id, int64_t before_at,
                                    const char *before_id, int64_t received_at, int64_t now,
                                    size_t page, wf_fanout_out *out, wf_error *err);
wf_code wf_store_pg__take_delivery(wf_tx *t, const char *log_id, const char *root_id,
                                   const char *instance_id, wf_delivery_state state, int64_t now,
                                   bool *taken, wf_error *err);
wf_code wf_store_pg__pending_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *agg_type,
                                        const char *agg_id, size_t limit, wf_delivery_row **rows,
                                        size_t *n, wf_error *err);
wf_code wf_store_pg__tx_get_signal(wf_tx *t, const char *id, wf_signal_row *out, bool *found,
                                   wf_error *err);
wf_code wf_store_pg__claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                      int64_t lease_ms, size_t limit, wf_delivery_row **rows,
                                      size_t *n, wf_error *err);
wf_code wf_store_pg__find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                         wf_signal_row **rows, size_t *n, wf_error *err);
wf_code wf_store_pg__count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *log_id,
                                      wf_delivery_counts *out, wf_error *err);

/* pg/fleet.c */
wf_code wf_store_pg__fleet_counts(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                                  int32_t version, wf_fleet_counts *out, wf_error *err);
wf_code wf_store_pg__fleet_instances(wf_store *st, const wf_store_ctx *ctx,
                                     const char *definition_key, int32_t version,
                                     wf_fleet_kind kind, const char *element, const char *after,
                                     size_t limit, char ***ids, size_t *n, wf_error *err);

#endif
