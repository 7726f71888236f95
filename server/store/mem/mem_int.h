/*
 * mem/mem_int.h: what the files of the memory store share (mem/store.c,
 * mem/tx.c, mem/reads.c, mem/work.c); mem/store.c explains the design.
 * Internal to server/store.
 */
#ifndef WF_STORE_MEM_INT_H
#define WF_STORE_MEM_INT_H

#include "store_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct mslot {
    char *key;
    void *row;
} mslot;

typedef struct mtable {
    const wf_row_desc *d;
    mslot *v; /* sorted by key */
    size_t n, cap;
} mtable;

typedef struct mundo {
    mtable *t;
    char *key; /* owned copy */
    void *old; /* the row before the write; NULL when it did not exist */
} mundo;

typedef struct mem_tx {
    wf_tx base;
    mundo *undo;
    size_t n_undo, cap_undo;
    size_t ev_mark;    /* events before the transaction */
    int64_t seq_mark;  /* last sequence before the transaction */
    bool wrote_events; /* notify "wf_events" at commit */
    /* the roots of the events written (malloc'd copies); any_root when
     * more than fit */
    const char *event_roots[WF_STORE_EVENT_ROOTS];
    size_t n_event_roots;
    bool any_root;
    char **job_types; /* distinct types made activatable: notify "wf_jobs" */
    size_t n_job_types, cap_job_types;
    char **roots; /* the roots locked (ids, owned), held until the end */
    size_t n_roots, cap_roots;
    bool serial;          /* took a correlation lock: never pauses */
    bool paused;          /* let the mutex go (wf_store_mem__pause) */
    struct mem_tx *pnext; /* in mem_store.paused while paused */
} mem_tx;

typedef struct mem_store {
    wf_store base;
    pthread_mutex_t mu;
    mem_tx *tx;            /* the transaction holding mu, if any */
    mem_tx *paused;        /* transactions paused with roots locked */
    pthread_cond_t unheld; /* broadcast when a paused transaction ends */
    mtable defs, insts, tasks, tokens, work_items, jobs, timers, subs, signals, idem, batches,
        schedules, schedule_runs, deliveries, resources;
    wf_event_row *events; /* in sequence order */
    size_t n_events, cap_events;
    int64_t last_seq;
    wf_store_listen_fn listen_fn; /* set once by wf_store_set_listener; under mu */
    void *listen_arg;
} mem_store;

#define F(row, off) ((const char *)(row) + (off))

typedef bool (*mpred)(mem_store *m, const void *row, const void *arg);
typedef int (*mcmp)(const void *a, const void *b); /* on (const void *const *) */

/* Keyset position: rows strictly after (num, str) in (num, id) order. */
typedef struct keyset {
    bool has;
    int64_t num;
    const char *str;
} keyset;

typedef struct signal_match {
    const char *name, *instance_id, *agg_type, *agg_id;
    int64_t now;
} signal_match;

/* Comparators on (number, id) keys, matching the ORDER BY of the
 * Postgres queries; each is declared below. */
#define CMP_NUM_ID(fn, T, num)                                                                     \
    int fn(const void *a, const void *b)                                                           \
    {                                                                                              \
        const T *x = *(const T *const *)a, *y = *(const T *const *)b;                              \
        int c = wf_store_mem__i64_cmp(x->num, y->num);                                             \
        return c != 0 ? c : strcmp(x->id, y->id);                                                  \
    }

/* mem/store.c: tables, transactional writes, selection, lifecycle */
bool wf_store_mem__eq(const char *a, const char *b);
int wf_store_mem__i64_cmp(int64_t a, int64_t b);
wf_code wf_store_mem__lock(mem_store *m, int64_t deadline_ms, wf_error *err);
void wf_store_mem__until(int64_t deadline_ms, struct timespec *ts);
/* Whether a paused transaction other than self holds root (self may be NULL). */
bool wf_store_mem__root_held(const mem_store *m, const char *root, const mem_tx *self);
char *wf_store_mem__make_key(const char *tenant, const char *a, const char *b);
void *wf_store_mem__mt_get(const mtable *t, const char *tenant, const char *a, const char *b);
void wf_store_mem__row_free(const wf_row_desc *d, void *row);
void *wf_store_mem__row_new(const wf_row_desc *d, const void *src, const char *tenant);
bool wf_store_mem__mt_put(mtable *t, char *key, void *row, void **old);
void *wf_store_mem__mt_take(mtable *t, const char *key);
/* Copies the row (ctx->tenant, id) of t into out (ctx->arena), under the
 * store's lock; *found says whether there was one. */
