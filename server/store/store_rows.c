/*
 * store_rows.c: the row descriptors (store_int.h) and the deep copies made
 * from them.
 *
 * Each row struct of store.h is described field by field, in the column
 * order of its Postgres table, so that both stores copy, clear and size
 * rows (store_sizes.c) from one description, and the Postgres store maps
 * result columns to fields. Must not: hold state, know SQL, or implement
 * storage itself.
 */
#include "store_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- row descriptors -------------------------------------------------- */

#define STR(T, f)                                                                                  \
    {                                                                                              \
        WF_F_STR, offsetof(T, f), 0                                                                \
    }
#define BYTES(T, f, l)                                                                             \
    {                                                                                              \
        WF_F_BYTES, offsetof(T, f), offsetof(T, l)                                                 \
    }
#define I64(T, f)                                                                                  \
    {                                                                                              \
        WF_F_I64, offsetof(T, f), 0                                                                \
    }
#define I32(T, f)                                                                                  \
    {                                                                                              \
        WF_F_I32, offsetof(T, f), 0                                                                \
    }
#define BOOL(T, f)                                                                                 \
    {                                                                                              \
        WF_F_BOOL, offsetof(T, f), 0                                                               \
    }
#define F64(T, f)                                                                                  \
    {                                                                                              \
        WF_F_F64, offsetof(T, f), 0                                                                \
    }
#define DESC(var, label, T, arr)                                                                   \
    const wf_row_desc var = {label, sizeof(T), offsetof(T, tenant), arr,                           \
                             sizeof(arr) / sizeof(arr[0])}

/* Enum fields are read and written as int32_t. */
_Static_assert(sizeof(wf_instance_status) == sizeof(int32_t), "enums must be 32-bit");

static const wf_field definition_fields[] = {
    STR(wf_definition_row, tenant),       STR(wf_definition_row, key),
    I32(wf_definition_row, version),      I32(wf_definition_row, kind),
    STR(wf_definition_row, name),         BYTES(wf_definition_row, content, content_len),
    STR(wf_definition_row, content_hash), I64(wf_definition_row, valid_from),
    I64(wf_definition_row, valid_until),  I64(wf_definition_row, created_at),
    STR(wf_definition_row, created_by),
};
DESC(wf_store__definition_desc, "definition", wf_definition_row, definition_fields);

static const wf_field instance_fields[] = {
    STR(wf_instance_row, id),
    STR(wf_instance_row, tenant),
    STR(wf_instance_row, definition_key),
    I32(wf_instance_row, definition_version),
    STR(wf_instance_row, parent_id),
    STR(wf_instance_row, root_id),
    I32(wf_instance_row, status),
    STR(wf_instance_row, variables_json),
    STR(wf_instance_row, aggregate_type),
    STR(wf_instance_row, aggregate_id),
    STR(wf_instance_row, started_by),
    STR(wf_instance_row, title),
    STR(wf_instance_row, last_error),
    STR(wf_instance_row, incident_code),
    STR(wf_instance_row, incident_transition_id),
    I64(wf_instance_row, incident_at),
    I32(wf_instance_row, incident_attempts),
    I32(wf_instance_row, retries),
    I32(wf_instance_row, join_mode),
    I32(wf_instance_row, join_quorum),
    BYTES(wf_instance_row, on_all_completed, on_all_completed_len),
    BOOL(wf_instance_row, join_fired),
    I64(wf_instance_row, created_at),
    I64(wf_instance_row, updated_at),
    I64(wf_instance_row, ended_at),
    I64(wf_instance_row, version),
};
DESC(wf_store__instance_desc, "instance", wf_instance_row, instance_fields);

