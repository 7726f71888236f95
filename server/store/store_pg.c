/*
 * store_pg.c: the Postgres store. ALL of the service's SQL lives here.
 *
 * DESIGN. Each store call borrows one pooled connection (pg_pool.c) for
 * its duration; a unit of work keeps it from begin to commit/rollback.
 * Every statement is prepared (lazily, per connection) and parameterised,
 * and its text never changes. Postgres may plan it once for every value
 * (a generic plan), so a query whose filters are optional comes as one
 * statement per shape: the parameters a call has pick the statement, and
 * each shape has an index serving its filter and its order
 * (migrations/0006_plans.sql). Filters that do not pick the index are
 * written as "($n IS NULL OR ...)" on the rows it returns; a keyset
 * cursor is always bound. tests/store/test_store_plans.c plans every
 * statement of stmts[] that way over a large backlog. Statements travel
 * in flights (pg_pool.c: libpq pipeline mode), so that what a store call
 * needs costs one round trip: BEGIN rides with a transaction's first
 * statement, the aggregate load is one flight, and so is every write of
 * one mutation. statement_timeout
 * follows the call's deadline as a session setting, rounded (timeout_for)
 * and sent, in the same flight, only when the session holds another
 * value. Mutations lock the root instance row with
 * SELECT ... FOR UPDATE and then the aggregate's jobs and timers, so the
 * cross-instance leases (job activation, timer claims), which use FOR
 * UPDATE SKIP LOCKED, never race a mutation and never block on one.
 * Rows map to C structs through the descriptors of store.c: the column
 * lists below are in descriptor order, and every result's column count is
 * checked against its descriptor.
 *
 * Events are inserted unnumbered; the sequencer (wf_sequence_events in
 * migrations/0001_init.sql, which explains why it is gap-free) numbers
 * committed ones, and every event read runs it first. Wake-ups: commits
 * note what they owe and the notifier thread sends wf_events / wf_jobs
 * after commit, coalesced, in a transaction of its own (never inside a
 * writer: see "notifier"); the optional listener thread owns one
 * connection outside the pool that LISTENs and hands notifications to the
 * callback, reconnecting with back-off after an outage.
 *
 * Owns: the schema (migrations/, applied at startup under an advisory
 * lock) and every query. Must not: leak SQL or libpq text to clients
 * (pg_errors.c maps failures), build SQL from strings, or keep a
 * connection across calls.
 */
#include "pg_pool.h"
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_log.h"
#include "wf_time.h"

/* Any 64-bit constant, the same in every replica: serialises migrations.
 * (The sequencer's lock, in 0001_init.sql, is 7318240518.) */
#define MIGRATION_LOCK "7318240517"

/* Sequencer: rows numbered per batch (one short transaction each), the
 * longest wait for another session's batch, and how many batches a read
 * runs before reading anyway (a backlog is caught up over several calls). */
#define SEQ_BATCH 1000
#define SEQ_WAIT_MS 1000
#define SEQ_READ_ROUNDS 10
#define SEQ_TICK_ROUNDS 1000

/* Listener: poll timeout (how fast wf_store_free stops it) and reconnect
 * back-off, as the pool's. */
#define LISTEN_POLL_MS 100
#define LISTEN_BACKOFF_MIN_MS 250
#define LISTEN_BACKOFF_MAX_MS 2000
#define LISTEN_STMT_MS 2000
#define LISTEN_HEALTHY_MS 10000 /* connected this long: the back-off starts over */

/* Column lists, in the order of the row descriptors in store.c. */
#define COLS_DEFINITIONS                                                                           \
    "tenant_id, key, version, kind, name, content, content_hash, valid_from, "                     \
    "valid_until, created_at, created_by"
#define COLS_INSTANCES                                                                             \
    "id, tenant_id, definition_key, definition_version, parent_id, root_id, status, "              \
    "variables_json, aggregate_type, aggregate_id, started_by, title, last_error, "                \
    "join_mode, join_quorum, on_all_completed, join_fired, created_at, updated_at, "               \
    "ended_at, version"
#define COLS_TASKS                                                                                 \
    "id, tenant_id, instance_id, root_id, definition_key, transition_id, "                         \
    "work_item_id, title, assignee_kind, assignee_id, assigned_by, status, "                       \
    "claimed_by, completed_by, created_at, due_at, ended_at"
#define COLS_TOKENS "id, tenant_id, root_id, instance_id, place_id, created_seq"
#define COLS_WORK_ITEMS                                                                            \
    "id, tenant_id, root_id, instance_id, transition_id, trigger, token_ids, state, "              \
    "enabled_at, finished_at, deadline, assignee_kind, assignee_id, job_type, signal_name, "       \
    "finished_by"
#define COLS_JOBS                                                                                  \
    "id, key, tenant_id, root_id, instance_id, work_item_id, transition_id, job_type, "            \
    "state, worker, attempt, max_attempts, activatable_at, lease_expires_at, "                     \
    "initial_backoff_ms, backoff_multiplier, max_backoff_ms, variables_json, "                     \
    "idempotency_key, compensation, last_error, created_at"
#define COLS_TIMERS                                                                                \
    "id, tenant_id, root_id, instance_id, work_item_id, transition_id, due_at, "                   \
    "created_at, claimed_until"
#define COLS_SUBSCRIPTIONS                                                                         \
    "id, tenant_id, root_id, instance_id, work_item_id, transition_id, signal_name, "              \
    "aggregate_type, aggregate_id, created_at"
#define COLS_SIGNALS                                                                               \
    "id, tenant_id, signal_id, name, instance_id, aggregate_type, aggregate_id, "                  \
    "payload_json, outcome, buffered, received_at, expires_at, consumed_at, "                      \
    "consumed_by_instance, transition_id, discarded"
#define COLS_EVENTS "sequence, tenant_id, root_id, instance_id, type, actor, data_json, time"
#define COLS_IDEMPOTENCY "tenant_id, method, request_id, request_hash, response, created_at"
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
    S_INSERT_EVENT,
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
    S_LIST_TASKS_USER,
    S_LIST_TASKS_GROUP,
    S_LIST_TASKS_ALL,
    S_LIST_INSTANCES_AGGREGATE,
    S_LIST_INSTANCES_STARTED_BY,
    S_LIST_INSTANCES_DEFINITION,
    S_LIST_INSTANCES_ALL,
    S_LIST_DEFINITIONS,
    S_LIST_WORK_ITEMS,
    S_LIST_SIGNALS_ID,
    S_LIST_SIGNALS_INSTANCE,
    S_LIST_SIGNALS_AGGREGATE,
    S_LIST_SIGNALS_ALL,
    S_ACTIVATE_JOBS,
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
    S_FIND_SUBS_INSTANCE,
    S_FIND_SUBS_AGGREGATE,
    S_READ_EVENTS_INSTANCE,
    S_READ_EVENTS_ALL,
    S_SEQUENCE,
    S_COUNT_BACKLOG,
    S_LISTEN_EVENTS,
    S_LISTEN_JOBS,
    S_NOTIFY,
    S_MIG_LOCK,
    S_MIG_UNLOCK,
    S_MIG_TABLE,
    S_MIG_HAS,
    S_MIG_RECORD,
    S_COUNT_
};
_Static_assert(S_COUNT_ <= WF_PG_MAX_STMTS, "prepared-statement bits (pg_pool.h)");
_Static_assert(S_EXPIRE_SIGNALS_T == S_EXPIRE_SIGNALS + 1 &&
                   S_SWEEP_SIGNALS_T == S_SWEEP_SIGNALS + 1 &&
                   S_SWEEP_IDEMPOTENCY_T == S_SWEEP_IDEMPOTENCY + 1 &&
                   S_SWEEP_EVENTS_T == S_SWEEP_EVENTS + 1,
               "batch_cmd: the one-tenant shape follows the every-tenant one");

/* Every statement of a unit of work names the root of the rows it
 * touches (root_id, the distribution key of docs/scaling.md), so that on a
 * sharded database it runs on one shard. AGG: one table of the aggregate
 * of root $2, sent in one flight with lock_root. DEL: row $2 of root $3. */
#define AGG(table, cols, order, lock)                                                              \
    "SELECT " cols " FROM " table " WHERE tenant_id = $1 AND root_id = $2 ORDER BY " order lock
#define DEL(table) "DELETE FROM " table " WHERE tenant_id = $1 AND root_id = $3 AND id = $2"

/* Listings (keyset pages). OPT: the residual filter "param is NULL or
 * column = param". ALL: the residual filters of a statement, as one CASE.
 * The planner takes "$n IS NULL" for rare, so each such filter written on
 * its own looks selective, their product tiny, and it would rather read
 * the whole index range and sort it than scan in order up to the LIMIT;
 * one CASE counts as one clause of selectivity 1/2. Subqueries in a
 * filter are scalar (one index probe per row), never a hashed read of
 * the whole table. The page's tail: the cursor (always bound), order and
 * limit. */
#define OPT(param, col) "(" param "::text IS NULL OR " col " = " param ")"
#define ALL(conds) "CASE WHEN " conds " THEN true ELSE false END"
#define TASKS_PAGE(states, c_num, c_str, limit)                                                    \
    "AND " ALL("(" states "::smallint[] IS NULL OR status = ANY(" states                           \
               "))") " AND (created_at, id) > (" c_num "::bigint, " c_str                          \
                     "::text) ORDER BY created_at, id "                                            \
                     "LIMIT " limit
#define LIST_INSTANCES(key, opts)                                                                  \
    "SELECT " COLS_INSTANCES " FROM instances i WHERE tenant_id = $1 " key " AND " ALL(            \
        opts " AND ($6::smallint[] IS NULL OR status = ANY($6)) AND (NOT $7::boolean OR "          \
             "parent_id IS NULL) AND ($8::int = 0 OR (status = 1 AND NOT coalesce((SELECT true "   \
             "FROM instances c WHERE c.tenant_id = i.tenant_id AND c.parent_id = i.id LIMIT 1), "  \
             "false) AND coalesce((SELECT d.kind = 1 FROM definitions d WHERE d.tenant_id = "      \
             "i.tenant_id AND d.key = i.definition_key COLLATE \"C\" AND d.version = "             \
             "i.definition_version), false)) = ($8 = 1))") " AND (created_at, id) > ($9::bigint, " \
                                                           "$10::text) ORDER BY created_at, id "   \
                                                           "LIMIT $11"
/* list_work_items: $3 holds a bit per work item state (0 = any). */
#define WORK_ITEMS_STATES ALL("($3::int = 0 OR ($3::int >> state) & 1 = 1)")
#define SIGNALS_INSTANCE_OPT "($2::text IS NULL OR instance_id = $2 OR consumed_by_instance = $2)"
#define SIGNALS_OPTS "(NOT $6::boolean OR buffered)"
#define SIGNALS_AFTER "AND (received_at, id) > ($7::bigint, $8::text)"
#define SIGNALS_REST                                                                               \
    ALL(OPT("$3", "aggregate_type") " AND " OPT("$4", "aggregate_id") " AND " OPT(                 \
        "$5", "signal_id") " AND " SIGNALS_OPTS)                                                   \
    " " SIGNALS_AFTER " ORDER BY received_at, id LIMIT $9"
/* consume_signal_*: the candidates (received_at, id), oldest first. */
#define BUFFERED "tenant_id = $1 AND name = $2 AND buffered AND NOT discarded"
#define CONSUME_SIGNAL(candidates)                                                                 \
    "WITH c AS (SELECT s.tenant_id, s.id FROM (" candidates ") x JOIN signals s ON "               \
    "s.tenant_id = $1 AND s.id = x.id WHERE s.buffered AND NOT s.discarded AND s.expires_at > "    \
    "$6 ORDER BY x.received_at, x.id LIMIT 1 FOR UPDATE OF s SKIP LOCKED), u AS (UPDATE "          \
    "signals s SET buffered = false, consumed_at = $6, consumed_by_instance = $7, "                \
    "transition_id = $8 FROM c WHERE s.tenant_id = c.tenant_id AND s.id = c.id RETURNING s.*) "    \
    "SELECT " COLS_SIGNALS " FROM u"
#define EVENTS_REST(def_key, types, limit)                                                         \
    "AND sequence IS NOT NULL AND sequence > $2 AND " ALL(                                         \
        "(" def_key "::text IS NULL OR (SELECT i.definition_key FROM instances i WHERE "           \
        "i.tenant_id = e.tenant_id AND i.id = e.instance_id) = " def_key ") AND (" types           \
        "::text[] IS NULL OR type = ANY(" types "))") " ORDER BY sequence LIMIT " limit

