/*
 * store_int.h: what the two store implementations share and nobody else
 * may include: the ops table behind wf_store, the row descriptors that let
 * one piece of code copy, compare and (de)serialise every row type, and
 * the cursor helpers that make pagination identical across stores.
 */
#ifndef WF_STORE_INT_H
#define WF_STORE_INT_H

#include <stdatomic.h>

#include "store.h"

/* The cursor of a task listing: the last row of the previous page, by
 * its sort key (wf_task_sort_key; for CREATED equal to created), its
 * creation time and id. has is false on the first page. */
typedef struct wf_task_keyset {
    bool has;
    int64_t key;
    int64_t created;
    const char *id;
} wf_task_keyset;

/* The ops table. Wrappers in store.c check the common preconditions
 * (tenant present, deadline not past) before dispatching, so
 * implementations do not repeat them. */
typedef struct wf_store_ops {
    void (*destroy)(wf_store *st);
    bool (*ready)(wf_store *st);
    void (*stats)(wf_store *st, wf_store_stats *out);

    wf_code (*begin)(wf_store *st, const wf_store_ctx *ctx, wf_tx **tx, wf_error *err);
    /* root_hint may be NULL. */
    wf_code (*lock_root)(wf_tx *tx, const char *instance_id, const char *root_hint,
                         wf_aggregate *out, wf_error *err);
    wf_code (*apply)(wf_tx *tx, const wf_store_changes *c, wf_error *err);
    wf_code (*commit)(wf_tx *tx, wf_error *err);
    void (*defer_writes)(wf_tx *tx); /* optional */
    void (*pause)(wf_tx *tx);        /* optional, with resume */
    void (*resume)(wf_tx *tx);
    void (*rollback)(wf_tx *tx);
    wf_code (*idem_get)(wf_tx *tx, const char *method, const char *request_id,
                        wf_idempotency_row *out, bool *found, wf_error *err);
    wf_code (*idem_put)(wf_tx *tx, const wf_idempotency_row *in, wf_error *err);
    /* Optional (NULL: idem_get at once). */
    wf_code (*idem_prefetch)(wf_tx *tx, const char *method, const char *request_id,
                             wf_idempotency_row *out, bool *found, wf_error *err);
    /* idem_put that replaces a record of the same request (same hash). */
    wf_code (*idem_amend)(wf_tx *tx, const wf_idempotency_row *in, wf_error *err);
    /* Optional: idem_put (amend: idem_amend) then commit in one go (NULL:
     * the two calls). */
    wf_code (*commit_recorded)(wf_tx *tx, const wf_idempotency_row *in, bool amend, wf_error *err);
    wf_code (*put_definition)(wf_tx *tx, const wf_definition_row *in, int32_t *version,
                              wf_error *err);
    wf_code (*tx_get_definition)(wf_tx *tx, const char *key, int32_t version,
                                 wf_definition_row *out, bool *found, wf_error *err);
    wf_code (*consume_signal)(wf_tx *tx, const char *name, const char *instance_id,
                              const char *aggregate_type, const char *aggregate_id,
                              const char *consumer, const char *transition_id, int64_t now,
                              wf_signal_row *out, bool *found, wf_error *err);
    wf_code (*lock_correlation)(wf_tx *tx, const char *name, const char *aggregate_type,
                                const char *aggregate_id, bool *awaited, wf_error *err);
    wf_code (*aggregate_live)(wf_tx *tx, const char *aggregate_type, const char *aggregate_id,
                              bool *live, wf_error *err);

    wf_code (*get_definition)(wf_store *st, const wf_store_ctx *ctx, const char *key,
                              int32_t version, wf_definition_row *out, bool *found, wf_error *err);
    wf_code (*get_instance)(wf_store *st, const wf_store_ctx *ctx, const char *id,
                            wf_instance_row *out, bool *found, wf_error *err);
    wf_code (*get_task)(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out,
                        bool *found, wf_error *err);
    wf_code (*get_job_by_key)(wf_store *st, const wf_store_ctx *ctx, const char *key,
                              wf_job_row *out, bool *found, wf_error *err);

    /* Listings get a validated page size and a parsed cursor (has_cursor
     * false on the first page) and return up to page_size + 1 rows: the
     * wrapper trims the extra row and makes next_cursor from the last one
     * kept, so both stores page identically. */
    wf_code (*list_tasks)(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                          size_t limit, const wf_task_keyset *after, wf_task_row **rows, size_t *n,
                          wf_error *err);
    wf_code (*list_instances)(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f,
                              size_t limit, bool has_cursor, int64_t c_num, const char *c_str,
                              wf_instance_row **rows, size_t *n, wf_error *err);
    wf_code (*list_incidents)(wf_store *st, const wf_store_ctx *ctx, const wf_incident_filter *f,
                              size_t limit, bool has, int64_t c_num, const char *c_str,
                              wf_instance_row **rows, size_t *n, wf_error *err);
    wf_code (*list_definitions)(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                bool has_cursor, int64_t c_num, const char *c_str,
                                wf_definition_row **rows, size_t *n, wf_error *err);
    wf_code (*list_signals)(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                            size_t limit, bool has_cursor, int64_t c_num, const char *c_str,
                            wf_signal_row **rows, size_t *n, wf_error *err);
    wf_code (*list_work_items)(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                               unsigned states, size_t limit, bool has, int64_t c_num,
                               const char *c_str, wf_work_item_row **rows, size_t *n,
                               wf_error *err);

    wf_code (*activate_jobs)(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                             const char *worker, size_t max, size_t max_bytes, int64_t lease_ms,
                             int64_t now, wf_job_row **rows, size_t *n, wf_error *err);
    wf_code (*tx_activate_jobs)(wf_tx *tx, const char *job_type, const char *worker, size_t max,
                                size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows,
                                size_t *n, wf_error *err);
    /* tenant NULL: every tenant's timers. */
    wf_code (*claim_due_timers)(wf_store *st, const wf_store_ctx *ctx, const char *tenant,
                                int64_t now, size_t limit, int64_t claim_ms, wf_timer_row **rows,
                                size_t *n, wf_error *err);
    /* The scheduler's other passes: ctx->tenant NULL means every tenant. */
    wf_code (*find_expired_leases)(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                                   wf_job_row **rows, size_t *n, wf_error *err);
    wf_code (*expire_signals)(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                              size_t *n, wf_error *err);
    wf_code (*sweep)(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before,
                     size_t limit, size_t *n, wf_error *err);
    wf_code (*find_subscriptions)(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                  const char *instance_id, const char *aggregate_type,
                                  const char *aggregate_id, wf_subscription_row **rows, size_t *n,
                                  wf_error *err);
    wf_code (*read_events)(wf_store *st, const wf_store_ctx *ctx, int64_t after,
                           const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                           wf_error *err);
    wf_code (*sequence_events)(wf_store *st, const wf_store_ctx *ctx, wf_error *err);
    wf_code (*count_backlog)(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                             wf_store_counts *out, wf_error *err);
    wf_code (*set_listener)(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err);

    /* Batch operations (store.h). */
    wf_code (*put_batch)(wf_tx *tx, const wf_batch_row *in, wf_error *err);
    wf_code (*get_batch)(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_batch_row *out,
                         bool *found, wf_error *err);
    /* *found false: no row in->id. */
    wf_code (*update_batch)(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                            bool *found, wf_error *err);
    /* Descending: rows strictly before (c_num, c_str) when has. */
    wf_code (*list_batches)(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                            int64_t c_num, const char *c_str, wf_batch_row **rows, size_t *n,
                            wf_error *err);
    wf_code (*claim_batches)(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                             int64_t lease_ms, size_t limit, wf_batch_row **rows, size_t *n,
                             wf_error *err);
    /* Schedules (store.h). */
    wf_code (*put_schedule)(wf_tx *tx, const wf_schedule_row *in, wf_error *err);
    wf_code (*get_schedule)(wf_store *st, const wf_store_ctx *ctx, const char *id,
                            wf_schedule_row *out, bool *found, wf_error *err);
    wf_code (*update_schedule)(wf_store *st, const wf_store_ctx *ctx, const wf_schedule_row *in,
                               bool *found, wf_error *err);
    wf_code (*delete_schedule)(wf_store *st, const wf_store_ctx *ctx, const char *id, bool *found,
                               wf_error *err);
    wf_code (*list_schedules)(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                              int64_t c_num, const char *c_str, wf_schedule_row **rows, size_t *n,
                              wf_error *err);
    wf_code (*claim_schedules)(wf_store *st, const wf_store_ctx *ctx, const char *owner,
                               int64_t now, int64_t lease_ms, size_t limit, wf_schedule_row **rows,
                               size_t *n, wf_error *err);
    wf_code (*put_schedule_run)(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err);
    wf_code (*settle_schedule_run)(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err);
    /* Descending nominal_at: rows strictly before c_num when has. */
    wf_code (*list_schedule_runs)(wf_store *st, const wf_store_ctx *ctx, const char *schedule_id,
                                  size_t limit, bool has, int64_t c_num, wf_schedule_run_row **rows,
                                  size_t *n, wf_error *err);

    /* Resources (store.h). */
    wf_code (*get_resource)(wf_store *st, const wf_store_ctx *ctx, const char *name,
                            wf_resource_row *out, bool *found, wf_error *err);
    /* *found false: no row in->name (an update). */
    wf_code (*save_resource)(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                             bool *found, wf_error *err);
    wf_code (*delete_resource)(wf_store *st, const wf_store_ctx *ctx, const char *name, bool *found,
                               wf_error *err);
    /* Descending: rows strictly before (c_num, c_str) when has. */
    wf_code (*list_resources)(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                              int64_t c_num, const char *c_str, wf_resource_row **rows, size_t *n,
                              wf_error *err);

    /* Fan-out of a signal sent to an aggregate (store.h). */
    wf_code (*fanout_targets)(wf_tx *tx, const char *signal_log_id, const char *name,
                              const char *aggregate_type, const char *aggregate_id,
                              int64_t before_at, const char *before_id, int64_t received_at,
                              int64_t now, size_t page, wf_fanout_out *out, wf_error *err);
    wf_code (*take_delivery)(wf_tx *tx, const char *signal_log_id, const char *root_id,
                             const char *instance_id, wf_delivery_state state, int64_t now,
                             bool *taken, wf_error *err);
    wf_code (*pending_deliveries)(wf_store *st, const wf_store_ctx *ctx, const char *aggregate_type,
                                  const char *aggregate_id, size_t limit, wf_delivery_row **rows,
                                  size_t *n, wf_error *err);
    wf_code (*tx_get_signal)(wf_tx *tx, const char *id, wf_signal_row *out, bool *found,
                             wf_error *err);
    wf_code (*claim_deliveries)(wf_store *st, const wf_store_ctx *ctx, int64_t now,
                                int64_t lease_ms, size_t limit, wf_delivery_row **rows, size_t *n,
                                wf_error *err);
    wf_code (*find_queued_signals)(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                   wf_signal_row **rows, size_t *n, wf_error *err);
    wf_code (*count_deliveries)(wf_store *st, const wf_store_ctx *ctx, const char *signal_log_id,
                                wf_delivery_counts *out, wf_error *err);
    wf_code (*fleet_counts)(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                            int32_t version, wf_fleet_counts *out, wf_error *err);
    wf_code (*fleet_instances)(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                               int32_t version, wf_fleet_kind kind, const char *element,
                               const char *after, size_t limit, char ***ids, size_t *n,
                               wf_error *err);
} wf_store_ops;