static const wf_field task_fields[] = {
    STR(wf_task_row, id),
    STR(wf_task_row, tenant),
    STR(wf_task_row, instance_id),
    STR(wf_task_row, root_id),
    STR(wf_task_row, definition_key),
    STR(wf_task_row, transition_id),
    STR(wf_task_row, work_item_id),
    STR(wf_task_row, title),
    I32(wf_task_row, assignee_kind),
    STR(wf_task_row, assignee_id),
    STR(wf_task_row, assigned_by),
    I32(wf_task_row, status),
    STR(wf_task_row, claimed_by),
    STR(wf_task_row, completed_by),
    I64(wf_task_row, created_at),
    I64(wf_task_row, due_at),
    I64(wf_task_row, ended_at),
    I32(wf_task_row, priority),
    I64(wf_task_row, follow_up_at),
    STR(wf_task_row, owner),
    I32(wf_task_row, delegation),
    BOOL(wf_task_row, due_fixed),
};
DESC(wf_store__task_desc, "task", wf_task_row, task_fields);

static const wf_field token_fields[] = {
    STR(wf_token_row, id),          STR(wf_token_row, tenant),   STR(wf_token_row, root_id),
    STR(wf_token_row, instance_id), STR(wf_token_row, place_id), I64(wf_token_row, created_seq),
};
DESC(wf_store__token_desc, "token", wf_token_row, token_fields);

static const wf_field work_item_fields[] = {
    STR(wf_work_item_row, id),
    STR(wf_work_item_row, tenant),
    STR(wf_work_item_row, root_id),
    STR(wf_work_item_row, instance_id),
    STR(wf_work_item_row, transition_id),
    I32(wf_work_item_row, trigger),
    STR(wf_work_item_row, token_ids),
    I32(wf_work_item_row, state),
    I64(wf_work_item_row, enabled_at),
    I64(wf_work_item_row, finished_at),
    I64(wf_work_item_row, deadline),
    I32(wf_work_item_row, assignee_kind),
    STR(wf_work_item_row, assignee_id),
    STR(wf_work_item_row, job_type),
    STR(wf_work_item_row, signal_name),
    STR(wf_work_item_row, finished_by),
    STR(wf_work_item_row, foreach_json),
};
DESC(wf_store__work_item_desc, "work item", wf_work_item_row, work_item_fields);

static const wf_field job_fields[] = {
    STR(wf_job_row, id),
    STR(wf_job_row, key),
    STR(wf_job_row, tenant),
    STR(wf_job_row, root_id),
    STR(wf_job_row, instance_id),
    STR(wf_job_row, work_item_id),
    STR(wf_job_row, transition_id),
    STR(wf_job_row, job_type),
    I32(wf_job_row, state),
    STR(wf_job_row, worker),
    I32(wf_job_row, attempt),
    I32(wf_job_row, max_attempts),
    I64(wf_job_row, activatable_at),
    I64(wf_job_row, lease_expires_at),
    I64(wf_job_row, initial_backoff_ms),
    F64(wf_job_row, backoff_multiplier),
    I64(wf_job_row, max_backoff_ms),
    STR(wf_job_row, variables_json),
    STR(wf_job_row, idempotency_key),
    BOOL(wf_job_row, compensation),
    STR(wf_job_row, last_error),
    I64(wf_job_row, created_at),
    I32(wf_job_row, priority),
    I64(wf_job_row, rank),
    STR(wf_job_row, fairness_key),
};
DESC(wf_store__job_desc, "job", wf_job_row, job_fields);

static const wf_field timer_fields[] = {
    STR(wf_timer_row, id),
    STR(wf_timer_row, tenant),
    STR(wf_timer_row, root_id),
    STR(wf_timer_row, instance_id),
    STR(wf_timer_row, work_item_id),
    STR(wf_timer_row, transition_id),
    I64(wf_timer_row, due_at),
    I64(wf_timer_row, created_at),
    I64(wf_timer_row, claimed_until),
};
DESC(wf_store__timer_desc, "timer", wf_timer_row, timer_fields);

static const wf_field subscription_fields[] = {
    STR(wf_subscription_row, id),           STR(wf_subscription_row, tenant),
    STR(wf_subscription_row, root_id),      STR(wf_subscription_row, instance_id),
    STR(wf_subscription_row, work_item_id), STR(wf_subscription_row, transition_id),
    STR(wf_subscription_row, signal_name),  STR(wf_subscription_row, aggregate_type),
    STR(wf_subscription_row, aggregate_id), I64(wf_subscription_row, created_at),
};
DESC(wf_store__subscription_desc, "subscription", wf_subscription_row, subscription_fields);