static const wf_pg_stmt stmts[S_COUNT_] = {
    [S_BEGIN] = {"begin", "BEGIN", "the transaction"},
    [S_COMMIT] = {"commit", "COMMIT", "the transaction"},
    [S_ROLLBACK] = {"rollback", "ROLLBACK", "the transaction"},
    [S_TIMEOUT_LOCAL] = {"timeout_local", "SELECT set_config('statement_timeout', $1, true)",
                         "the transaction"},
    [S_TIMEOUT_SESSION] = {"timeout_session", "SELECT set_config('statement_timeout', $1, false)",
                           "the session"},
    [S_PING] = {"ping", "SELECT 1", "the database"},

    /* Root $2, locked (no row: $2 is no root); its aggregate is read after. */
    [S_LOCK_ROOT] = {"lock_root",
                     "SELECT id FROM instances WHERE tenant_id = $1 AND root_id = $2 AND id = $2 "
                     "FOR UPDATE",
                     "instance"},
    /* The root of a child instance: a lookup by id, so every shard. */
    [S_ROOT_OF] = {"root_of", "SELECT root_id FROM instances WHERE tenant_id = $1 AND id = $2",
                   "instance"},
    [S_AGG_INSTANCES] = {"agg_instances",
                         AGG("instances", COLS_INSTANCES, "parent_id IS NOT NULL, created_at, id",
                             ""),
                         "instance"},
    [S_AGG_TASKS] = {"agg_tasks", AGG("tasks", COLS_TASKS, "created_at, id", ""), "task"},
    [S_AGG_TOKENS] = {"agg_tokens", AGG("tokens", COLS_TOKENS, "created_seq, id", ""), "token"},
    /* Live items only (ENABLED, FIRED): ended ones are history
     * (work_items_live, 0009). */
    [S_AGG_WORK_ITEMS] = {"agg_work_items",
                          "SELECT " COLS_WORK_ITEMS " FROM work_items WHERE tenant_id = $1 AND "
                          "root_id = $2 AND state IN (1, 2) ORDER BY enabled_at, id",
                          "work item"},
    [S_AGG_JOBS] = {"agg_jobs", AGG("jobs", COLS_JOBS, "created_at, id", " FOR UPDATE OF jobs"),
                    "job"},
    [S_AGG_TIMERS] = {"agg_timers",
                      AGG("timers", COLS_TIMERS, "due_at, id", " FOR UPDATE OF timers"), "timer"},
    [S_AGG_SUBS] = {"agg_subscriptions",
                    AGG("subscriptions", COLS_SUBSCRIPTIONS, "created_at, id", ""), "subscription"},

    /* A new instance must not exist (version 0); an update must match the
     * stored version. Both store version + 1. */
    [S_INSERT_INSTANCE] =
        {"insert_instance",
         "INSERT INTO instances (id, tenant_id, definition_key, definition_version, "
         "parent_id, root_id, status, variables_json, aggregate_type, aggregate_id, "
         "started_by, title, last_error, join_mode, join_quorum, on_all_completed, "
         "join_fired, created_at, updated_at, ended_at, version) VALUES ($1, $2, $3, $4, "
         "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
         "$21::bigint + 1)",
         "instance"},
    [S_UPDATE_INSTANCE] =
        {"update_instance",
         "UPDATE instances SET definition_key = $3, definition_version = $4, parent_id = "
         "$5, status = $7, variables_json = $8, aggregate_type = $9, aggregate_id = $10, "
         "started_by = $11, title = $12, last_error = $13, join_mode = $14, join_quorum = "
         "$15, on_all_completed = $16, join_fired = $17, created_at = $18, updated_at = "
         "$19, ended_at = $20, version = $21::bigint + 1 WHERE tenant_id = $2 AND root_id "
         "= $6 AND id = $1 AND version = $21",
         "instance"},
    /* The same, failing when it updates no row (a stale version), for
     * deferred writes whose row count nobody reads: 1 / 0 raises
     * division_by_zero, which pg_errors.c maps to CONFLICT for this
     * statement only. */
    [S_UPDATE_INSTANCE_CHECKED] =
        {"update_instance_checked",
         "WITH u AS (UPDATE instances SET definition_key = $3, definition_version = $4, "
         "parent_id = $5, status = $7, variables_json = $8, aggregate_type = $9, "
         "aggregate_id = $10, started_by = $11, title = $12, last_error = $13, join_mode = "
         "$14, join_quorum = $15, on_all_completed = $16, join_fired = $17, created_at = $18, "
         "updated_at = $19, ended_at = $20, version = $21::bigint + 1 WHERE tenant_id = $2 "
         "AND root_id = $6 AND id = $1 AND version = $21 RETURNING 1) "
         "SELECT 1 / count(*) FROM u",
         "instance"},
    /* Keyed by (tenant_id, root_id, id), which an update leaves as it is:
     * a distributed table refuses to rewrite its distribution column. */
    [S_UPSERT_TASK] =
        {"upsert_task",
         "INSERT INTO tasks (id, tenant_id, instance_id, root_id, definition_key, "
         "transition_id, work_item_id, title, assignee_kind, assignee_id, assigned_by, "
         "status, claimed_by, completed_by, created_at, due_at, ended_at) VALUES ($1, $2, "
         "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT "
         "(tenant_id, root_id, id) DO UPDATE SET instance_id = EXCLUDED.instance_id, "
         "definition_key = EXCLUDED.definition_key, transition_id = "
         "EXCLUDED.transition_id, work_item_id = EXCLUDED.work_item_id, title = "
         "EXCLUDED.title, assignee_kind = EXCLUDED.assignee_kind, assignee_id = "
         "EXCLUDED.assignee_id, assigned_by = EXCLUDED.assigned_by, status = "
         "EXCLUDED.status, claimed_by = EXCLUDED.claimed_by, completed_by = "
         "EXCLUDED.completed_by, created_at = EXCLUDED.created_at, due_at = "
         "EXCLUDED.due_at, ended_at = EXCLUDED.ended_at",
         "task"},
    [S_UPSERT_TOKEN] =
        {"upsert_token",
         "INSERT INTO tokens (id, tenant_id, root_id, instance_id, place_id, created_seq) "
         "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, root_id, id) DO UPDATE "
         "SET instance_id = EXCLUDED.instance_id, place_id = EXCLUDED.place_id, "
         "created_seq = EXCLUDED.created_seq",
         "token"},
    [S_UPSERT_WORK_ITEM] =
        {"upsert_work_item",
         "INSERT INTO work_items (id, tenant_id, root_id, instance_id, transition_id, "
         "trigger, token_ids, state, enabled_at, finished_at, deadline, assignee_kind, "
         "assignee_id, job_type, signal_name, finished_by) VALUES ($1, $2, $3, $4, $5, "
         "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (tenant_id, root_id, "
         "id) DO UPDATE SET instance_id = EXCLUDED.instance_id, transition_id = "
         "EXCLUDED.transition_id, trigger = EXCLUDED.trigger, token_ids = EXCLUDED.token_ids, "
         "state = EXCLUDED.state, enabled_at = EXCLUDED.enabled_at, finished_at = "
         "EXCLUDED.finished_at, deadline = EXCLUDED.deadline, assignee_kind = "
         "EXCLUDED.assignee_kind, assignee_id = EXCLUDED.assignee_id, job_type = "
         "EXCLUDED.job_type, signal_name = EXCLUDED.signal_name, finished_by = "
         "EXCLUDED.finished_by",
         "work item"},
    /* Returns whether the job became activatable: it is ACTIVATABLE and
     * did not exist, or had another state, activatable_at or type (o sees
     * the row as it was before this statement). Such commits notify
     * wf_jobs (the notifier). */
    [S_UPSERT_JOB] =
        {"upsert_job",
         "WITH o AS (SELECT state, activatable_at, job_type FROM jobs WHERE tenant_id = $3 AND "
         "root_id = $4 AND id = $1), "
         "u AS (INSERT INTO jobs (id, key, tenant_id, root_id, instance_id, work_item_id, "
         "transition_id, job_type, state, worker, attempt, max_attempts, activatable_at, "
         "lease_expires_at, initial_backoff_ms, backoff_multiplier, max_backoff_ms, "
         "variables_json, idempotency_key, compensation, last_error, created_at) VALUES "
         "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
         "$18, $19, $20, $21, $22) ON CONFLICT (tenant_id, root_id, id) DO UPDATE SET key "
         "= EXCLUDED.key, instance_id = EXCLUDED.instance_id, work_item_id = "
         "EXCLUDED.work_item_id, transition_id = EXCLUDED.transition_id, job_type = "
         "EXCLUDED.job_type, state = EXCLUDED.state, worker = EXCLUDED.worker, attempt = "
         "EXCLUDED.attempt, max_attempts = EXCLUDED.max_attempts, activatable_at = "
         "EXCLUDED.activatable_at, lease_expires_at = EXCLUDED.lease_expires_at, "
         "initial_backoff_ms = EXCLUDED.initial_backoff_ms, backoff_multiplier = "
         "EXCLUDED.backoff_multiplier, max_backoff_ms = EXCLUDED.max_backoff_ms, "
         "variables_json = EXCLUDED.variables_json, idempotency_key = "
         "EXCLUDED.idempotency_key, compensation = EXCLUDED.compensation, last_error = "
         "EXCLUDED.last_error, created_at = EXCLUDED.created_at "
         "RETURNING state, activatable_at, job_type) "
         "SELECT u.state = 1 AND NOT EXISTS (SELECT 1 FROM o WHERE o.state = u.state AND "
         "o.activatable_at = u.activatable_at AND o.job_type IS NOT DISTINCT FROM u.job_type) "
         "FROM u",
         "job"},
    [S_UPSERT_TIMER] =
        {"upsert_timer",
         "INSERT INTO timers (id, tenant_id, root_id, instance_id, work_item_id, "
         "transition_id, due_at, created_at, claimed_until) VALUES ($1, $2, $3, $4, $5, "
         "$6, $7, $8, $9) ON CONFLICT (tenant_id, root_id, id) DO UPDATE SET instance_id = "
         "EXCLUDED.instance_id, work_item_id = EXCLUDED.work_item_id, transition_id = "
         "EXCLUDED.transition_id, due_at = EXCLUDED.due_at, created_at = "
         "EXCLUDED.created_at, claimed_until = EXCLUDED.claimed_until",
         "timer"},
    [S_UPSERT_SUB] =
        {"upsert_subscription",
         "INSERT INTO subscriptions (id, tenant_id, root_id, instance_id, work_item_id, "
         "transition_id, signal_name, aggregate_type, aggregate_id, created_at) VALUES "
         "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (tenant_id, root_id, id) "
         "DO UPDATE SET instance_id = EXCLUDED.instance_id, work_item_id = "
         "EXCLUDED.work_item_id, transition_id = EXCLUDED.transition_id, signal_name = "
         "EXCLUDED.signal_name, aggregate_type = EXCLUDED.aggregate_type, aggregate_id = "
         "EXCLUDED.aggregate_id, created_at = EXCLUDED.created_at",
         "subscription"},
    [S_UPSERT_SIGNAL] =
        {"upsert_signal",
         "INSERT INTO signals (id, tenant_id, signal_id, name, instance_id, "
         "aggregate_type, aggregate_id, payload_json, outcome, buffered, received_at, "
         "expires_at, consumed_at, consumed_by_instance, transition_id, discarded) VALUES "
         "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON "
         "CONFLICT (tenant_id, id) DO UPDATE SET signal_id = EXCLUDED.signal_id, name = "
         "EXCLUDED.name, instance_id = EXCLUDED.instance_id, aggregate_type = "
         "EXCLUDED.aggregate_type, aggregate_id = EXCLUDED.aggregate_id, payload_json = "
         "EXCLUDED.payload_json, outcome = EXCLUDED.outcome, buffered = EXCLUDED.buffered, "
         "received_at = EXCLUDED.received_at, expires_at = EXCLUDED.expires_at, "
         "consumed_at = EXCLUDED.consumed_at, consumed_by_instance = "
         "EXCLUDED.consumed_by_instance, transition_id = EXCLUDED.transition_id, discarded "
         "= EXCLUDED.discarded",
         "signal"},
    [S_INSERT_EVENT] = {"insert_event",
                        "INSERT INTO events (tenant_id, root_id, instance_id, type, actor, "
                        "data_json, time) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        "event"},
    /* $3: the root the unit of work locked (wf_tx.root). */
    [S_DEL_TOKEN] = {"del_token", DEL("tokens"), "token"},
    [S_DEL_JOB] = {"del_job", DEL("jobs"), "job"},
    [S_DEL_TIMER] = {"del_timer", DEL("timers"), "timer"},
    [S_DEL_SUB] = {"del_subscription", DEL("subscriptions"), "subscription"},

    [S_IDEM_GET] = {"idem_get",
                    "SELECT " COLS_IDEMPOTENCY " FROM idempotency WHERE tenant_id = $1 AND "
                    "method = $2 AND request_id = $3",
                    "request record"},
    [S_IDEM_PUT] = {"idem_put",
                    "INSERT INTO idempotency (" COLS_IDEMPOTENCY ") VALUES ($1, $2, $3, $4, $5, "
                    "$6)",
                    "request record"},
    [S_IDEM_AMEND] = {"idem_amend",
                      "INSERT INTO idempotency (" COLS_IDEMPOTENCY ") VALUES ($1, $2, $3, $4, $5, "
                      "$6) ON CONFLICT (tenant_id, method, request_id) DO UPDATE SET response = "
                      "EXCLUDED.response WHERE idempotency.request_hash = EXCLUDED.request_hash",
                      "request record"},
    /* The next version of a key; a concurrent put of the same key fails
     * on the primary key (CONFLICT). */
    [S_PUT_DEFINITION] = {"put_definition",
                          "INSERT INTO definitions (" COLS_DEFINITIONS ") SELECT $1::text, "
                          "$2::text, coalesce(max(version), 0) + 1, $3::smallint, $4::text, "
                          "$5::bytea, $6::text, $7::bigint, $8::bigint, $9::bigint, $10::text "
                          "FROM definitions WHERE tenant_id = $1 AND key = $2 "
                          "HAVING bool_and(kind = $3::smallint) IS NOT FALSE RETURNING version",
                          "definition"},
    [S_GET_DEFINITION] = {"get_definition",
                          "SELECT " COLS_DEFINITIONS " FROM definitions WHERE tenant_id = $1 "
                          "AND key = $2 AND ($3::int = 0 OR version = $3) "
                          "ORDER BY version DESC LIMIT 1",
                          "definition"},
    /* The oldest buffered signal sent to the instance ($3), to the
     * aggregate ($4, $5), or to either (two index-ordered runs of
     * signals_buffer_*, 0006, merged); the row is locked and rechecked in
     * the buffer. */
    [S_CONSUME_SIGNAL] = {"consume_signal",
                          CONSUME_SIGNAL("(SELECT received_at, id FROM signals WHERE " BUFFERED
                                         " AND instance_id = $3) UNION ALL (SELECT "
                                         "received_at, id FROM signals WHERE " BUFFERED " AND "
                                         "aggregate_type = $4 AND aggregate_id = $5 AND "
                                         "(instance_id = $3) IS NOT TRUE)"),
                          "signal"},
    [S_CONSUME_SIGNAL_INSTANCE] = {"consume_signal_instance",
                                   CONSUME_SIGNAL(
                                       "SELECT received_at, id FROM signals WHERE " BUFFERED
                                       " AND instance_id = $3 AND "
                                       "$4::text IS NULL AND $5::text IS NULL"),
                                   "signal"},
    [S_CONSUME_SIGNAL_AGGREGATE] = {"consume_signal_aggregate",
                                    CONSUME_SIGNAL(
                                        "SELECT received_at, id FROM signals WHERE " BUFFERED
                                        " AND aggregate_type = $4 AND "
                                        "aggregate_id = $5 AND $3::text IS NULL"),
                                    "signal"},
    /* One lock per aggregate, whatever the signal's name: a unit of work
     * enabling waits for two names of one aggregate takes it once (it is
     * re-entrant), so two such units cannot deadlock by taking two keys in
     * opposite orders. Unit separators keep the key unambiguous (names
     * are printable). */
    [S_LOCK_CORRELATION] = {"lock_correlation",
                            "SELECT pg_advisory_xact_lock(hashtextextended($1::text || chr(31) "
                            "|| $2::text || chr(31) || $3::text, 0))",
                            "signal"},
    [S_SUB_AWAITED] = {"sub_awaited",
                       "SELECT EXISTS (SELECT 1 FROM subscriptions s JOIN instances i ON "
                       "i.tenant_id = s.tenant_id AND i.root_id = s.root_id AND i.id = "
                       "s.instance_id WHERE s.tenant_id = $1 AND s.signal_name = $2 AND "
                       "s.aggregate_type = $3 AND s.aggregate_id = $4 AND i.status = 1)",
                       "subscription"},
    /* A root of the aggregate that has not ended (1 RUNNING, 4 FAILED, 5
     * COMPENSATING), through instances_aggregate. */
    [S_AGGREGATE_LIVE] = {"aggregate_live",
                          "SELECT EXISTS (SELECT 1 FROM instances WHERE tenant_id = $1 AND "
                          "aggregate_type = $2 AND aggregate_id = $3 AND parent_id IS NULL AND "
                          "status IN (1, 4, 5))",
                          "instance"},

    [S_GET_INSTANCE] = {"get_instance",
                        "SELECT " COLS_INSTANCES " FROM instances WHERE tenant_id = $1 AND "
                        "id = $2",
                        "instance"},
    [S_GET_TASK] = {"get_task", "SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 AND id = $2",
                    "task"},
    [S_GET_JOB_BY_KEY] = {"get_job_by_key",
                          "SELECT " COLS_JOBS " FROM jobs WHERE tenant_id = $1 AND key = $2",
                          "job"},

    /* Listings: one statement per shape, picked in C by the filter that
     * picks the index (migrations/0006_plans.sql); the other filters stay
     * "($n IS NULL OR ...)" on the rows that index returns, in order. The
     * cursor is always bound (the first page starts below every row), so
     * it is part of the index condition. */
    /* $2 user, $3 user's groups, $4 states, ($5, $6) cursor, $7 limit:
     * given to the user, open in one of the groups, or claimed by the user
     * (and not already in the first two), each branch in index order. */
    [S_LIST_TASKS_USER] =
        {"list_tasks_user",
         "SELECT " COLS_TASKS " FROM ((SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 "
         "AND assignee_kind = 1 AND assignee_id = $2 " TASKS_PAGE(
             "$4", "$5", "$6",
             "$7") ") UNION ALL (SELECT t.* FROM (SELECT DISTINCT unnest($3::text[]) AS gid) g "
                   "CROSS JOIN LATERAL (SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 "
                   "AND assignee_kind = 2 AND assignee_id = g.gid AND status = 1 AND "
                   "($4::smallint[] IS NULL "
                   "OR 1 = ANY($4)) AND (created_at, id) > ($5::bigint, $6::text) "
                   "ORDER BY created_at, id LIMIT $7) t) UNION ALL (SELECT " COLS_TASKS
                   " FROM tasks "
                   "WHERE tenant_id = $1 AND claimed_by = $2 AND (assignee_kind = 1 AND "
                   "assignee_id = $2) "
                   "IS NOT TRUE AND (assignee_kind = 2 AND status = 1 AND assignee_id = "
                   "ANY($3::text[])) "
                   "IS NOT TRUE " TASKS_PAGE("$4", "$5", "$6",
                                             "$7") ")) x ORDER BY created_at, id LIMIT $7",
         "task"},
    /* $2 group, $3 states, ($4, $5) cursor, $6 limit. */
    [S_LIST_TASKS_GROUP] = {"list_tasks_group",
                            "SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 AND "
                            "assignee_kind = 2 AND assignee_id = $2 " TASKS_PAGE("$3", "$4", "$5",
                                                                                 "$6"),
                            "task"},
    /* $2 states, ($3, $4) cursor, $5 limit. */
    [S_LIST_TASKS_ALL] = {"list_tasks_all",
                          "SELECT " COLS_TASKS
                          " FROM tasks WHERE tenant_id = $1 " TASKS_PAGE("$2", "$3", "$4", "$5"),
                          "task"},
    /* Every shape binds the same parameters: $2 started_by, $3
     * definition_key, ($4, $5) aggregate, $6 statuses, $7 roots only, $8
     * begun (wf_begun_filter), ($9, $10) cursor, $11 limit. */
    [S_LIST_INSTANCES_AGGREGATE] = {"list_instances_aggregate",
                                    LIST_INSTANCES("AND aggregate_type = $4 AND aggregate_id = $5",
                                                   OPT("$2", "started_by") " AND " OPT(
                                                       "$3", "definition_key")),
                                    "instance"},
    [S_LIST_INSTANCES_STARTED_BY] =
        {"list_instances_started_by",
         LIST_INSTANCES("AND started_by = $2",
                        OPT("$3", "definition_key") " AND " OPT("$4", "aggregate_type") " AND " OPT(
                            "$5", "aggregate_id")),
         "instance"},
    [S_LIST_INSTANCES_DEFINITION] =
        {"list_instances_definition",
         LIST_INSTANCES("AND definition_key = $3",
                        OPT("$2", "started_by") " AND " OPT("$4", "aggregate_type") " AND " OPT(
                            "$5", "aggregate_id")),
         "instance"},
    [S_LIST_INSTANCES_ALL] =
        {"list_instances_all",
         LIST_INSTANCES("", OPT("$2", "started_by") " AND " OPT("$3", "definition_key") " AND " OPT(
                                "$4", "aggregate_type") " AND " OPT("$5", "aggregate_id")),
         "instance"},
    [S_LIST_DEFINITIONS] = {"list_definitions",
                            "SELECT " COLS_DEFINITIONS " FROM definitions WHERE tenant_id = $1 "
                            "AND ($2::int IS NULL OR (key, version) > ($3::text, $2)) "
                            "ORDER BY key, version LIMIT $4",
                            "definition"},
    /* Every shape binds the same parameters: $2 instance, ($3, $4)
     * aggregate, $5 signal id, $6 buffered only, ($7, $8) cursor, $9
     * limit. By signal id: the one row that is not a DUPLICATE
     * (signals_dedupe, 0008), the first delivery. By instance:
     * sent to it, or consumed by it and sent elsewhere. */
    /* ListWorkItems: one instance's items in (enabled_at, id) order
     * (work_items_instance, 0009), by state. By instance alone: with the root named too, the planner would rather
     * sort the root's rows from the primary key. */
    [S_LIST_WORK_ITEMS] = {"list_work_items",
                           "SELECT " COLS_WORK_ITEMS " FROM work_items WHERE tenant_id = $1 AND "
                           "instance_id = $2 AND " WORK_ITEMS_STATES
                           " AND (enabled_at, id) > ($4::bigint, $5::text) "
                           "ORDER BY enabled_at, id LIMIT $6",
                           "work item"},
    [S_LIST_SIGNALS_ID] = {"list_signals_id",
                           "SELECT " COLS_SIGNALS " FROM signals WHERE tenant_id = $1 AND "
                           "signal_id = $5 AND signal_id <> '' AND outcome <> 3 AND " ALL(
                               SIGNALS_INSTANCE_OPT " AND " OPT("$3", "aggregate_type") " AND " OPT(
                                   "$4", "aggregate_id") " AND " SIGNALS_OPTS) " " SIGNALS_AFTER
                                                                               " LIMIT $9",
                           "signal"},
    [S_LIST_SIGNALS_INSTANCE] =
        {"list_signals_instance",
         "SELECT " COLS_SIGNALS " FROM ((SELECT " COLS_SIGNALS " FROM signals WHERE tenant_id = $1 "
         "AND instance_id = $2 AND " SIGNALS_REST ") UNION ALL (SELECT " COLS_SIGNALS " FROM "
         "signals WHERE tenant_id = $1 AND consumed_by_instance = $2 AND instance_id IS DISTINCT "
         "FROM $2 AND " SIGNALS_REST ")) x ORDER BY received_at, id LIMIT $9",
         "signal"},
    [S_LIST_SIGNALS_AGGREGATE] =
        {"list_signals_aggregate",
         "SELECT " COLS_SIGNALS " FROM signals WHERE tenant_id = $1 AND "
         "aggregate_type = $3 AND aggregate_id = $4 AND " ALL(SIGNALS_INSTANCE_OPT " AND " OPT(
             "$5", "signal_id") " AND " SIGNALS_OPTS) " " SIGNALS_AFTER
                                                      " ORDER BY received_at, id LIMIT $9",
         "signal"},
    [S_LIST_SIGNALS_ALL] =
        {"list_signals_all",
         "SELECT " COLS_SIGNALS " FROM signals WHERE tenant_id = $1 AND " ALL(
             SIGNALS_INSTANCE_OPT
             " AND " OPT("$3", "aggregate_type") " AND " OPT("$4", "aggregate_id") " AND " OPT(
                 "$5", "signal_id") " AND " SIGNALS_OPTS) " " SIGNALS_AFTER
                                                          " ORDER BY received_at, id LIMIT $9",
         "signal"},

    /* Lease: activatable now, or leased with the lease run out (no
     * attempt is spent: attempt belongs to the engine). */
    [S_ACTIVATE_JOBS] = {"activate_jobs",
                         "WITH c AS (SELECT tenant_id, root_id, id FROM jobs WHERE tenant_id = $1 AND "
                         "job_type = $2 AND state = 1 AND activatable_at <= $3 "
                         "ORDER BY activatable_at, id LIMIT $4 FOR UPDATE SKIP LOCKED), "
                         "u AS (UPDATE jobs j SET state = 2, key = j.instance_id || '.' || "
                         "gen_random_uuid()::text, "
                         "worker = $5, lease_expires_at = $6 FROM c WHERE "
                         "j.tenant_id = c.tenant_id AND j.root_id = c.root_id AND j.id = c.id "
                         "RETURNING j.*), "
                         /* One JOB_ACTIVATED event per lease, in the same
                          * statement (data as wf_store__job_activated_data). */
                         "e AS (INSERT INTO events (tenant_id, root_id, instance_id, type, actor, "
                         "data_json, time) SELECT tenant_id, root_id, instance_id, "
                         "'JOB_ACTIVATED', NULL, '{\"jobId\":\"' || id || '\",\"jobKey\":' || "
                         "to_json(key)::text || ',\"worker\":' || to_json(worker)::text || "
                         "',\"attempt\":' || attempt || '}', $3 FROM u ORDER BY activatable_at, id) "
                         "SELECT " COLS_JOBS " FROM u ORDER BY activatable_at, id",
                         "job"},
    /* The scheduler's statements come in two shapes: every tenant (the
     * background thread, one per replica), and one tenant (the last
     * parameter; RunSchedulerPass), each served by an index on its filter
     * and order (migrations/0007_wake.sql). $1 now, $2 limit. Each
     * touches one bounded batch in one short statement, skipping rows
     * that a unit of work holds. */
/* The claimed rows are updated through their ctid, locked by the same
 * statement: a join back on the key would be planned as a hash join over
 * every timer, since a generic plan takes LIMIT $2 for a tenth of the
 * due rows. */
#define CLAIM_TIMERS(tenant)                                                                       \
    "WITH u AS (UPDATE timers SET claimed_until = $3 WHERE ctid = ANY(ARRAY(SELECT ctid FROM "   \
    "timers WHERE " tenant "due_at <= $1 AND claimed_until <= $1 ORDER BY due_at, id LIMIT $2 "  \
    "FOR UPDATE SKIP LOCKED)) RETURNING *) "                                                       \
    "SELECT " COLS_TIMERS " FROM u ORDER BY due_at, id"
    [S_CLAIM_TIMERS] = {"claim_timers", CLAIM_TIMERS(""), "timer"},
    [S_CLAIM_TIMERS_T] = {"claim_timers_tenant", CLAIM_TIMERS("tenant_id = $4 AND "), "timer"},
#define EXPIRED_LEASES(tenant)                                                                     \
    "SELECT " COLS_JOBS " FROM jobs WHERE " tenant "state = 2 AND lease_expires_at <= $1 "         \
    "ORDER BY lease_expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED"
    [S_EXPIRED_LEASES] = {"expired_leases", EXPIRED_LEASES(""), "job"},
    [S_EXPIRED_LEASES_T] = {"expired_leases_tenant", EXPIRED_LEASES("tenant_id = $3 AND "),
                            "job"},
    /* Buffered rows are always outcome 2 (BUFFERED) or 5 (STARTED) with
     * consumed_at 0: saying so lets the partial indexes signals_expiry /
     * signals_tenant_expiry serve. */
#define EXPIRE_SIGNALS(tenant)                                                                     \
    "WITH c AS (SELECT tenant_id, id FROM signals WHERE " tenant                                   \
    "outcome IN (2, 5) AND consumed_at = 0 AND buffered AND NOT discarded AND expires_at <= $1 "         \
    "ORDER BY expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) "                                    \
    "UPDATE signals s SET buffered = false, discarded = true FROM c "                              \
    "WHERE s.tenant_id = c.tenant_id AND s.id = c.id"
    [S_EXPIRE_SIGNALS] = {"expire_signals", EXPIRE_SIGNALS(""), "signal"},
    [S_EXPIRE_SIGNALS_T] = {"expire_signals_tenant", EXPIRE_SIGNALS("tenant_id = $3 AND "),
                            "signal"},
#define SWEEP_SIGNALS(tenant)                                                                      \
    "WITH c AS (SELECT tenant_id, id FROM signals WHERE " tenant                                   \
    "outcome IN (2, 5) AND consumed_at = 0 AND NOT buffered AND expires_at > 0 AND "          \
    "expires_at <= $1 "    \
    "LIMIT $2 FOR UPDATE SKIP LOCKED) "                                                            \
    "DELETE FROM signals s USING c WHERE s.tenant_id = c.tenant_id AND s.id = c.id"
    [S_SWEEP_SIGNALS] = {"sweep_signals", SWEEP_SIGNALS(""), "signal"},
    [S_SWEEP_SIGNALS_T] = {"sweep_signals_tenant", SWEEP_SIGNALS("tenant_id = $3 AND "), "signal"},
/* Through the ctids the same statement locked, as claim_timers. */
#define SWEEP_IDEMPOTENCY(tenant)                                                                  \
    "DELETE FROM idempotency WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency WHERE " tenant   \
    "created_at <= $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
    [S_SWEEP_IDEMPOTENCY] = {"sweep_idempotency", SWEEP_IDEMPOTENCY(""), "request record"},
    [S_SWEEP_IDEMPOTENCY_T] = {"sweep_idempotency_tenant",
                               SWEEP_IDEMPOTENCY("tenant_id = $3 AND "), "request record"},
    /* Ended for good: COMPLETED (2), CANCELLED (3), COMPENSATED (6). */
    /* Up to $2 roots not yet swept (r), up to $2 of their events (c);
     * when c holds fewer than $2, it holds every event of r, and r is
     * marked swept in the same statement (migrations/0005). The events of
     * a root that ended that long ago are all numbered. */
#define SWEEP_EVENTS(tenant)                                                                       \
    "WITH r AS (SELECT tenant_id, id FROM instances WHERE " tenant "parent_id IS NULL AND "        \
    "ended_at > 0 AND NOT events_swept AND ended_at <= $1 AND status IN (2, 3, 6) ORDER BY "      \
    "ended_at LIMIT $2 FOR UPDATE SKIP LOCKED), "                                                  \
    "c AS (SELECT e.id FROM r JOIN events e ON e.tenant_id = r.tenant_id AND "                     \
    "e.root_id = r.id WHERE e.sequence IS NOT NULL LIMIT $2 FOR UPDATE OF e SKIP LOCKED), "        \
    "m AS (UPDATE instances i SET events_swept = true FROM r WHERE "                               \
    "i.tenant_id = r.tenant_id AND i.root_id = r.id AND i.id = r.id AND "                          \
    "(SELECT count(*) FROM c) < $2) "                                                              \
    "DELETE FROM events d USING c WHERE d.id = c.id"
    [S_SWEEP_EVENTS] = {"sweep_events", SWEEP_EVENTS(""), "event"},
    [S_SWEEP_EVENTS_T] = {"sweep_events_tenant", SWEEP_EVENTS("tenant_id = $3 AND "), "event"},
    /* Waits for a signal sent to one instance, or to one aggregate. */
    [S_FIND_SUBS_INSTANCE] = {"find_subscriptions_instance",
                              "SELECT " COLS_SUBSCRIPTIONS " FROM subscriptions WHERE tenant_id = "
                              "$1 AND instance_id = $3 AND signal_name = $2 "
                              "ORDER BY created_at, id",
                              "subscription"},
    [S_FIND_SUBS_AGGREGATE] = {"find_subscriptions_aggregate",
                               "SELECT " COLS_SUBSCRIPTIONS " FROM subscriptions WHERE tenant_id "
                               "= $1 AND signal_name = $2 AND aggregate_type = $3 AND "
                               "aggregate_id = $4 ORDER BY created_at, id",
                               "subscription"},
    /* $2 after, $3 instance, $4 definition key, $5 types, $6 limit. The
     * instance's events are those of its tree when it is a root, else
     * those it wrote itself within its root's: both by events_root. */
    [S_READ_EVENTS_INSTANCE] = {"read_events_instance",
                                "SELECT " COLS_EVENTS " FROM ((SELECT " COLS_EVENTS
                                " FROM events e WHERE tenant_id = $1 "
                                "AND root_id = $3 " EVENTS_REST(
                                    "$4", "$5",
                                    "$6") ") UNION ALL (SELECT " COLS_EVENTS
                                          " FROM events e WHERE tenant_id = $1 AND root_id = "
                                          "(SELECT i.root_id FROM instances i "
                                          "WHERE i.tenant_id = $1 AND i.id = $3) AND root_id <> $3 "
                                          "AND instance_id = $3 " EVENTS_REST(
                                              "$4", "$5", "$6") ")) x ORDER BY sequence LIMIT $6",
                                "event"},
    /* $2 after, $3 definition key, $4 types, $5 limit. */
    [S_READ_EVENTS_ALL] = {"read_events_all",
                           "SELECT " COLS_EVENTS
                           " FROM events e WHERE tenant_id = $1 " EVENTS_REST("$3", "$4", "$5"),
                           "event"},
    /* One batch of the sequencer, in its own (implicit) transaction:
     * ($1 batch, $2 wait ms) -> rows numbered, -1 when busy elsewhere. */
    [S_SEQUENCE] = {"sequence_events", "SELECT wf_sequence_events($1, $2)", "event"},
    /* Every tenant: (1, type, n) per activatable job type, then (2, NULL,
     * open tasks) and (3, NULL, buffered signals), over the partial
     * indexes of 0003_gauges.sql. The two kinds of activatable job (ready,
     * a lease run out) are counted apart, each over its own index, rather
     * than by one OR that no index serves. */
    [S_COUNT_BACKLOG] = {"count_backlog",
                         "(SELECT 1, job_type, sum(n)::bigint FROM (SELECT job_type, count(*) n "
                         "FROM jobs WHERE state = 1 AND activatable_at <= $1 GROUP BY job_type "
                         "UNION ALL SELECT job_type, count(*) FROM jobs WHERE state = 2 AND "
                         "lease_expires_at <= $1 GROUP BY job_type) k "
                         "GROUP BY job_type ORDER BY job_type LIMIT $2) "
                         "UNION ALL SELECT 2, NULL, count(*) FROM tasks WHERE status IN (1, 2) "
                         "UNION ALL SELECT 3, NULL, count(*) FROM signals WHERE buffered "
                         "AND NOT discarded AND expires_at > $1",
                         "backlog"},
    /* Utility statements go through the extended protocol too. */
    [S_LISTEN_EVENTS] = {"listen_events", "LISTEN wf_events", "the database"},
    [S_LISTEN_JOBS] = {"listen_jobs", "LISTEN wf_jobs", "the database"},
    /* The notifier's coalesced wake-ups: ($1 channels, $2 payloads). */
    [S_NOTIFY] = {"notify",
                  "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)",
                  "the database"},

    [S_MIG_LOCK] = {"mig_lock", "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", "the schema"},
    [S_MIG_UNLOCK] = {"mig_unlock", "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", "the schema"},
    [S_MIG_TABLE] = {"mig_table",
                     "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())",
                     "the schema"},
    [S_MIG_HAS] = {"mig_has", "SELECT 1 FROM schema_migrations WHERE version = $1", "the schema"},
    [S_MIG_RECORD] = {"mig_record", "INSERT INTO schema_migrations (version) VALUES ($1)",
                      "the schema"},
};

/* The table, for the plan guard (tests/store/test_store_plans.c). */
const wf_pg_stmt *const wf_pg_statements = stmts;
const int wf_pg_n_statements = S_COUNT_;

typedef struct pg_listener pg_listener;

/* Notifier: the wake-ups this store's commits owe other replicas, sent
 * after commit by one thread (see "notifier" below). At most
 * NOTIFY_TYPES job types are named; past that, payload "" (any type). */
#define NOTIFY_TYPES 32
#define NOTIFY_INTERVAL_MS 5   /* at most one NOTIFY transaction per interval */
#define NOTIFY_RETRY_MS 250    /* after a failed send */
#define NOTIFY_SEND_MS 1000    /* deadline of one send */

typedef struct pg_notifier {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; signalled by a note and by stop */
    bool pending, events, any_type, stop, started;
    char *types[NOTIFY_TYPES]; /* malloc'd, distinct */
    size_t n_types;
    int64_t next_ms; /* monotonic: no send before */
    uint64_t sent;   /* NOTIFY transactions sent (tests, logs) */
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
    wf_pg_pool *pool;
    pg_listener *listener; /* NULL until wf_store_set_listener */
    pg_notifier notifier;
    pthread_mutex_t defs_mu;
    wf_definition_row defs[DEFS_MAX]; /* malloc'd copies, tenant set */
    size_t n_defs;
} pg_store;

/* A request lookup riding on a flight (wf_tx_idempotency_prefetch). */
struct wf_pg_lookup {
    int slot;
    const char *request_id;
    wf_arena *arena;
    wf_idempotency_row *out;
    bool *found;
};

typedef struct pg_tx {
    wf_tx base;
    wf_pg_conn *c;
    const wf_definition_row *seen[DEFS_SEEN]; /* read here; cached at commit */
    int n_seen;
    /* What the commit owes the notifier: events written, job types made
     * activatable (ctx arena; any_type when more than fit). */
    bool wrote_events, any_type;
    const char *types[NOTIFY_TYPES];
    size_t n_types;
    struct wf_pg_lookup lookup; /* wf_tx_idempotency_prefetch */
    bool defer;                 /* wf_tx_defer_writes */
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

static void
p_str(params *p, const char *s)
{
    p->v[p->n] = s;
    p->len[p->n] = 0;
    p->fmt[p->n] = 0;
    p->n++;
}

static void
p_i64(params *p, int64_t x)
{
    char *s = wf_arena_printf(p->a, "%" PRId64, x);
    p->oom |= s == NULL;
    p_str(p, s);
}

static void
p_bool(params *p, bool b)
{
    p_str(p, b ? "t" : "f");
}

static void
p_bytes(params *p, const void *b, size_t n)
{
    p_str(p, b);
    p->len[p->n - 1] = (int)n;
    p->fmt[p->n - 1] = b != NULL ? 1 : 0;
}

/* Appends every field of row but skip (-1: none), in descriptor order;
 * tenant replaces the tenant field. */
static void
p_row(params *p, const wf_row_desc *d, const void *row, const char *tenant, int skip)
{
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        const char *at = (const char *)row + f->off;
        if ((int)i == skip)
            continue;
        switch (f->type) {
        case WF_F_STR:
            p_str(p, f->off == d->tenant_off ? tenant : *(char *const *)at);
            break;
        case WF_F_BYTES:
            p_bytes(p, *(void *const *)at, *(const size_t *)((const char *)row + f->len_off));
            break;
        case WF_F_I64:
            p_i64(p, *(const int64_t *)at);
            break;
        case WF_F_I32:
            p_i64(p, *(const int32_t *)at);
            break;
        case WF_F_BOOL:
            p_bool(p, *(const bool *)at);
            break;
        case WF_F_F64: {
            char *s = wf_arena_printf(p->a, "%.17g", *(const double *)at);
            p->oom |= s == NULL;
            p_str(p, s);
            break;
        }
        }
    }
}

/* A Postgres text[] literal with every element quoted; an empty list is
 * passed as NULL, which the statements read as "no filter" (or, for the
 * inbox groups, "no group matches"). */
static void
p_text_array(params *p, const char *const *strs, size_t n)
{
    if (n == 0) {
        p_str(p, NULL);
        return;
    }
    size_t cap = 3;
    for (size_t i = 0; i < n; i++)
        cap += 2 * strlen(strs[i]) + 3;
    char *s = wf_arena_alloc(p->a, cap), *o = s;
    if (s != NULL) {
        *o++ = '{';
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                *o++ = ',';
            *o++ = '"';
            for (const char *c = strs[i]; *c != '\0'; c++) {
                if (*c == '"' || *c == '\\')
                    *o++ = '\\';
                *o++ = *c;
            }
            *o++ = '"';
        }
        *o++ = '}';
        *o = '\0';
    }
    p->oom |= s == NULL;
    p_str(p, s);
}