/* Implementations embed these first in their own structs. */
struct wf_store {
    const wf_store_ops *ops;
    size_t page_bytes;    /* wf_store_set_page_bytes; 0 = pages count rows only */
    int64_t job_aging_us; /* wf_store_set_job_aging; 0 = WF_JOB_AGING_DEFAULT_US */
    _Atomic int64_t counted[WF_STORE_N_COUNTED]; /* committed events (wf_store_stats) */
};

struct wf_tx {
    wf_store *st;
    wf_store_ctx ctx; /* copied at begin; the arena it names is borrowed */
    bool failed;      /* a call failed: the transaction can only roll back */
    bool batch;       /* wf_store_begin_batch: several roots, in ascending order */
    const char *root; /* id of the root locked last (in ctx.arena), NULL before */
    uint32_t counted[WF_STORE_N_COUNTED]; /* events applied, added to st's at commit */
};

/* ---- row descriptors (store_rows.c) ------------------------------------
 *
 * Each row struct is described field by field, in the same order as the
 * columns of its Postgres table (pg/store.c relies on that order and
 * checks the column count of every result). */

typedef enum wf_field_type {
    WF_F_STR,   /* char * */
    WF_F_BYTES, /* unsigned char * with a size_t length at len_off */
    WF_F_I64,   /* int64_t */
    WF_F_I32,   /* int32_t or one of the enums above */
    WF_F_BOOL,  /* bool */
    WF_F_F64,   /* double */
} wf_field_type;

