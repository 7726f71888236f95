/*
 * batch.h: batch operations (StartBatchOperation, GetBatchOperation,
 * CancelBatchOperation, ListBatchOperations) and the scheduler's chunks
 * that carry them out.
 *
 * A batch operation applies one action to every root instance a
 * ListInstances filter matches, through the entry functions of the
 * single-instance RPCs (wf_instances_cancel, wf_runtime_retry_instance,
 * wf_runtime_suspend_instance, wf_runtime_resume_instance,
 * wf_runtime_migrate_instance), never a copy of their rules.
 *
 * The matching set is fixed at the start: the instances the filter
 * matches among those created up to the start time (the row's
 * created_at). StartBatchOperation counts them (total) by walking the
 * listing; the scheduler then walks the same listing in (created_at, id)
 * order, one chunk per claim, keeping the listing's keyset cursor on the
 * row. An instance that stops matching before its chunk is reached (a
 * status filter, say) is not visited, so done + failed can end below
 * total; nothing created after the start is ever visited.
 *
 * Exactly once per instance. Each action runs with the request id
 * "batch:<batch id>:<instance id>" under the action's own method name,
 * so its request record commits in the unit of work of its effect
 * (uow.h). A chunk's progress (cursor and counters) is written after its
 * actions; when the replica dies in between, the chunk is claimed again
 * after its lease and run again: the actions that had committed replay
 * from their records (counted as done, no second effect, no second
 * event), the others run for the first time. A refusal is not recorded,
 * so a replay refuses again and counts once, as the first run's count
 * was never written.
 */
#ifndef WF_BATCH_H
#define WF_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net_runtime.h"
#include "referral.h"
#include "uow.h"

/* Refusals a batch operation keeps (the first ones, in walk order). */
#define WF_BATCH_MAX_ERRORS 10
/* Instances per chunk unless the host says otherwise; at most 500 (the
 * listing's largest page). */
#define WF_BATCH_CHUNK_DEFAULT 50
/* How long a claim keeps other replicas off a batch operation, unless the
 * host says otherwise. */
#define WF_BATCH_LEASE_MS_DEFAULT 30000

/* A refusal kept on the batch operation. */
typedef struct wf_batch_failure {
    const char *instance_id;
    const char *reason; /* stable reason (wf_code_reason) */
    const char *message;
} wf_batch_failure;

/* A batch operation as the engine answers it: the stored row, the filter
 * read back from it (started_by resolved; page_size and cursor unset) and
 * the first refusals. Everything lives in the call's arena. */
typedef struct wf_batch_view {
    wf_batch_row row;
    wf_ref_instance_query filter;
    wf_batch_failure *errors;
    size_t n_errors;
    /* MIGRATE: the arguments of every migration (read back from
     * args_json); 0 and none for the other actions. */
    int32_t target_version;
    wf_net_place_map *mapping;
    size_t n_mapping;
} wf_batch_view;

/* What StartBatchOperation asks for. filter's page_size and cursor are
 * ignored. reason may be NULL. */
typedef struct wf_batch_spec {
    int action; /* a wf_batch_action; anything else is refused */
    wf_ref_instance_query filter;
    const char *reason;
    /* MIGRATE only (refused with another action): as MigrateInstance's. */
    int32_t target_version;
    const wf_net_place_map *mapping;
    size_t n_mapping;
    /* Check and count only: *out is the operation as it would start (id
     * "", version 0), nothing is stored and idem is not used. */
    bool dry_run;
} wf_batch_spec;

/* StartBatchOperation: checks the action, the reason and the filter (the
 * filter's refusals are ListInstances'), counts the matching set, then
 * stores the operation in one unit of work with its request record:
 * RUNNING, or COMPLETED at once when nothing matched. With spec->dry_run
 * it stops after the count (the same checks and the same count). */
wf_code wf_batch_start(const wf_ref_ctx *ctx, const wf_batch_spec *spec, wf_uow_idem *idem,
                       wf_batch_view *out, wf_error *err);

/* GetBatchOperation: BATCH_OPERATION_NOT_FOUND for an unknown id,
 * another tenant's included. */
wf_code wf_batch_get(const wf_ref_ctx *ctx, const char *id, wf_batch_view *out, wf_error *err);

/* CancelBatchOperation: a RUNNING operation becomes CANCELLED (no chunk
 * starts afterwards); an ended one is BATCH_OPERATION_NOT_RUNNING. With a
 * request id, a repeat answers what the first call answered. */
wf_code wf_batch_cancel(const wf_ref_ctx *ctx, const char *id, wf_uow_idem *idem,
                        wf_batch_view *out, wf_error *err);

/* ListBatchOperations: newest first; page_size as every listing (0 = 50,
 * at most 500, not negative); cursor NULL or "" for the first page;
 * *next_cursor is NULL on the last page. */
wf_code wf_batch_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor,
                      wf_batch_view **rows, size_t *n, char **next_cursor, wf_error *err);

/* ---- the scheduler's side ----------------------------------------------- */

/* What the chunks need from their host (borrowed for each call). */
typedef struct wf_batch_host {
    wf_store *store;
    const wf_directory *dir;    /* NULL = open directory */
    size_t max_variables_bytes; /* as wf_ref_ctx */
    wf_runtime_wake_fn wake;    /* after each commit; may be NULL */
    void *wake_arg;
    size_t chunk;     /* instances per chunk; 0 = WF_BATCH_CHUNK_DEFAULT */
    int64_t lease_ms; /* 0 = WF_BATCH_LEASE_MS_DEFAULT */
} wf_batch_host;

/* What one chunk did. */
typedef struct wf_batch_chunk {
    size_t applied; /* actions applied (replays included) */
    size_t refused; /* actions refused */
    bool completed; /* the walk reached its end: COMPLETED */
    bool kept;      /* the progress was written (false: another replica
                       took the operation over, or it was cancelled
                       before the chunk began) */
} wf_batch_chunk;

/* Runs one chunk of claimed, a row wf_store_claim_batches returned to
 * this host (its lease held): the next instances of the walk, each
 * action in its own unit of work, then the cursor, counters, first
 * refusals and state, written against the claimed version, lease let
 * go. A transient failure of one action (the store unreachable, a
 * conflict after retries, the deadline, memory) stops the chunk without
 * progress and lets the lease go: the next claim runs it again, and the
 * actions already applied replay. deadline_ms bounds the chunk
 * (monotonic; 0 = none). */
wf_code wf_batch_run_chunk(const wf_batch_host *h, const wf_batch_row *claimed, int64_t deadline_ms,
                           wf_batch_chunk *out, wf_error *err);

/* One scheduler pass: claims up to limit batch operations of tenant
 * (NULL: every tenant) for owner and runs one chunk of each. *chunks: how
 * many ran and kept their progress (a caller looping until 0 stops on a
 * chunk that keeps failing). A claim failure is returned; a chunk's failure is not (its
 * lease runs out or was let go, and it runs again), except an outage of
 * the store, which ends the pass. */
wf_code wf_batch_pass(const wf_batch_host *h, const char *tenant, const char *owner, size_t limit,
                      int64_t deadline_ms, size_t *chunks, wf_error *err);

#endif /* WF_BATCH_H */