static void
p_int_array(params *p, const int *v, size_t n)
{
    if (n == 0) {
        p_str(p, NULL);
        return;
    }
    char *s = wf_arena_alloc(p->a, n * 12 + 3), *o = s;
    if (s != NULL) {
        *o++ = '{';
        for (size_t i = 0; i < n; i++)
            o += sprintf(o, "%s%d", i > 0 ? "," : "", v[i]);
        *o++ = '}';
        *o = '\0';
    }
    p->oom |= s == NULL;
    p_str(p, s);
}

/* The statement_timeout for what is left of a deadline (0: none), rounded
 * up to a step of at most 1/16 of it and 128 ms. Calls with like deadlines
 * then ask for the same value, which the session keeps, so it is sent only
 * when it changes; and the server still gives up before pg_pool.c's grace
 * (250 ms past the deadline) runs out. */
static int64_t
timeout_for(int64_t deadline_ms)
{
    if (deadline_ms == 0)
        return 0;
    int64_t left = deadline_ms - wf_mono_ms();
    if (left < 1)
        left = 1;
    int64_t step = 1;
    while (step < 128 && step * 2 <= left / 16)
        step *= 2;
    return (left + step - 1) / step * step;
}

/* ---- running statements ---------------------------------------------------- */

/* Opens a flight on c with what its borrower owes: the statement_timeout
 * when the session holds another value (in a sync segment of its own, so
 * it holds whatever becomes of the transaction), then the deferred BEGIN
 * of a unit of work. Both ride with the first statement: no round trip
 * of their own. */