wf_code wf_store_mem__mt_get_copy(mem_store *m, const mtable *t, const wf_store_ctx *ctx,
                                  const char *id, void *out, bool *found, wf_error *err);
/* Replaces the row (tenant, id) of t with a copy of src, outside any
 * transaction (the caller holds the lock: activation, claims and the
 * rows outside units of work are atomic under the mutex). */
wf_code wf_store_mem__mt_replace(mtable *t, const char *tenant, const char *id, const void *src,
                                 wf_error *err);
void wf_store_mem__mt_tenant_range(const mtable *t, const char *tenant, size_t *lo, size_t *hi);
wf_code wf_store_mem__tx_put(mem_tx *tx, mtable *t, const void *src, const char *id, const char *b,
                             wf_error *err);
wf_code wf_store_mem__tx_del(mem_tx *tx, mtable *t, const char *id, wf_error *err);
wf_code wf_store_mem__gather(mem_store *m, mtable *t, const char *tenant, mpred pred,
                             const void *arg, mcmp cmp, size_t limit, void ***out, size_t *n,
                             wf_error *err);
wf_code wf_store_mem__copy_out(const wf_row_desc *d, void *const *src, size_t n, wf_arena *a,
                               void **rows, wf_error *err);
wf_code wf_store_mem__select_rows(mem_store *m, mtable *t, const char *tenant, mpred pred,
                                  const void *arg, mcmp cmp, size_t limit, wf_arena *a, void *rows,
                                  size_t *n, wf_error *err);
int wf_store_mem__cmp_definition(const void *a, const void *b);
bool wf_store_mem__after(const keyset *k, int64_t num, const char *id);
/* The keyset before k: (num, id) < (k->num, k->str), for descending listings. */
bool wf_store_mem__before(const keyset *k, int64_t num, const char *id);
int wf_store_mem__cmp_instance(const void *a, const void *b);
int wf_store_mem__cmp_incident(const void *a, const void *b);
int wf_store_mem__cmp_task(const void *a, const void *b);
int wf_store_mem__cmp_token(const void *a, const void *b);
int wf_store_mem__cmp_work_item(const void *a, const void *b);
int wf_store_mem__cmp_job(const void *a, const void *b);
int wf_store_mem__cmp_job_activation(const void *a, const void *b);
int wf_store_mem__cmp_timer(const void *a, const void *b);
int wf_store_mem__cmp_sub(const void *a, const void *b);
int wf_store_mem__cmp_signal(const void *a, const void *b);

/* mem/tx.c: the unit of work */
wf_code wf_store_mem__begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err);
wf_code wf_store_mem__commit(wf_tx *tx, wf_error *err);
void wf_store_mem__rollback(wf_tx *tx);
void wf_store_mem__pause(wf_tx *tx);
void wf_store_mem__resume(wf_tx *tx);
wf_code wf_store_mem__lock_root(wf_tx *t, const char *instance_id, const char *root_hint,
                                wf_aggregate *out, wf_error *err);
wf_code wf_store_mem__apply(wf_tx *t, const wf_store_changes *c, wf_error *err);
wf_code wf_store_mem__idem_get(wf_tx *t, const char *method, const char *request_id,
                               wf_idempotency_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err);
wf_code wf_store_mem__idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err);
const wf_definition_row *wf_store_mem__find_definition(mem_store *m, const char *tenant,
                                                       const char *key, int32_t version);
wf_code wf_store_mem__put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version,
                                     wf_error *err);