#define SIGNAL_FIELDS                                                                              \
    STR(wf_signal_row, id), STR(wf_signal_row, tenant), STR(wf_signal_row, signal_id),             \
        STR(wf_signal_row, name), STR(wf_signal_row, instance_id),                                 \
        STR(wf_signal_row, aggregate_type), STR(wf_signal_row, aggregate_id),                      \
        STR(wf_signal_row, payload_json), I32(wf_signal_row, outcome),                             \
        BOOL(wf_signal_row, buffered), I64(wf_signal_row, received_at),                            \
        I64(wf_signal_row, expires_at), I64(wf_signal_row, consumed_at),                           \
        STR(wf_signal_row, consumed_by_instance), STR(wf_signal_row, transition_id),               \
        BOOL(wf_signal_row, discarded)

static const wf_field signal_fields[] = {SIGNAL_FIELDS};
DESC(wf_store__signal_desc, "signal", wf_signal_row, signal_fields);

/* An instance's log: the row and, for a fan-out, its delivery there. */
static const wf_field signal_listed_fields[] = {
    SIGNAL_FIELDS,
    BOOL(wf_signal_row, delivery),
    I32(wf_signal_row, delivery_state),
    I64(wf_signal_row, delivered_at),
};
DESC(wf_store__signal_listed_desc, "signal", wf_signal_row, signal_listed_fields);

static const wf_field event_fields[] = {
    I64(wf_event_row, sequence),    STR(wf_event_row, tenant), STR(wf_event_row, root_id),
    STR(wf_event_row, instance_id), STR(wf_event_row, type),   STR(wf_event_row, actor),
    STR(wf_event_row, data_json),   I64(wf_event_row, time),
};
DESC(wf_store__event_desc, "event", wf_event_row, event_fields);

static const wf_field idempotency_fields[] = {
    STR(wf_idempotency_row, tenant),
    STR(wf_idempotency_row, method),
    STR(wf_idempotency_row, request_id),
    STR(wf_idempotency_row, request_hash),
    BYTES(wf_idempotency_row, response, response_len),
    I64(wf_idempotency_row, created_at),
};
DESC(wf_store__idempotency_desc, "request record", wf_idempotency_row, idempotency_fields);

static const wf_field batch_fields[] = {
    STR(wf_batch_row, id),          STR(wf_batch_row, tenant),      I32(wf_batch_row, action),
    I32(wf_batch_row, state),       STR(wf_batch_row, filter_json), STR(wf_batch_row, reason),
    STR(wf_batch_row, created_by),  I64(wf_batch_row, total),       I64(wf_batch_row, done),
    I64(wf_batch_row, failed),      STR(wf_batch_row, errors_json), STR(wf_batch_row, cursor),
    STR(wf_batch_row, lease_owner), I64(wf_batch_row, lease_until), I64(wf_batch_row, created_at),
    I64(wf_batch_row, updated_at),  I64(wf_batch_row, ended_at),    I64(wf_batch_row, version),
    STR(wf_batch_row, args_json),
};
DESC(wf_store__batch_desc, "batch operation", wf_batch_row, batch_fields);

static const wf_field schedule_fields[] = {
    STR(wf_schedule_row, id),
    STR(wf_schedule_row, tenant),
    STR(wf_schedule_row, definition_key),
    I32(wf_schedule_row, def_version),
    STR(wf_schedule_row, variables_json),
    STR(wf_schedule_row, aggregate_type),
    STR(wf_schedule_row, aggregate_id),
    STR(wf_schedule_row, spec_json),
    I32(wf_schedule_row, overlap),
    I64(wf_schedule_row, catchup_window_ms),
    I32(wf_schedule_row, pause_after_failures),
    I32(wf_schedule_row, state),
    STR(wf_schedule_row, pause_reason),
    STR(wf_schedule_row, note),
    I64(wf_schedule_row, next_fire_at),
    I64(wf_schedule_row, due_at),
    STR(wf_schedule_row, last_instance_id),
    I32(wf_schedule_row, failures),
    STR(wf_schedule_row, created_by),
    STR(wf_schedule_row, lease_owner),
    I64(wf_schedule_row, lease_until),
    I64(wf_schedule_row, created_at),
    I64(wf_schedule_row, updated_at),
    I64(wf_schedule_row, version),
    I64(wf_schedule_row, buffered_at),
};
DESC(wf_store__schedule_desc, "schedule", wf_schedule_row, schedule_fields);