static void
flight_open(wf_pg_conn *c, int64_t deadline)
{
    if (c->owe_timeout) {
        c->owe_timeout = false;
        if (!c->timeout_known || c->timeout_ms != c->timeout_want) {
            char v[24];
            snprintf(v, sizeof v, "%" PRId64, c->timeout_want);
            const char *vals[1] = {v};
            c->timeout_known = false;
            c->timeout_in_flight = true;
            wf_pg_send(c, stmts, S_TIMEOUT_SESSION, 1, vals, NULL, NULL, deadline);
            wf_pg_send_sync(c);
        }
    }
    if (c->owe_begin) {
        c->owe_begin = false;
        wf_pg_send(c, stmts, S_BEGIN, 0, NULL, NULL, NULL, deadline);
    }
}

/* Queues statement id with p on c's flight; returns its slot. */
static int
push(wf_pg_conn *c, int id, const params *p, int64_t deadline)
{
    if (wf_pg_idle(c))
        flight_open(c, deadline);
    return wf_pg_send(c, stmts, id, p != NULL ? p->n : 0, p != NULL ? p->v : NULL,
                      p != NULL ? p->len : NULL, p != NULL ? p->fmt : NULL, deadline);
}

static wf_code read_rows(PGresult *res, const wf_row_desc *d, wf_arena *a, void *out, size_t *n,
                         wf_error *err);

/* Sends c's flight and collects it (see wf_pg_flush). A request lookup
 * that rode on it and found a record fails the flight's caller. */
static wf_code
flush(wf_pg_conn *c, int64_t deadline, int *failed, wf_error *err)
{
    struct wf_pg_lookup *l = c->lookup;
    c->lookup = NULL;
    wf_code rc = wf_pg_flush(c, stmts, deadline, failed, err);
    if (c->timeout_in_flight && rc == WF_OK) {
        c->timeout_known = true;
        c->timeout_ms = c->timeout_want;
    }
    c->timeout_in_flight = false;
    if (l != NULL && rc == WF_OK) {
        PGresult *res = wf_pg_take(c, l->slot);
        wf_idempotency_row *rows = NULL;
        size_t n = 0;
        rc = read_rows(res, &wf_store__idempotency_desc, l->arena, &rows, &n, err);
        PQclear(res);
        if (rc == WF_OK && n > 0) {
            *l->out = rows[0];
            *l->found = true;
            rc = wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                              l->request_id);
        }
    }
    return rc;
}

/* Runs one statement: a flight of its own (with what the borrower owes). */
static wf_code
run(wf_pg_conn *c, int id, const params *p, int64_t deadline, PGresult **res, wf_error *err)
{
    *res = NULL;
    if (p != NULL && p->oom)
        return wf_store__nomem(err);
    int slot = push(c, id, p, deadline);
    wf_code rc = flush(c, deadline, NULL, err);
    if (rc == WF_OK)
        *res = wf_pg_take(c, slot);
    return rc;
}

/* Runs a statement whose result is not needed; *affected gets the row
 * count when non-NULL. */
static wf_code
run_cmd(wf_pg_conn *c, int id, const params *p, int64_t deadline, long *affected, wf_error *err)
{
    PGresult *res;
    wf_code rc = run(c, id, p, deadline, &res, err);
    if (rc == WF_OK && affected != NULL)
        *affected = atol(PQcmdTuples(res));
    PQclear(res);
    return rc;
}