wf_code wf_store_mem__read_definition(mem_store *m, const wf_store_ctx *ctx, const char *key,
                                      int32_t version, wf_definition_row *out, bool *found,
                                      wf_error *err);
wf_code wf_store_mem__tx_get_definition(wf_tx *t, const char *key, int32_t version,
                                        wf_definition_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__consume_signal(wf_tx *t, const char *name, const char *instance_id,
                                     const char *agg_type, const char *agg_id, const char *consumer,
                                     const char *transition_id, int64_t now, wf_signal_row *out,
                                     bool *found, wf_error *err);

/* mem/reads.c: reads and listings */
wf_code wf_store_mem__get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                     int32_t version, wf_definition_row *out, bool *found,
                                     wf_error *err);
wf_code wf_store_mem__get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                   wf_instance_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__get_task(wf_store *st, const wf_store_ctx *ctx, const char *id,
                               wf_task_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key,
                                     wf_job_row *out, bool *found, wf_error *err);
bool wf_store_mem__in_list(const char *s, const char *const *list, size_t n);
wf_code wf_store_mem__list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                                 size_t limit, const wf_task_keyset *after, wf_task_row **rows,
                                 size_t *n, wf_error *err);
wf_code wf_store_mem__list_instances(wf_store *st, const wf_store_ctx *ctx,
                                     const wf_instance_filter *f, size_t limit, bool has,
                                     int64_t c_num, const char *c_str, wf_instance_row **rows,
                                     size_t *n, wf_error *err);
wf_code wf_store_mem__list_incidents(wf_store *st, const wf_store_ctx *ctx,
                                     const wf_incident_filter *f, size_t limit, bool has,
                                     int64_t c_num, const char *c_str, wf_instance_row **rows,
                                     size_t *n, wf_error *err);
wf_code wf_store_mem__list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                       bool has, int64_t c_num, const char *c_str,
                                       wf_definition_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                                   size_t limit, bool has, int64_t c_num, const char *c_str,
                                   wf_signal_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__list_work_items(wf_store *st, const wf_store_ctx *ctx,
                                      const char *instance_id, unsigned states, size_t limit,
                                      bool has, int64_t c_num, const char *c_str,
                                      wf_work_item_row **rows, size_t *n, wf_error *err);

/* mem/work.c: cross-instance work, the scheduler's passes, correlation, backlog counts */
wf_code wf_store_mem__activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                                    const char *worker, size_t max, size_t max_bytes,
                                    int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
                                    wf_error *err);
wf_code wf_store_mem__tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker,
                                       size_t max, size_t max_bytes, int64_t lease_ms, int64_t now,
                                       wf_job_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant,
                                       int64_t now, size_t limit, int64_t claim_ms,
                                       wf_timer_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                          size_t limit, wf_job_row **rows, size_t *n,
                                          wf_error *err);
wf_code wf_store_mem__expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                     size_t limit, size_t *n, wf_error *err);
wf_code wf_store_mem__sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind,
                            int64_t before, size_t limit, size_t *n, wf_error *err);
wf_code wf_store_mem__find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                         const char *instance_id, const char *agg_type,
                                         const char *agg_id, wf_subscription_row **rows, size_t *n,
                                         wf_error *err);
wf_code wf_store_mem__read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after_seq,
                                  const wf_event_filter *f, size_t limit, wf_event_row **rows,
                                  size_t *n, wf_error *err);
wf_code wf_store_mem__sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err);
wf_code wf_store_mem__set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err);
wf_code wf_store_mem__lock_correlation(wf_tx *t, const char *name, const char *agg_type,
                                       const char *agg_id, bool *awaited, wf_error *err);
wf_code wf_store_mem__aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live,
                                     wf_error *err);
wf_code wf_store_mem__count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                    size_t max_types, wf_store_counts *out, wf_error *err);

/* mem/batch.c: batch operations */
wf_code wf_store_mem__put_batch(wf_tx *t, const wf_batch_row *in, wf_error *err);
wf_code wf_store_mem__get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                wf_batch_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                                   bool *found, wf_error *err);
wf_code wf_store_mem__list_batches(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                   int64_t c_num, const char *c_str, wf_batch_row **rows, size_t *n,
                                   wf_error *err);