typedef struct wf_field {
    wf_field_type type;
    size_t off;
    size_t len_off; /* WF_F_BYTES only */
} wf_field;

typedef struct wf_row_desc {
    const char *name; /* object name for messages, e.g. "task" */
    size_t size;
    size_t tenant_off;
    const wf_field *fields;
    size_t n_fields;
} wf_row_desc;

extern const wf_row_desc wf_store__definition_desc;
extern const wf_row_desc wf_store__instance_desc;
extern const wf_row_desc wf_store__task_desc;
extern const wf_row_desc wf_store__token_desc;
extern const wf_row_desc wf_store__work_item_desc;
extern const wf_row_desc wf_store__job_desc;
extern const wf_row_desc wf_store__timer_desc;
extern const wf_row_desc wf_store__subscription_desc;
extern const wf_row_desc wf_store__signal_desc;
extern const wf_row_desc wf_store__signal_listed_desc; /* + the delivery (by instance) */
extern const wf_row_desc wf_store__event_desc;
extern const wf_row_desc wf_store__idempotency_desc;
extern const wf_row_desc wf_store__batch_desc;
extern const wf_row_desc wf_store__schedule_desc;
extern const wf_row_desc wf_store__schedule_run_desc;
extern const wf_row_desc wf_store__delivery_desc;
extern const wf_row_desc wf_store__resource_desc;