/* Converts every row of res into an arena array of d's row type. */
static wf_code
read_rows(PGresult *res, const wf_row_desc *d, wf_arena *a, void *out, size_t *n, wf_error *err)
{
    if (PQnfields(res) != (int)d->n_fields) {
        WF_LOG(WF_LOG_ERROR, "db_shape", "%s: %d columns, descriptor has %zu", d->name,
               PQnfields(res), d->n_fields);
        return wf_error_set(err, WF_E_INTERNAL, "could not read %s", d->name);
    }
    size_t k = (size_t)PQntuples(res);
    char *rows = wf_arena_calloc(a, k > 0 ? k : 1, d->size);
    if (rows == NULL)
        return wf_store__nomem(err);
    for (size_t r = 0; r < k; r++) {
        char *row = rows + r * d->size;
        for (size_t i = 0; i < d->n_fields; i++) {
            const wf_field *f = &d->fields[i];
            if (PQgetisnull(res, (int)r, (int)i))
                continue; /* calloc'd: NULL / 0 / false */
            const char *v = PQgetvalue(res, (int)r, (int)i);
            char *at = row + f->off;
            switch (f->type) {
            case WF_F_STR: {
                char *s = wf_arena_strndup(a, v, (size_t)PQgetlength(res, (int)r, (int)i));
                if (s == NULL)
                    return wf_store__nomem(err);
                *(char **)at = s;
                break;
            }
            case WF_F_BYTES: {
                size_t len = 0;
                unsigned char *raw = PQunescapeBytea((const unsigned char *)v, &len);
                void *copy = raw != NULL ? wf_arena_alloc(a, len) : NULL;
                if (copy != NULL)
                    memcpy(copy, raw, len);
                PQfreemem(raw);
                if (copy == NULL)
                    return wf_store__nomem(err);
                *(void **)at = copy;
                *(size_t *)(row + f->len_off) = len;
                break;
            }
            case WF_F_I64:
                *(int64_t *)at = strtoll(v, NULL, 10);
                break;
            case WF_F_I32:
                *(int32_t *)at = (int32_t)strtol(v, NULL, 10);
                break;
            case WF_F_BOOL:
                *(bool *)at = v[0] == 't';
                break;
            case WF_F_F64:
                *(double *)at = strtod(v, NULL);
                break;
            }
        }
    }
    *(void **)out = rows;
    *n = k;
    return WF_OK;
}

static wf_code
run_rows(wf_pg_conn *c, int id, const params *p, int64_t deadline, const wf_row_desc *d,
         wf_arena *a, void *rows, size_t *n, wf_error *err)
{
    PGresult *res;
    wf_code rc = run(c, id, p, deadline, &res, err);
    if (rc == WF_OK)
        rc = read_rows(res, d, a, rows, n, err);
    PQclear(res);
    return rc;
}

/* ---- borrowing connections ------------------------------------------------ */

/* Returns c to the pool, rolling back whatever it still has open. */
static void
conn_put(pg_store *s, wf_pg_conn *c)
{
    if (c == NULL)
        return;
    c->owe_timeout = c->owe_begin = false;
    c->lookup = NULL;
    if (c->pg != NULL && !c->broken && !wf_pg_idle(c)) {
        /* Deferred writes never sent (a unit of work rolled back before
         * its commit): they go out with a ROLLBACK that undoes them,
         * rather than leaving a flight that would cost the connection. */
        push(c, S_ROLLBACK, NULL, wf_mono_ms() + 1000);
        if (flush(c, wf_mono_ms() + 1000, NULL, NULL) == WF_E_STORE_UNAVAILABLE)
            c->broken = true;
    }
    if (c->pg != NULL && !c->broken) {
        PGTransactionStatusType ts = PQtransactionStatus(c->pg);
        if ((ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) &&
            run_cmd(c, S_ROLLBACK, NULL, wf_mono_ms() + 1000, NULL, NULL) != WF_OK)
            c->broken = true;
    }
    wf_pg_pool_release(s->pool, c);
}

/* Borrows a connection for single statements, with the call's deadline as
 * its session statement_timeout (sent with the first statement, and only
 * when the session holds another value). */
static wf_code
conn_get(pg_store *s, const wf_store_ctx *ctx, wf_pg_conn **out, wf_error *err)
{
    wf_pg_conn *c = NULL;
    wf_code rc = wf_pg_pool_acquire(s->pool, ctx->deadline_ms, &c, err);
    if (rc != WF_OK)
        return rc;
    c->owe_timeout = true;
    c->timeout_want = timeout_for(ctx->deadline_ms);
    *out = c;
    return WF_OK;
}

/* Borrows a connection for a transaction. BEGIN (and the timeout) are
 * deferred to the transaction's first statement, in the same flight; a
 * transaction that runs none sends nothing. */
static wf_code
tx_open(pg_store *s, const wf_store_ctx *ctx, wf_pg_conn **out, wf_error *err)
{
    wf_code rc = conn_get(s, ctx, out, err);
    if (rc == WF_OK)
        (*out)->owe_begin = true;
    return rc;
}

/* ---- notifier ------------------------------------------------------------------ */

/*
 * Wake-ups for the other replicas, sent after commit and outside every
 * writing transaction: a notifying transaction takes Postgres's one
 * database-wide notify lock at commit, so NOTIFY in the writers would
 * serialise every commit behind it. A committed unit of work only notes
 * what it owes (events written, job types made activatable); one thread
 * sends what was noted in one short transaction of its own, at once when
 * it has been idle, else at most once per NOTIFY_INTERVAL_MS, so a burst
 * of commits costs one NOTIFY per channel and payload. A failed send
 * (Postgres away) is retried after NOTIFY_RETRY_MS as a wake-everything
 * hint. Notifications stay hints: the waiters' periodic recheck is the
 * fallback, and in-process waiters are woken directly by the engine.
 */

static void
notifier_add_type(pg_notifier *n, const char *type)
{
    for (size_t i = 0; i < n->n_types; i++)
        if (strcmp(n->types[i], type) == 0)
            return;
    char *copy = n->n_types < NOTIFY_TYPES ? strdup(type) : NULL;
    if (copy == NULL)
        n->any_type = true;
    else
        n->types[n->n_types++] = copy;
}

/* Notes what a commit owes; cheap, never blocks on the database. */
static void
notifier_note(pg_store *s, bool events, bool any_type, const char *const *types, size_t n_types)
{
    if (!events && !any_type && n_types == 0)
        return;
    pg_notifier *n = &s->notifier;
    pthread_mutex_lock(&n->mu);
    n->events |= events;
    n->any_type |= any_type;
    for (size_t i = 0; i < n_types; i++)
        notifier_add_type(n, types[i]);
    if (!n->pending) {
        n->pending = true;
        pthread_cond_signal(&n->cv);
    }
    pthread_mutex_unlock(&n->mu);
}

static void
notes_of_tx(pg_tx *tx)
{
    notifier_note((pg_store *)tx->base.st, tx->wrote_events, tx->any_type, tx->types, tx->n_types);
}

/* Remembers that tx made a job of type activatable. */
static void
tx_note_type(pg_tx *tx, const char *type)
{
    if (type == NULL)
        return;
    for (size_t i = 0; i < tx->n_types; i++)
        if (strcmp(tx->types[i], type) == 0)
            return;
    if (tx->n_types < NOTIFY_TYPES)
        tx->types[tx->n_types++] = type;
    else
        tx->any_type = true;
}

/* One transaction of pg_notify calls: wf_events when events is set, then
 * wf_jobs per type ("" for any). */
static wf_code
notifier_send(pg_store *s, bool events, bool any_type, char *const *types, size_t n_types,
              wf_error *err)
{
    size_t k = 0, m = any_type ? 1 : n_types;
    const char *chan[NOTIFY_TYPES + 1], *pay[NOTIFY_TYPES + 1];
    if (events) {
        chan[k] = "wf_events";
        pay[k++] = "";
    }
    for (size_t i = 0; i < m; i++) {
        chan[k] = "wf_jobs";
        pay[k++] = any_type ? "" : types[i];
    }
    if (k == 0)
        return WF_OK;
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_store__nomem(err);
    wf_store_ctx ctx = {NULL, wf_mono_ms() + NOTIFY_SEND_MS, a};
    params p = {.a = a};
    p_text_array(&p, chan, k);
    p_text_array(&p, pay, k);
    wf_pg_conn *c = NULL;
    wf_code rc = p.oom ? wf_store__nomem(err) : conn_get(s, &ctx, &c, err);
    if (rc == WF_OK) {
        /* Background work, not a call's: left out of the flight counts
         * (wf_store_stats), as the listener's connection is. */
        int64_t *flights = c->count_flights, *statements = c->count_statements;
        c->count_flights = c->count_statements = NULL;
        rc = run_cmd(c, S_NOTIFY, &p, ctx.deadline_ms, NULL, err);
        c->count_flights = flights;
        c->count_statements = statements;
        conn_put(s, c);
    }
    wf_arena_free(a);
    return rc;
}

static void *
notifier_main(void *arg)
{
    pg_store *s = arg;
    pg_notifier *n = &s->notifier;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        if (!n->pending && n->stop)
            break;
        if (!n->pending) {
            pthread_cond_wait(&n->cv, &n->mu);
            continue;
        }
        int64_t now = wf_mono_ms();
        if (!n->stop && now < n->next_ms) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = (int64_t)ts.tv_nsec + (n->next_ms - now) * 1000000;
            ts.tv_sec += (time_t)(ns / 1000000000);
            ts.tv_nsec = (long)(ns % 1000000000);
            pthread_cond_timedwait(&n->cv, &n->mu, &ts);
            continue;
        }
        bool events = n->events, any_type = n->any_type, stopping = n->stop;
        char *types[NOTIFY_TYPES];
        size_t n_types = n->n_types;
        memcpy(types, n->types, n_types * sizeof types[0]);
        n->pending = n->events = n->any_type = false;
        n->n_types = 0;
        pthread_mutex_unlock(&n->mu);

        wf_error err;
        wf_error_clear(&err);
        wf_code rc = notifier_send(s, events, any_type, types, n_types, &err);
        for (size_t i = 0; i < n_types; i++)
            free(types[i]);
        if (rc != WF_OK)
            WF_LOG(WF_LOG_DEBUG, "db_notify_failed", "detail=%s", err.msg);

        pthread_mutex_lock(&n->mu);
        if (rc == WF_OK) {
            n->sent++;
        } else if (!stopping) {
            /* Lost: ask every waiter elsewhere to look again. */
            n->pending = n->events = n->any_type = true;
        }
        n->next_ms = wf_mono_ms() + (rc == WF_OK ? NOTIFY_INTERVAL_MS : NOTIFY_RETRY_MS);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

static bool
notifier_start(pg_store *s)
{
    pg_notifier *n = &s->notifier;
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->cv, &ca);
    pthread_condattr_destroy(&ca);
    n->started = pthread_create(&n->thread, NULL, notifier_main, s) == 0;
    return n->started;
}

/* Sends what is still owed (once, within NOTIFY_SEND_MS), then joins. */
static void
notifier_stop(pg_store *s)
{
    pg_notifier *n = &s->notifier;
    if (!n->started)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    for (size_t i = 0; i < n->n_types; i++)
        free(n->types[i]);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    n->started = false;
}

/* ---- store lifecycle -------------------------------------------------------- */

static void listener_stop(pg_listener *l);

static void
pg_destroy(wf_store *st)
{
    pg_store *s = (pg_store *)st;
    notifier_stop(s);
    listener_stop(s->listener);
    wf_pg_pool_free(s->pool);
    for (size_t i = 0; i < s->n_defs; i++)
        wf_store__row_clear(&wf_store__definition_desc, &s->defs[i]);
    pthread_mutex_destroy(&s->defs_mu);
    free(s);
}

/* The cached version of key into ctx->arena: 1 found, 0 not cached, -1
 * out of memory. */
static int
defs_get(pg_store *s, const wf_store_ctx *ctx, const char *key, int32_t version,
         wf_definition_row *out)
{
    int got = 0;
    pthread_mutex_lock(&s->defs_mu);
    for (size_t i = 0; i < s->n_defs; i++) {
        const wf_definition_row *d = &s->defs[i];
        if (d->version == version && strcmp(d->key, key) == 0 &&
            strcmp(d->tenant, ctx->tenant) == 0) {
            got = wf_store__row_copy(&wf_store__definition_desc, out, d, ctx->arena, NULL) ? 1 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&s->defs_mu);
    return got;
}

/* Caches a committed row (once; the cache stops growing when full). */
static void
defs_put(pg_store *s, const wf_definition_row *row)
{
    if (row->tenant == NULL || row->key == NULL || row->version <= 0)
        return;
    pthread_mutex_lock(&s->defs_mu);
    bool have = false;
    for (size_t i = 0; !have && i < s->n_defs; i++)
        have = s->defs[i].version == row->version && strcmp(s->defs[i].key, row->key) == 0 &&
               strcmp(s->defs[i].tenant, row->tenant) == 0;
    if (!have && s->n_defs < DEFS_MAX) {
        wf_definition_row *d = &s->defs[s->n_defs];
        if (wf_store__row_copy(&wf_store__definition_desc, d, row, NULL, NULL))
            s->n_defs++;
        else
            wf_store__row_clear(&wf_store__definition_desc, d);
    }
    pthread_mutex_unlock(&s->defs_mu);
}

static bool
pg_ready(wf_store *st)
{
    pg_store *s = (pg_store *)st;
    wf_pg_conn *c = NULL;
    int64_t deadline = wf_mono_ms() + 1000;
    if (wf_pg_pool_acquire(s->pool, deadline, &c, NULL) != WF_OK)
        return false;
    bool ok = run_cmd(c, S_PING, NULL, deadline, NULL, NULL) == WF_OK;
    conn_put(s, c);
    return ok;
}

static void
pg_stats(wf_store *st, wf_store_stats *out)
{
    wf_pg_pool_stats(((pg_store *)st)->pool, out);
}

/* ---- unit of work ------------------------------------------------------------ */

static wf_code
pg_begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    pg_tx *tx = calloc(1, sizeof *tx);
    if (tx == NULL)
        return wf_store__nomem(err);
    wf_code rc = tx_open(s, ctx, &tx->c, err);
    if (rc != WF_OK) {
        free(tx);
        return rc;
    }
    tx->base.st = st;
    tx->base.ctx = *ctx;
    *out = &tx->base;
    return WF_OK;
}

static wf_code
pg_commit(wf_tx *t, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    /* Still owing BEGIN: nothing ran, nothing to commit. */
    wf_code rc =
        tx->c->owe_begin ? WF_OK : run_cmd(tx->c, S_COMMIT, NULL, t->ctx.deadline_ms, NULL, err);
    for (int i = 0; rc == WF_OK && i < tx->n_seen; i++)
        defs_put((pg_store *)t->st, tx->seen[i]);
    conn_put((pg_store *)t->st, tx->c);
    if (rc == WF_OK)
        notes_of_tx(tx);
    free(tx);
    return rc;
}