wf_code wf_store_mem__claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                                    int64_t now, int64_t lease_ms, size_t limit,
                                    wf_batch_row **rows, size_t *n, wf_error *err);

/* mem/resources.c: the resources of each tenant */
wf_code wf_store_mem__get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                   wf_resource_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__save_resource(wf_store *st, const wf_store_ctx *ctx,
                                    const wf_resource_row *in, bool *found, wf_error *err);
wf_code wf_store_mem__delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                      bool *found, wf_error *err);
wf_code wf_store_mem__list_resources(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                     int64_t c_num, const char *c_str, wf_resource_row **rows,
                                     size_t *n, wf_error *err);

/* mem/schedules.c: schedules and their runs */
wf_code wf_store_mem__put_schedule(wf_tx *t, const wf_schedule_row *in, wf_error *err);
wf_code wf_store_mem__get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                   wf_schedule_row *out, bool *found, wf_error *err);
wf_code wf_store_mem__update_schedule(wf_store *st, const wf_store_ctx *ctx,
                                      const wf_schedule_row *in, bool *found, wf_error *err);
wf_code wf_store_mem__delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                                      bool *found, wf_error *err);
wf_code wf_store_mem__list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                                     int64_t c_num, const char *c_str, wf_schedule_row **rows,
                                     size_t *n, wf_error *err);
wf_code wf_store_mem__claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                                      int64_t now, int64_t lease_ms, size_t limit,
                                      wf_schedule_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__put_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err);
wf_code wf_store_mem__settle_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err);
wf_code wf_store_mem__list_schedule_runs(wf_store *st, const wf_store_ctx *ctx,
                                         const char *schedule_id, size_t limit, bool has,
                                         int64_t c_num, wf_schedule_run_row **rows, size_t *n,
                                         wf_error *err);
/* fanout.c: the fan-out of a signal sent to an aggregate */
/* Whether deliveries to the aggregate are pending or a signal to it
 * received before (before_at, before_id) is QUEUED. */
bool wf_store_mem__aggregate_pending(mem_store *m, const char *tenant, const char *agg_type,
                                     const char *agg_id, int64_t before_at, const char *before_id);
wf_code wf_store_mem__fanout_targets(wf_tx *t, const char *log_id, const char *name,
                                     const char *agg_type, const char *agg_id, int64_t before_at,
                                     const char *before_id, int64_t received_at, int64_t now,
                                     size_t page, wf_fanout_out *out, wf_error *err);
wf_code wf_store_mem__take_delivery(wf_tx *t, const char *log_id, const char *root_id,
                                    const char *instance_id, wf_delivery_state state, int64_t now,
                                    bool *taken, wf_error *err);
wf_code wf_store_mem__pending_deliveries(wf_store *st, const wf_store_ctx *ctx,
                                         const char *agg_type, const char *agg_id, size_t limit,
                                         wf_delivery_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__tx_get_signal(wf_tx *t, const char *id, wf_signal_row *out, bool *found,
                                    wf_error *err);
wf_code wf_store_mem__claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                       int64_t lease_ms, size_t limit, wf_delivery_row **rows,
                                       size_t *n, wf_error *err);
wf_code wf_store_mem__find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                          wf_signal_row **rows, size_t *n, wf_error *err);
wf_code wf_store_mem__count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *log_id,
                                       wf_delivery_counts *out, wf_error *err);

/* mem/fleet.c */
wf_code wf_store_mem__fleet_counts(wf_store *st, const wf_store_ctx *ctx,
                                   const char *definition_key, int32_t version,
                                   wf_fleet_counts *out, wf_error *err);
wf_code wf_store_mem__fleet_instances(wf_store *st, const wf_store_ctx *ctx,
                                      const char *definition_key, int32_t version,
                                      wf_fleet_kind kind, const char *element, const char *after,
                                      size_t limit, char ***ids, size_t *n, wf_error *err);

#endif