/* Deep-copies src into dst (both of d's type). Strings and blobs go to
 * arena, or to malloc when arena is NULL (release with _row_clear).
 * tenant, when non-NULL, replaces the tenant field. Returns false when out
 * of memory (dst then holds a partial copy: clear it when malloc'd). */
bool wf_store__row_copy(const wf_row_desc *d, void *dst, const void *src, wf_arena *arena,
                        const char *tenant);

/* Frees the malloc'd strings and blobs of a row copied with arena NULL. */
void wf_store__row_clear(const wf_row_desc *d, void *row);

/* Cursor text: "<number>,<text>" (text may hold commas). */
char *wf_store__cursor_make(wf_arena *arena, int64_t num, const char *str);

/* An estimate of the bytes row takes in an answer (protobuf), at least
 * as large as its fields with their tags. */
size_t wf_store__row_bytes(const wf_row_desc *d, const void *row);

/* How many of the n rows (stride d->size) fit in budget bytes
 * (wf_store__row_bytes each); at least one; n when budget is 0. */
size_t wf_store__rows_within(const wf_row_desc *d, const void *rows, size_t n, size_t budget);

/* The bytes a job takes in an activation answer, as the Postgres lease
 * statement counts them: variables, last error and idempotency key, plus
 * 1024 for the ids, names and times. */
size_t wf_store__job_answer_bytes(const wf_job_row *job);

/* Fails an activation whose first job alone takes more than max_bytes. */
wf_code wf_store__job_too_large(const wf_job_row *job, size_t max_bytes, wf_error *err);

/* True when the monotonic deadline has passed (0 = no deadline). */
bool wf_store__deadline_passed(int64_t deadline_ms);

/* ---- what a commit owes the listeners ---------------------------------------------- */

/* The roots named in one "wf_events" payload; past this many, the payload
 * is "" (every root). */
#define WF_STORE_EVENT_ROOTS 32

/* Adds s to the distinct strings set[0..*n), at most max of them, as a
 * malloc'd copy when copy is set. False when it did not fit (full, or out
 * of memory): the caller then stands for "any". */
bool wf_store__set_add(const char **set, size_t *n, size_t max, const char *s, bool copy);

/* The "wf_events" payload of roots[0..n) (malloc'd; "" when any is set or
 * n is 0): their ids, space-separated. NULL when out of memory. */
char *wf_store__events_payload(const char *const *roots, size_t n, bool any);

#endif /* WF_STORE_INT_H */