static void
pg_defer_writes(wf_tx *t)
{
    ((pg_tx *)t)->defer = true;
}

static void
pg_rollback(wf_tx *t)
{
    pg_tx *tx = (pg_tx *)t;
    conn_put((pg_store *)t->st, tx->c);
    free(tx);
}

/* Two-parameter (tenant, x) statement parameters. */
static params
p_tenant(const wf_store_ctx *ctx, const char *x)
{
    params p = {.a = ctx->arena};
    p_str(&p, ctx->tenant);
    p_str(&p, x);
    return p;
}

/* The aggregate's tables, in the order they are read. */
static const struct agg_part {
    int id;
    const wf_row_desc *d;
    size_t rows, n; /* offsets in wf_aggregate */
} agg_parts[] = {
    {S_AGG_INSTANCES, &wf_store__instance_desc, offsetof(wf_aggregate, instances),
     offsetof(wf_aggregate, n_instances)},
    {S_AGG_TASKS, &wf_store__task_desc, offsetof(wf_aggregate, tasks),
     offsetof(wf_aggregate, n_tasks)},
    {S_AGG_TOKENS, &wf_store__token_desc, offsetof(wf_aggregate, tokens),
     offsetof(wf_aggregate, n_tokens)},
    {S_AGG_WORK_ITEMS, &wf_store__work_item_desc, offsetof(wf_aggregate, work_items),
     offsetof(wf_aggregate, n_work_items)},
    {S_AGG_JOBS, &wf_store__job_desc, offsetof(wf_aggregate, jobs), offsetof(wf_aggregate, n_jobs)},
    {S_AGG_TIMERS, &wf_store__timer_desc, offsetof(wf_aggregate, timers),
     offsetof(wf_aggregate, n_timers)},
    {S_AGG_SUBS, &wf_store__subscription_desc, offsetof(wf_aggregate, subscriptions),
     offsetof(wf_aggregate, n_subscriptions)},
};
#define N_AGG_PARTS (sizeof agg_parts / sizeof agg_parts[0])

/* The lock of root and every table of its aggregate in one flight. The
 * server runs them in order, so the reads start once the lock is granted
 * and see the tree as the previous holder left it. *locked: root is a
 * root (else nothing was locked and *g is empty). */
static wf_code
lock_flight(pg_tx *tx, const char *root, bool *locked, wf_aggregate *g, wf_error *err)
{
    const wf_store_ctx *ctx = &tx->base.ctx;
    int64_t dl = ctx->deadline_ms;
    params p = p_tenant(ctx, root);
    int lock = push(tx->c, S_LOCK_ROOT, &p, dl);
    int slots[N_AGG_PARTS];
    for (size_t i = 0; i < N_AGG_PARTS; i++)
        slots[i] = push(tx->c, agg_parts[i].id, &p, dl);
    wf_code rc = flush(tx->c, dl, NULL, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = wf_pg_take(tx->c, lock);
    *locked = PQntuples(res) > 0;
    PQclear(res);
    memset(g, 0, sizeof *g);
    for (size_t i = 0; rc == WF_OK && i < N_AGG_PARTS; i++) {
        const struct agg_part *ap = &agg_parts[i];
        res = wf_pg_take(tx->c, slots[i]);
        rc = read_rows(res, ap->d, ctx->arena, (char *)g + ap->rows, (size_t *)((char *)g + ap->n),
                       err);
        PQclear(res);
    }
    return rc;
}

static bool
has_instance(const wf_aggregate *g, const char *id)
{
    for (size_t i = 0; i < g->n_instances; i++)
        if (strcmp(g->instances[i].id, id) == 0)
            return true;
    return false;
}

/* The root is taken to be root_hint, else instance_id itself (most calls
 * name a root), so that the lock and the aggregate, addressed by root, go
 * out in one flight. When instance_id is not in what came back (a child
 * without a hint, or unknown), its root is read by id and the flight runs
 * again: what the caller gets is the same either way. */
static wf_code
pg_lock_root(wf_tx *t, const char *instance_id, const char *root_hint, wf_aggregate *out,
             wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    const char *root = root_hint != NULL ? root_hint : instance_id;
    bool locked;
    wf_aggregate g;
    wf_code rc = lock_flight(tx, root, &locked, &g, err);
    if (rc == WF_OK && !(locked && has_instance(&g, instance_id))) {
        params p = p_tenant(&t->ctx, instance_id);
        PGresult *res;
        rc = run(tx->c, S_ROOT_OF, &p, t->ctx.deadline_ms, &res, err);
        if (rc == WF_OK && PQntuples(res) == 1) {
            root = wf_arena_strdup(t->ctx.arena, PQgetvalue(res, 0, 0));
            rc = root != NULL ? lock_flight(tx, root, &locked, &g, err) : wf_store__nomem(err);
        } else {
            locked = false;
        }
        PQclear(res);
    }
    if (rc != WF_OK)
        return rc;
    if (!(locked && has_instance(&g, instance_id)))
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            instance_id);
    *out = g;
    return WF_OK;
}

/* A write of pg_apply whose outcome needs more than success: an instance
 * (exactly one row, else a lost race) or a signal (a duplicate id). */
typedef struct write_check {
    int slot;
    bool instance;
    const char *id;
} write_check;

/* Queues one statement per row (stride d->size) on tx's flight; checks,
 * when non-NULL, gets one entry per row. False when out of memory. */
static bool
queue_rows(pg_tx *tx, int id, const wf_row_desc *d, const void *rows, size_t n, write_check *checks,
           size_t *n_checks)
{
    const wf_store_ctx *ctx = &tx->base.ctx;
    for (size_t i = 0; i < n; i++) {
        params p = {.a = ctx->arena};
        const void *row = (const char *)rows + i * d->size;
        p_row(&p, d, row, ctx->tenant, -1);
        if (p.oom)
            return false;
        int slot = push(tx->c, id, &p, ctx->deadline_ms);
        if (checks != NULL)
            checks[(*n_checks)++] = (write_check){slot, d == &wf_store__instance_desc,
                                                  d == &wf_store__instance_desc
                                                      ? ((const wf_instance_row *)row)->id
                                                      : ((const wf_signal_row *)row)->signal_id};
    }
    return true;
}

/* Deletions are of the root locked (store.c checks there is one). */
static void
queue_dels(pg_tx *tx, int id, const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        params p = p_tenant(&tx->base.ctx, ids[i]);
        p_str(&p, tx->base.root);
        push(tx->c, id, &p, tx->base.ctx.deadline_ms);
    }
}

/* Queues an event insert on c's flight; false when out of memory. */
static bool
queue_event(wf_pg_conn *c, const wf_store_ctx *ctx, const wf_event_row *e)
{
    params p = {.a = ctx->arena};
    p_row(&p, &wf_store__event_desc, e, ctx->tenant, 0 /* sequence: the table assigns it */);
    if (p.oom)
        return false;
    push(c, S_INSERT_EVENT, &p, ctx->deadline_ms);
    return true;
}

/* Every write of one mutation in one flight. The server stops at the first
 * failure (the transaction is then aborted); the outcome is judged in the
 * order the writes ran, as one statement at a time would have. */
static wf_code
pg_apply(wf_tx *t, const wf_store_changes *c, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    const wf_store_ctx *ctx = &t->ctx;
    size_t n_checks = 0;
    write_check *checks =
        wf_arena_calloc(ctx->arena, c->n_instances + c->n_signals + 1, sizeof *checks);
    if (checks == NULL)
        return wf_store__nomem(err);
    bool ok = true;
    int update = tx->defer ? S_UPDATE_INSTANCE_CHECKED : S_UPDATE_INSTANCE;
    for (size_t i = 0; ok && i < c->n_instances; i++) {
        const wf_instance_row *in = &c->instances[i];
        ok = queue_rows(tx, in->version == 0 ? S_INSERT_INSTANCE : update,
                        &wf_store__instance_desc, in, 1, checks, &n_checks);
    }
    ok =
        ok && queue_rows(tx, S_UPSERT_TASK, &wf_store__task_desc, c->tasks, c->n_tasks, NULL, NULL);
    ok = ok &&
         queue_rows(tx, S_UPSERT_TOKEN, &wf_store__token_desc, c->tokens, c->n_tokens, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_WORK_ITEM, &wf_store__work_item_desc, c->work_items,
                          c->n_work_items, NULL, NULL);
    /* Job upserts answer whether the job became activatable. */
    int *job_slots = wf_arena_calloc(ctx->arena, c->n_jobs + 1, sizeof *job_slots);
    ok = ok && job_slots != NULL;
    for (size_t i = 0; ok && i < c->n_jobs; i++) {
        job_slots[i] = -1;
        params p = {.a = ctx->arena};
        p_row(&p, &wf_store__job_desc, &c->jobs[i], ctx->tenant, -1);
        ok = !p.oom;
        if (ok)
            job_slots[i] = push(tx->c, S_UPSERT_JOB, &p, ctx->deadline_ms);
    }
    ok = ok &&
         queue_rows(tx, S_UPSERT_TIMER, &wf_store__timer_desc, c->timers, c->n_timers, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_SUB, &wf_store__subscription_desc, c->subscriptions,
                          c->n_subscriptions, NULL, NULL);
    ok = ok && queue_rows(tx, S_UPSERT_SIGNAL, &wf_store__signal_desc, c->signals, c->n_signals,
                          checks, &n_checks);
    if (ok) {
        queue_dels(tx, S_DEL_TOKEN, c->del_tokens, c->n_del_tokens);
        queue_dels(tx, S_DEL_JOB, c->del_jobs, c->n_del_jobs);
        queue_dels(tx, S_DEL_TIMER, c->del_timers, c->n_del_timers);
        queue_dels(tx, S_DEL_SUB, c->del_subscriptions, c->n_del_subscriptions);
    }
    for (size_t i = 0; ok && i < c->n_events; i++)
        ok = queue_event(tx->c, ctx, &c->events[i]);
    /* Deferred: the next flight carries them, and its caller reports
     * their failure (the checked update and the unique indexes raise).
     * Nobody reads the upserts' answers then, so the commit owes a wake-up
     * for every job type written ACTIVATABLE (a spare one costs a recheck). */
    if (tx->defer && ok) {
        for (size_t i = 0; i < c->n_jobs; i++)
            if (c->jobs[i].state == WF_JOB_ACTIVATABLE)
                tx_note_type(tx, c->jobs[i].job_type);
        tx->wrote_events |= c->n_events > 0;
        return WF_OK;
    }
    /* Out of memory half-way: what was queued still has to be collected. */
    int failed = -1;
    wf_code rc = flush(tx->c, ctx->deadline_ms, &failed, err);
    if (rc == WF_OK && !ok)
        return wf_store__nomem(err);
    for (size_t i = 0; i < n_checks; i++) {
        const write_check *w = &checks[i];
        if (rc != WF_OK) {
            if (w->slot != failed || rc != WF_E_CONFLICT)
                continue;
            return w->instance ? wf_error_set(err, WF_E_CONFLICT,
                                              "instance \"%s\" was changed concurrently", w->id)
                               : wf_error_set(err, WF_E_CONFLICT,
                                              "signal \"%s\" was already received", w->id);
        }
        if (!w->instance)
            continue;
        PGresult *res = wf_pg_take(tx->c, w->slot);
        long n = res != NULL ? atol(PQcmdTuples(res)) : 0;
        PQclear(res);
        if (n != 1)
            return wf_error_set(err, WF_E_CONFLICT, "instance \"%s\" was changed concurrently",
                                w->id);
    }
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < c->n_jobs; i++) {
        PGresult *res = wf_pg_take(tx->c, job_slots[i]);
        if (res != NULL && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't')
            tx_note_type(tx, c->jobs[i].job_type);
        PQclear(res);
    }
    tx->wrote_events |= c->n_events > 0;
    return WF_OK;
}

static wf_code
pg_idem_get(wf_tx *t, const char *method, const char *request_id, wf_idempotency_row *out,
            bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = p_tenant(&t->ctx, method);
    p_str(&p, request_id);
    wf_idempotency_row *rows;
    size_t n;
    wf_code rc = run_rows(tx->c, S_IDEM_GET, &p, t->ctx.deadline_ms, &wf_store__idempotency_desc,
                          t->ctx.arena, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

/* Queued on the flight being built, after BEGIN: it goes out with the
 * body's first statements (flush reads it). */
static wf_code
pg_idem_prefetch(wf_tx *t, const char *method, const char *request_id, wf_idempotency_row *out,
                 bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = p_tenant(&t->ctx, method);
    p_str(&p, request_id);
    if (p.oom)
        return wf_store__nomem(err);
    tx->lookup = (struct wf_pg_lookup){
        push(tx->c, S_IDEM_GET, &p, t->ctx.deadline_ms), request_id, t->ctx.arena, out, found};
    tx->c->lookup = &tx->lookup;
    return WF_OK;
}

static wf_code
pg_idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    wf_code rc = run_cmd(tx->c, S_IDEM_PUT, &p, t->ctx.deadline_ms, NULL, err);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                            in->request_id);
    return rc;
}

static wf_code
pg_idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    return run_cmd(tx->c, S_IDEM_AMEND, &p, t->ctx.deadline_ms, NULL, err);
}

/* The record and COMMIT in one flight (a failed record skips COMMIT). */
static wf_code
pg_commit_recorded(wf_tx *t, const wf_idempotency_row *in, bool amend, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    int64_t dl = t->ctx.deadline_ms;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__idempotency_desc, in, t->ctx.tenant, -1);
    wf_code rc;
    if (p.oom) {
        rc = wf_store__nomem(err);
    } else {
        int put = push(tx->c, amend ? S_IDEM_AMEND : S_IDEM_PUT, &p, dl);
        push(tx->c, S_COMMIT, NULL, dl);
        int failed = -1;
        rc = flush(tx->c, dl, &failed, err);
        if (rc == WF_E_CONFLICT && failed == put)
            rc = wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                              in->request_id);
    }
    for (int i = 0; rc == WF_OK && i < tx->n_seen; i++)
        defs_put((pg_store *)t->st, tx->seen[i]);
    conn_put((pg_store *)t->st, tx->c);
    if (rc == WF_OK)
        notes_of_tx(tx);
    free(tx);
    return rc;
}

static wf_code
pg_put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    p_row(&p, &wf_store__definition_desc, in, t->ctx.tenant, 2 /* version: assigned */);
    PGresult *res;
    wf_code rc = run(tx->c, S_PUT_DEFINITION, &p, t->ctx.deadline_ms, &res, err);
    /* No row: the key holds a version of another kind. The version and
     * the kind check read one snapshot, so a concurrent put of the other
     * kind either is seen here or takes the same version number (the
     * primary key makes one of the two CONFLICT). */
    bool kind_conflict = rc == WF_OK && PQntuples(res) == 0;
    if (rc == WF_OK && !kind_conflict)
        *version = (int32_t)atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (kind_conflict)
        return wf_error_set(err, WF_E_DEFINITION_KIND_CONFLICT,
                            "definition \"%s\" has versions of another kind", in->key);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "definition \"%s\" was deployed concurrently",
                            in->key);
    return rc;
}