static const wf_field schedule_run_fields[] = {
    STR(wf_schedule_run_row, schedule_id), STR(wf_schedule_run_row, tenant),
    I64(wf_schedule_run_row, nominal_at),  I64(wf_schedule_run_row, actual_at),
    I32(wf_schedule_run_row, outcome),     I32(wf_schedule_run_row, manual),
    STR(wf_schedule_run_row, instance_id), STR(wf_schedule_run_row, detail),
    I64(wf_schedule_run_row, buffered_at), STR(wf_schedule_run_row, cancelled_instance_id),
    I32(wf_schedule_run_row, backfill),
};
DESC(wf_store__schedule_run_desc, "schedule run", wf_schedule_run_row, schedule_run_fields);

static const wf_field resource_fields[] = {
    STR(wf_resource_row, name),       STR(wf_resource_row, tenant),
    I32(wf_resource_row, capacity),   I32(wf_resource_row, per_key),
    I32(wf_resource_row, rate_limit), I64(wf_resource_row, rate_period_ms),
    I32(wf_resource_row, strategy),   STR(wf_resource_row, created_by),
    I64(wf_resource_row, created_at), I64(wf_resource_row, updated_at),
    I64(wf_resource_row, version),
};
DESC(wf_store__resource_desc, "resource", wf_resource_row, resource_fields);
static const wf_field delivery_fields[] = {
    STR(wf_delivery_row, tenant),
    STR(wf_delivery_row, signal_log_id),
    STR(wf_delivery_row, instance_id),
    STR(wf_delivery_row, root_id),
    STR(wf_delivery_row, aggregate_type),
    STR(wf_delivery_row, aggregate_id),
    I64(wf_delivery_row, seq),
    I32(wf_delivery_row, state),
    I64(wf_delivery_row, created_at),
    I64(wf_delivery_row, done_at),
    I64(wf_delivery_row, claimed_until),
};
DESC(wf_store__delivery_desc, "signal delivery", wf_delivery_row, delivery_fields);

/* ---- deep copies ------------------------------------------------------- */

#define FIELD(row, off) ((char *)(row) + (off))

static void *
dup_bytes(wf_arena *arena, const void *src, size_t n)
{
    void *p = arena != NULL ? wf_arena_alloc(arena, n) : malloc(n > 0 ? n : 1);
    if (p != NULL && n > 0)
        memcpy(p, src, n);
    return p;
}

bool
wf_store__row_copy(const wf_row_desc *d, void *dst, const void *src, wf_arena *arena,
                   const char *tenant)
{
    memcpy(dst, src, d->size);
    /* First NULL every owned pointer, so a partial copy is always safe to
     * clear. */
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        if (f->type == WF_F_STR || f->type == WF_F_BYTES)
            *(void **)FIELD(dst, f->off) = NULL;
    }
    bool ok = true;
    for (size_t i = 0; i < d->n_fields && ok; i++) {
        const wf_field *f = &d->fields[i];
        if (f->type != WF_F_STR && f->type != WF_F_BYTES)
            continue;
        const void *sp = *(void *const *)FIELD(src, f->off);
        if (f->off == d->tenant_off && tenant != NULL)
            sp = tenant;
        if (sp == NULL)
            continue;
        size_t n = f->type == WF_F_STR ? strlen(sp) + 1 : *(const size_t *)FIELD(src, f->len_off);
        void *p = dup_bytes(arena, sp, n);
        *(void **)FIELD(dst, f->off) = p;
        ok = p != NULL;
    }
    return ok;
}

void
wf_store__row_clear(const wf_row_desc *d, void *row)
{
    if (row == NULL)
        return;
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        if (f->type == WF_F_STR || f->type == WF_F_BYTES) {
            free(*(void **)FIELD(row, f->off));
            *(void **)FIELD(row, f->off) = NULL;
        }
    }
}