static wf_code
get_definition(wf_pg_conn *c, const wf_store_ctx *ctx, const char *key, int32_t version,
               wf_definition_row *out, bool *found, wf_error *err)
{
    params p = p_tenant(ctx, key);
    p_i64(&p, version);
    wf_definition_row *rows;
    size_t n;
    wf_code rc = run_rows(c, S_GET_DEFINITION, &p, ctx->deadline_ms, &wf_store__definition_desc,
                          ctx->arena, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

static wf_code
pg_tx_get_definition(wf_tx *t, const char *key, int32_t version, wf_definition_row *out,
                     bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    int got = version > 0 ? defs_get((pg_store *)t->st, &t->ctx, key, version, out) : 0;
    if (got != 0) {
        *found = got > 0;
        return got > 0 ? WF_OK : wf_store__nomem(err);
    }
    wf_code rc = get_definition(tx->c, &t->ctx, key, version, out, found, err);
    if (rc == WF_OK && *found && tx->n_seen < DEFS_SEEN) {
        wf_definition_row *keep = wf_arena_alloc(t->ctx.arena, sizeof *keep);
        if (keep != NULL) {
            *keep = *out;
            tx->seen[tx->n_seen++] = keep;
        }
    }
    return rc;
}

static wf_code
pg_consume_signal(wf_tx *t, const char *name, const char *instance_id, const char *agg_type,
                  const char *agg_id, const char *consumer, const char *transition_id, int64_t now,
                  wf_signal_row *out, bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = p_tenant(&t->ctx, name);
    p_str(&p, instance_id);
    p_str(&p, agg_type);
    p_str(&p, agg_id);
    p_i64(&p, now);
    p_str(&p, consumer);
    p_str(&p, transition_id);
    wf_signal_row *rows;
    size_t n;
    int id = agg_type == NULL && agg_id == NULL ? S_CONSUME_SIGNAL_INSTANCE
             : instance_id == NULL              ? S_CONSUME_SIGNAL_AGGREGATE
                                                : S_CONSUME_SIGNAL;
    wf_code rc = run_rows(tx->c, id, &p, t->ctx.deadline_ms, &wf_store__signal_desc, t->ctx.arena,
                          &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

static wf_code
pg_lock_correlation(wf_tx *t, const char *name, const char *agg_type, const char *agg_id,
                    bool *awaited, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params lk = p_tenant(&t->ctx, agg_type);
    p_str(&lk, agg_id);
    wf_code rc = run_cmd(tx->c, S_LOCK_CORRELATION, &lk, t->ctx.deadline_ms, NULL, err);
    if (rc != WF_OK || awaited == NULL)
        return rc;
    /* A statement of its own, so its snapshot is taken after the lock is
     * granted and sees what the previous holder committed. */
    params p = p_tenant(&t->ctx, name);
    p_str(&p, agg_type);
    p_str(&p, agg_id);
    PGresult *res;
    rc = run(tx->c, S_SUB_AWAITED, &p, t->ctx.deadline_ms, &res, err);
    if (rc == WF_OK)
        *awaited = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return rc;
}

static wf_code
pg_aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = p_tenant(&t->ctx, agg_type);
    p_str(&p, agg_id);
    PGresult *res;
    wf_code rc = run(tx->c, S_AGGREGATE_LIVE, &p, t->ctx.deadline_ms, &res, err);
    if (rc == WF_OK)
        *live = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return rc;
}

/* ---- reads outside a unit of work -------------------------------------------- */

/* Runs one row-returning statement on a borrowed connection. */
static wf_code
query(pg_store *s, const wf_store_ctx *ctx, int id, const params *p, const wf_row_desc *d,
      void *rows, size_t *n, wf_error *err)
{
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = run_rows(c, id, p, ctx->deadline_ms, d, ctx->arena, rows, n, err);
    conn_put(s, c);
    return rc;
}

/* A query for at most one row, copied into out. */
static wf_code
query_one(pg_store *s, const wf_store_ctx *ctx, int id, const params *p, const wf_row_desc *d,
          void *out, bool *found, wf_error *err)
{
    void *rows;
    size_t n;
    wf_code rc = query(s, ctx, id, p, d, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            memcpy(out, rows, d->size);
    }
    return rc;
}

static wf_code
pg_get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key, int32_t version,
                  wf_definition_row *out, bool *found, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    int got = version > 0 ? defs_get(s, ctx, key, version, out) : 0;
    if (got != 0) {
        *found = got > 0;
        return got > 0 ? WF_OK : wf_store__nomem(err);
    }
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = get_definition(c, ctx, key, version, out, found, err);
    conn_put(s, c);
    if (rc == WF_OK && *found)
        defs_put(s, out); /* outside a transaction: committed */
    return rc;
}

static wf_code
pg_get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_instance_row *out,
                bool *found, wf_error *err)
{
    params p = p_tenant(ctx, id);
    return query_one((pg_store *)st, ctx, S_GET_INSTANCE, &p, &wf_store__instance_desc, out, found,
                     err);
}

static wf_code
pg_get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out, bool *found,
            wf_error *err)
{
    params p = p_tenant(ctx, id);
    return query_one((pg_store *)st, ctx, S_GET_TASK, &p, &wf_store__task_desc, out, found, err);
}

static wf_code
pg_get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key, wf_job_row *out,
                  bool *found, wf_error *err)
{
    params p = p_tenant(ctx, key);
    return query_one((pg_store *)st, ctx, S_GET_JOB_BY_KEY, &p, &wf_store__job_desc, out, found,
                     err);
}

/* Appends the keyset cursor (number, text) or two NULLs. */
static void
p_cursor(params *p, bool has, int64_t num, const char *str)
{
    if (has) {
        p_i64(p, num);
        p_str(p, str);
    } else {
        p_str(p, NULL);
        p_str(p, NULL);
    }
}

/* Appends the keyset cursor, or on the first page one below every row
 * (the smallest number, the empty id), so that the statement's cursor
 * condition is always an index condition. */
static void
p_after(params *p, bool has, int64_t num, const char *str)
{
    p_cursor(p, true, has ? num : INT64_MIN, has ? str : "");
}

static bool
given(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static wf_code
pg_list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f, size_t limit,
              bool has, int64_t c_num, const char *c_str, wf_task_row **rows, size_t *n,
              wf_error *err)
{
    /* A user's inbox (the group is then ignored), a group's, or all. */
    int id = f->user != NULL    ? S_LIST_TASKS_USER
             : f->group != NULL ? S_LIST_TASKS_GROUP
                                : S_LIST_TASKS_ALL;
    params p = {.a = ctx->arena};
    p_str(&p, ctx->tenant);
    if (id == S_LIST_TASKS_USER) {
        p_str(&p, f->user);
        p_text_array(&p, f->groups, f->n_groups);
    } else if (id == S_LIST_TASKS_GROUP) {
        p_str(&p, f->group);
    }
    p_int_array(&p, (const int *)f->states, f->n_states);
    p_after(&p, has, c_num, c_str);
    p_i64(&p, (int64_t)limit);
    return query((pg_store *)st, ctx, id, &p, &wf_store__task_desc, rows, n, err);
}

static wf_code
pg_list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f, size_t limit,
                  bool has, int64_t c_num, const char *c_str, wf_instance_row **rows, size_t *n,
                  wf_error *err)
{
    /* The index: the aggregate, else who started it, else the definition. */
    int id = f->aggregate_type != NULL && f->aggregate_id != NULL ? S_LIST_INSTANCES_AGGREGATE
             : f->started_by != NULL                              ? S_LIST_INSTANCES_STARTED_BY
             : f->definition_key != NULL                          ? S_LIST_INSTANCES_DEFINITION
                                                                  : S_LIST_INSTANCES_ALL;
    params p = p_tenant(ctx, f->started_by);
    p_str(&p, f->definition_key);
    p_str(&p, f->aggregate_type);
    p_str(&p, f->aggregate_id);
    p_int_array(&p, (const int *)f->statuses, f->n_statuses);
    p_bool(&p, f->roots_only);
    p_i64(&p, f->begun);
    p_after(&p, has, c_num, c_str);
    p_i64(&p, (int64_t)limit);
    return query((pg_store *)st, ctx, id, &p, &wf_store__instance_desc, rows, n, err);
}

static wf_code
pg_list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has, int64_t c_num,
                    const char *c_str, wf_definition_row **rows, size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    p_str(&p, ctx->tenant);
    p_cursor(&p, has, c_num, c_str);
    p_i64(&p, (int64_t)limit);
    return query((pg_store *)st, ctx, S_LIST_DEFINITIONS, &p, &wf_store__definition_desc, rows, n,
                 err);
}

static wf_code
pg_list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f, size_t limit,
                bool has, int64_t c_num, const char *c_str, wf_signal_row **rows, size_t *n,
                wf_error *err)
{
    /* The index: the dedupe key, else the instance, else the aggregate. */
    int id = given(f->signal_id)                                    ? S_LIST_SIGNALS_ID
             : f->instance_id != NULL                               ? S_LIST_SIGNALS_INSTANCE
             : f->aggregate_type != NULL && f->aggregate_id != NULL ? S_LIST_SIGNALS_AGGREGATE
                                                                    : S_LIST_SIGNALS_ALL;
    params p = p_tenant(ctx, f->instance_id);
    p_str(&p, f->aggregate_type);
    p_str(&p, f->aggregate_id);
    p_str(&p, f->signal_id);
    p_bool(&p, f->buffered_only);
    p_after(&p, has, c_num, c_str);
    p_i64(&p, (int64_t)limit);
    return query((pg_store *)st, ctx, id, &p, &wf_store__signal_desc, rows, n, err);
}

static wf_code
pg_list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id, unsigned states,
                   size_t limit, bool has, int64_t c_num, const char *c_str,
                   wf_work_item_row **rows, size_t *n, wf_error *err)
{
    params p = p_tenant(ctx, instance_id);
    p_i64(&p, (int64_t)states);
    p_after(&p, has, c_num, c_str);
    p_i64(&p, (int64_t)limit);
    return query((pg_store *)st, ctx, S_LIST_WORK_ITEMS, &p, &wf_store__work_item_desc, rows, n,
                 err);
}

/* ---- cross-instance work ----------------------------------------------------- */

/* The lease statement, which writes its JOB_ACTIVATED events itself, on
 * c: in the transaction c has open (or owes), or alone (autocommit). */
static wf_code
activate_on(wf_pg_conn *c, const wf_store_ctx *ctx, const char *job_type, const char *worker,
            size_t max, int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
            wf_error *err)
{
    params p = p_tenant(ctx, job_type);
    p_i64(&p, now);
    p_i64(&p, (int64_t)max);
    p_str(&p, worker);
    p_i64(&p, now + lease_ms * 1000);
    return run_rows(c, S_ACTIVATE_JOBS, &p, ctx->deadline_ms, &wf_store__job_desc, ctx->arena,
                    rows, n, err);
}

/* One statement, one flight: the leases and their events commit together. */
static wf_code
pg_activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type, const char *worker,
                 size_t max, int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
                 wf_error *err)
{
    pg_store *s = (pg_store *)st;
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc == WF_OK)
        rc = activate_on(c, ctx, job_type, worker, max, lease_ms, now, rows, n, err);
    conn_put(s, c);
    if (rc == WF_OK)
        notifier_note(s, *n > 0, false, NULL, 0);
    return rc;
}

static wf_code
pg_tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker, size_t max,
                    int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    wf_code rc = activate_on(tx->c, &t->ctx, job_type, worker, max, lease_ms, now, rows, n, err);
    /* The statement wrote the JOB_ACTIVATED events: the commit owes them. */
    if (rc == WF_OK)
        tx->wrote_events |= *n > 0;
    return rc;
}

static wf_code
pg_claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant, int64_t now,
                    size_t limit, int64_t claim_ms, wf_timer_row **rows, size_t *n,
                    wf_error *err)
{
    params p = {.a = ctx->arena};
    p_i64(&p, now);
    p_i64(&p, (int64_t)limit);
    p_i64(&p, now + claim_ms * 1000);
    if (tenant != NULL)
        p_str(&p, tenant);
    return query((pg_store *)st, ctx, tenant != NULL ? S_CLAIM_TIMERS_T : S_CLAIM_TIMERS, &p,
                 &wf_store__timer_desc, rows, n, err);
}

static wf_code
pg_find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                       wf_job_row **rows, size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    p_i64(&p, now);
    p_i64(&p, (int64_t)limit);
    if (ctx->tenant != NULL)
        p_str(&p, ctx->tenant);
    return query((pg_store *)st, ctx, ctx->tenant != NULL ? S_EXPIRED_LEASES_T : S_EXPIRED_LEASES,
                 &p, &wf_store__job_desc, rows, n, err);
}

/* Runs one of the scheduler's bounded UPDATE/DELETE statements ($1 time,
 * $2 limit; the shape after id, id + 1, takes $3 tenant) and returns the
 * rows it touched. */
static wf_code
batch_cmd(pg_store *s, const wf_store_ctx *ctx, int id, int64_t at, size_t limit, size_t *n,
          wf_error *err)
{
    params p = {.a = ctx->arena};
    p_i64(&p, at);
    p_i64(&p, (int64_t)limit);
    if (ctx->tenant != NULL) {
        p_str(&p, ctx->tenant);
        id++;
    }
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    long affected = 0;
    rc = run_cmd(c, id, &p, ctx->deadline_ms, &affected, err);
    conn_put(s, c);
    if (rc == WF_OK)
        *n = affected > 0 ? (size_t)affected : 0;
    return rc;
}

static wf_code
pg_expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit, size_t *n,
                  wf_error *err)
{
    return batch_cmd((pg_store *)st, ctx, S_EXPIRE_SIGNALS, now, limit, n, err);
}

static wf_code
pg_sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before, size_t limit,
         size_t *n, wf_error *err)
{
    int id = kind == WF_SWEEP_SIGNALS       ? S_SWEEP_SIGNALS
             : kind == WF_SWEEP_IDEMPOTENCY ? S_SWEEP_IDEMPOTENCY
                                            : S_SWEEP_EVENTS;
    return batch_cmd((pg_store *)st, ctx, id, before, limit, n, err);
}

static wf_code
pg_find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                      const char *instance_id, const char *agg_type, const char *agg_id,
                      wf_subscription_row **rows, size_t *n, wf_error *err)
{
    params p = p_tenant(ctx, name);
    if (instance_id != NULL) {
        p_str(&p, instance_id);
    } else {
        p_str(&p, agg_type);
        p_str(&p, agg_id);
    }
    return query((pg_store *)st, ctx,
                 instance_id != NULL ? S_FIND_SUBS_INSTANCE : S_FIND_SUBS_AGGREGATE, &p,
                 &wf_store__subscription_desc, rows, n, err);
}

/*
 * Runs sequencer batches on c until nothing committed is left unnumbered,
 * another session keeps the sequencer lock past the wait (then the caller
 * reads what is numbered: never a gap, perhaps not the newest), or
 * max_rounds batches ran (a backlog is caught up over several calls).
 * Each batch is its own transaction, so what is done stays done.
 */
static wf_code
sequence_pending(wf_pg_conn *c, const wf_store_ctx *ctx, int max_rounds, wf_error *err)
{
    for (int round = 0; round < max_rounds; round++) {
        /* Leave half of what remains of the deadline for the read. */
        int64_t wait = SEQ_WAIT_MS;
        if (ctx->deadline_ms != 0) {
            int64_t half = (ctx->deadline_ms - wf_mono_ms()) / 2;
            wait = half < wait ? half : wait;
            wait = wait < 1 ? 1 : wait;
        }
        params p = {.a = ctx->arena};
        p_i64(&p, SEQ_BATCH);
        p_i64(&p, wait);
        PGresult *res;
        wf_code rc = run(c, S_SEQUENCE, &p, ctx->deadline_ms, &res, err);
        if (rc != WF_OK)
            return rc;
        long long done = PQntuples(res) == 1 ? atoll(PQgetvalue(res, 0, 0)) : 0;
        PQclear(res);
        if (done < 0)
            WF_LOG(WF_LOG_DEBUG, "db_sequencer_busy", "wait_ms=%" PRId64, wait);
        if (done < SEQ_BATCH)
            break;
    }
    return WF_OK;
}

static wf_code
pg_read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after, const wf_event_filter *f,
               size_t limit, wf_event_row **rows, size_t *n, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = {.a = ctx->arena};
    p_str(&p, ctx->tenant);
    p_i64(&p, after);
    if (f->instance_id != NULL)
        p_str(&p, f->instance_id);
    p_str(&p, f->definition_key);
    p_text_array(&p, f->types, f->n_types);
    p_i64(&p, (int64_t)limit);
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    /* Number what committed before this call, then read in a later
     * snapshot: the read sees those numbers and every smaller one. */
    rc = sequence_pending(c, ctx, SEQ_READ_ROUNDS, err);
    if (rc == WF_OK)
        rc = run_rows(c, f->instance_id != NULL ? S_READ_EVENTS_INSTANCE : S_READ_EVENTS_ALL, &p,
                      ctx->deadline_ms, &wf_store__event_desc, ctx->arena, rows, n, err);
    conn_put(s, c);
    return rc;
}

static wf_code
pg_count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                 wf_store_counts *out, wf_error *err)
{
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get((pg_store *)st, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    params p = {.a = ctx->arena};
    p_i64(&p, now);
    p_i64(&p, (int64_t)max_types);
    PGresult *res;
    rc = run(c, S_COUNT_BACKLOG, &p, ctx->deadline_ms, &res, err);
    int k = rc == WF_OK ? PQntuples(res) : 0;
    if (rc == WF_OK) {
        out->jobs = wf_arena_calloc(ctx->arena, (size_t)k + 1, sizeof *out->jobs);
        if (out->jobs == NULL)
            rc = wf_store__nomem(err);
    }
    for (int r = 0; rc == WF_OK && r < k; r++) {
        long long n = atoll(PQgetvalue(res, r, 2));
        switch (atoi(PQgetvalue(res, r, 0))) {
        case 1:
            out->jobs[out->n_jobs].job_type = wf_arena_strdup(ctx->arena, PQgetvalue(res, r, 1));
            out->jobs[out->n_jobs++].count = n;
            if (out->jobs[out->n_jobs - 1].job_type == NULL)
                rc = wf_store__nomem(err);
            break;
        case 2:
            out->tasks_open = n;
            break;
        default:
            out->signals_buffered = n;
        }
    }
    PQclear(res);
    conn_put((pg_store *)st, c);
    return rc;
}

static wf_code
pg_sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    wf_pg_conn *c = NULL;
    wf_code rc = conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = sequence_pending(c, ctx, SEQ_TICK_ROUNDS, err);
    conn_put(s, c);
    return rc;
}

/* ---- migrations -------------------------------------------------------------- */

/* Applies every embedded migration not yet in schema_migrations, each in
 * its own transaction, while holding a session advisory lock: replicas
 * starting together queue on the lock, and each finds the work done. */
static wf_code
migrate(pg_store *s, wf_error *err)
{
    PGconn *pg = wf_pg_pool_connect(s->pool, 0, false, err);
    if (pg == NULL)
        return err != NULL ? err->code : WF_E_STORE_UNAVAILABLE;
    wf_pg_conn c = {.pg = pg};
    wf_arena *a = wf_arena_new();
    wf_code rc = a != NULL ? WF_OK : wf_store__nomem(err);
    if (rc == WF_OK)
        rc = run_cmd(&c, S_MIG_LOCK, NULL, 0, NULL, err);
    if (rc == WF_OK)
        rc = run_cmd(&c, S_MIG_TABLE, NULL, 0, NULL, err);
    for (int i = 0; rc == WF_OK && i < wf_pg_n_migrations; i++) {
        const wf_pg_migration *m = &wf_pg_migrations[i];
        params p = {.a = a};
        p_i64(&p, m->version);
        long have = 0;
        rc = run_cmd(&c, S_BEGIN, NULL, 0, NULL, err);
        if (rc == WF_OK)
            rc = run_cmd(&c, S_MIG_HAS, &p, 0, &have, err);
        if (rc == WF_OK && have == 0) {
            /* The migration text is ours, embedded at build time; it may
             * hold several statements, hence the simple protocol. */
            PGresult *res = PQexec(pg, m->sql);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                bool broken = false;
                rc = wf_pg_map_error(pg, res, "migration", "the schema", false, &broken, err);
            }
            PQclear(res);
            if (rc == WF_OK)
                rc = run_cmd(&c, S_MIG_RECORD, &p, 0, NULL, err);
            if (rc == WF_OK)
                WF_LOG(WF_LOG_INFO, "db_migrated", "version=%d", m->version);
        }
        if (rc == WF_OK)
            rc = run_cmd(&c, S_COMMIT, NULL, 0, NULL, err);
    }
    /* Closing the session releases the advisory lock and rolls back a
     * failed migration; unlock explicitly anyway on success. */
    if (rc == WF_OK)
        rc = run_cmd(&c, S_MIG_UNLOCK, NULL, 0, NULL, err);
    wf_pg_conn_clear(&c);
    PQfinish(pg);
    wf_arena_free(a);
    return rc;
}

/* ---- listener ---------------------------------------------------------------- */

/*
 * One thread, one connection outside the pool: LISTEN on both channels,
 * poll() its socket with a short timeout (so a stop is noticed within
 * LISTEN_POLL_MS), hand every notification to the callback. When the
 * connection is lost it retries with back-off, logging once when the
 * outage starts and once when it ends (failed attempts in between are
 * quiet), and after reconnecting calls the callback once per channel with
 * payload "" (what was sent meanwhile is lost). Only this thread touches
 * conn after the start.
 */
struct pg_listener {
    wf_pg_pool *pool; /* for connection parameters only; outlives the thread */
    wf_store_listen_fn fn;
    void *arg;
    wf_pg_conn conn;  /* conn.pg NULL while disconnected */
    atomic_bool stop; /* set by listener_stop */
    pthread_t thread;
};

/* Connects and LISTENs; false (connection closed) on any failure. */
static bool
listener_open(pg_listener *l)
{
    l->conn = (wf_pg_conn){.quiet = true};
    l->conn.pg = wf_pg_pool_connect(l->pool, 0, true, NULL);
    if (l->conn.pg == NULL)
        return false;
    int64_t deadline = wf_mono_ms() + LISTEN_STMT_MS;
    if (run_cmd(&l->conn, S_LISTEN_EVENTS, NULL, deadline, NULL, NULL) == WF_OK &&
        run_cmd(&l->conn, S_LISTEN_JOBS, NULL, deadline, NULL, NULL) == WF_OK)
        return true;
    wf_pg_conn_clear(&l->conn);
    PQfinish(l->conn.pg);
    l->conn.pg = NULL;
    return false;
}

static void
listener_close(pg_listener *l, const char *why)
{
    WF_LOG(WF_LOG_WARN, "db_listener_lost", "detail=%s", why);
    wf_pg_conn_clear(&l->conn);
    PQfinish(l->conn.pg);
    l->conn.pg = NULL;
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Delivers what libpq has queued; false when the connection broke. */
static bool
listener_drain(pg_listener *l)
{
    PGnotify *nf;
    while ((nf = PQnotifies(l->conn.pg)) != NULL) {
        l->fn(l->arg, nf->relname, nf->extra != NULL ? nf->extra : "");
        PQfreemem(nf);
    }
    return PQstatus(l->conn.pg) == CONNECTION_OK;
}

/* The next back-off step after ms. */
static int64_t
backoff_next(int64_t ms)
{
    return ms * 2 < LISTEN_BACKOFF_MAX_MS ? ms * 2 : LISTEN_BACKOFF_MAX_MS;
}

static void *
listener_main(void *arg)
{
    pg_listener *l = arg;
    /* Every retry waits (a server that accepts and then drops connections
     * must not make this spin); the back-off only starts over once a
     * connection has stayed up for LISTEN_HEALTHY_MS. */
    int64_t backoff = LISTEN_BACKOFF_MIN_MS, retry_at = 0, up_since = wf_mono_ms();
    while (!atomic_load(&l->stop)) {
        int64_t now = wf_mono_ms();
        if (l->conn.pg == NULL) {
            if (now < retry_at) {
                sleep_ms(retry_at - now < LISTEN_POLL_MS ? retry_at - now : LISTEN_POLL_MS);
                continue;
            }
            if (!listener_open(l)) {
                retry_at = wf_mono_ms() + backoff;
                backoff = backoff_next(backoff);
                continue;
            }
            up_since = wf_mono_ms();
            WF_LOG(WF_LOG_INFO, "db_listener_restored", "channels=wf_events,wf_jobs");
            l->fn(l->arg, "wf_events", "");
            l->fn(l->arg, "wf_jobs", "");
            continue;
        }
        if (now - up_since >= LISTEN_HEALTHY_MS)
            backoff = LISTEN_BACKOFF_MIN_MS;
        struct pollfd pfd = {PQsocket(l->conn.pg), POLLIN, 0};
        int r = pfd.fd >= 0 ? poll(&pfd, 1, LISTEN_POLL_MS) : -1;
        if (r < 0 && pfd.fd >= 0 && errno == EINTR)
            continue;
        if (r < 0 || (r > 0 && !PQconsumeInput(l->conn.pg)) || !listener_drain(l)) {
            listener_close(l, PQerrorMessage(l->conn.pg));
            retry_at = wf_mono_ms() + backoff;
            backoff = backoff_next(backoff);
        }
    }
    wf_pg_conn_clear(&l->conn);
    if (l->conn.pg != NULL)
        PQfinish(l->conn.pg);
    return NULL;
}

static void
listener_stop(pg_listener *l)
{
    if (l == NULL)
        return;
    atomic_store(&l->stop, true);
    pthread_join(l->thread, NULL);
    free(l);
}

static wf_code
pg_set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    if (s->listener != NULL)
        return wf_error_set(err, WF_E_INTERNAL, "the store already has a listener");
    pg_listener *l = calloc(1, sizeof *l);
    if (l == NULL)
        return wf_store__nomem(err);
    l->pool = s->pool;
    l->fn = fn;
    l->arg = arg;
    atomic_init(&l->stop, false);
    /* Listen before returning, so that no commit after this call goes
     * unheard; if Postgres is down the thread keeps trying. */
    if (!listener_open(l))
        WF_LOG(WF_LOG_WARN, "db_listener_lost", "detail=%s", "could not listen; retrying");
    if (pthread_create(&l->thread, NULL, listener_main, l) != 0) {
        wf_pg_conn_clear(&l->conn);
        if (l->conn.pg != NULL)
            PQfinish(l->conn.pg);
        free(l);
        return wf_error_set(err, WF_E_INTERNAL, "could not start the database listener");
    }
    s->listener = l;
    return WF_OK;
}

/* ---- construction ------------------------------------------------------------ */

static const wf_store_ops pg_ops = {
    .destroy = pg_destroy,
    .ready = pg_ready,
    .stats = pg_stats,
    .begin = pg_begin,
    .lock_root = pg_lock_root,
    .apply = pg_apply,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .idem_get = pg_idem_get,
    .idem_put = pg_idem_put,
    .idem_amend = pg_idem_amend,
    .idem_prefetch = pg_idem_prefetch,
    .defer_writes = pg_defer_writes,
    .commit_recorded = pg_commit_recorded,
    .put_definition = pg_put_definition,
    .tx_get_definition = pg_tx_get_definition,
    .consume_signal = pg_consume_signal,
    .lock_correlation = pg_lock_correlation,
    .aggregate_live = pg_aggregate_live,
    .get_definition = pg_get_definition,
    .get_instance = pg_get_instance,
    .get_task = pg_get_task,
    .get_job_by_key = pg_get_job_by_key,
    .list_tasks = pg_list_tasks,
    .list_instances = pg_list_instances,
    .list_definitions = pg_list_definitions,
    .list_signals = pg_list_signals,
    .list_work_items = pg_list_work_items,
    .activate_jobs = pg_activate_jobs,
    .tx_activate_jobs = pg_tx_activate_jobs,
    .claim_due_timers = pg_claim_due_timers,
    .find_expired_leases = pg_find_expired_leases,
    .expire_signals = pg_expire_signals,
    .sweep = pg_sweep,
    .find_subscriptions = pg_find_subscriptions,
    .read_events = pg_read_events,
    .sequence_events = pg_sequence_events,
    .count_backlog = pg_count_backlog,
    .set_listener = pg_set_listener,
};

wf_store *
wf_store_pg_new(const wf_store_pg_config *cfg, wf_error *err)
{
    pg_store *s = calloc(1, sizeof *s);
    if (s == NULL) {
        wf_store__nomem(err);
        return NULL;
    }
    s->base.ops = &pg_ops;
    pthread_mutex_init(&s->defs_mu, NULL);
    s->pool = wf_pg_pool_new(cfg, err);
    if (s->pool == NULL || migrate(s, err) != WF_OK) {
        pg_destroy(&s->base);
        return NULL;
    }
    if (!notifier_start(s)) {
        wf_error_set(err, WF_E_INTERNAL, "could not start the database notifier");
        pg_destroy(&s->base);
        return NULL;
    }
    return &s->base;
}
