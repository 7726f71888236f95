/*
 * pg/stmts.c: the Postgres store's statement table, every SQL text of the
 * service (pg/store.c explains how statements are shaped and planned).
 */
#include "pg/pg_int.h"

/* Any 64-bit constant, the same in every replica: serialises migrations.
 * (The sequencer's lock, in 0001_init.sql, is 7318240518.) */
#define MIGRATION_LOCK "7318240517"

/* Column lists, in the order of the row descriptors in store_rows.c. */
#define COLS_DEFINITIONS                                                                           \
    "tenant_id, key, version, kind, name, content, content_hash, valid_from, "                     \
    "valid_until, created_at, created_by"
#define COLS_INSTANCES                                                                             \
    "id, tenant_id, definition_key, definition_version, parent_id, root_id, status, "              \
    "variables_json, aggregate_type, aggregate_id, started_by, title, last_error, "                \
    "incident_code, incident_transition_id, incident_at, incident_attempts, retries, "             \
    "join_mode, join_quorum, on_all_completed, join_fired, created_at, updated_at, "               \
    "ended_at, version"
#define COLS_TASKS                                                                                 \
    "id, tenant_id, instance_id, root_id, definition_key, transition_id, "                         \
    "work_item_id, title, assignee_kind, assignee_id, assigned_by, status, "                       \
    "claimed_by, completed_by, created_at, due_at, ended_at, priority, follow_up_at, owner, "      \
    "delegation_state, due_fixed"
#define COLS_TOKENS "id, tenant_id, root_id, instance_id, place_id, created_seq"
#define COLS_WORK_ITEMS                                                                            \
    "id, tenant_id, root_id, instance_id, transition_id, trigger, token_ids, state, "              \
    "enabled_at, finished_at, deadline, assignee_kind, assignee_id, job_type, signal_name, "       \
    "finished_by, foreach_json"
#define COLS_JOBS                                                                                  \
    "id, key, tenant_id, root_id, instance_id, work_item_id, transition_id, job_type, "            \
    "state, worker, attempt, max_attempts, activatable_at, lease_expires_at, "                     \
    "initial_backoff_ms, backoff_multiplier, max_backoff_ms, variables_json, "                     \
    "idempotency_key, compensation, last_error, created_at, priority, activation_rank, "           \
    "fairness_key"
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
#define COLS_BATCHES                                                                               \
    "id, tenant_id, action, state, filter_json, reason, created_by, total, done, failed, "         \
    "errors_json, cursor, lease_owner, lease_until, created_at, updated_at, ended_at, version, "   \
    "args_json"
#define COLS_SCHEDULES                                                                             \
    "id, tenant_id, definition_key, def_version, variables_json, aggregate_type, aggregate_id, "   \
    "spec_json, overlap, catchup_window_ms, pause_after_failures, state, pause_reason, note, "     \
    "next_fire_at, due_at, last_instance_id, failures, created_by, lease_owner, lease_until, "     \
    "created_at, updated_at, version, buffered_at"
#define COLS_RESOURCES                                                                             \
    "name, tenant_id, capacity, per_key, rate_limit, rate_period_ms, strategy, created_by, "       \
    "created_at, updated_at, version"
#define COLS_SCHEDULE_RUNS                                                                         \
    "schedule_id, tenant_id, nominal_at, actual_at, outcome, manual, instance_id, detail, "        \
    "buffered_at, cancelled_instance_id, backfill"
#define COLS_DELIVERIES                                                                            \
    "d.tenant_id, d.signal_log_id, d.instance_id, d.root_id, d.aggregate_type, "                   \
    "d.aggregate_id, d.seq, d.state, d.created_at, d.done_at, d.claimed_until"
/* Deliveries to the aggregate ($1 tenant, $3 type, $4 id) still pending,
 * and signals to it QUEUED (received before a bound, when given). */
#define AGG_PENDING                                                                                \
    "SELECT 1 FROM signal_deliveries WHERE tenant_id = $1 AND aggregate_type = $3 AND "            \
    "aggregate_id = $4 AND state = 0"
#define AGG_QUEUED(bound)                                                                          \
    "SELECT 1 FROM signals WHERE tenant_id = $1 AND aggregate_type = $3 AND aggregate_id = $4 "    \
    "AND outcome = 6" bound
_Static_assert(S_COUNT_ <= WF_STORE_PG_MAX_STMTS, "prepared-statement bits (pg/pool.h)");
_Static_assert(S_EXPIRE_SIGNALS_T == S_EXPIRE_SIGNALS + 1 &&
                   S_SWEEP_SIGNALS_T == S_SWEEP_SIGNALS + 1 &&
                   S_SWEEP_IDEMPOTENCY_T == S_SWEEP_IDEMPOTENCY + 1 &&
                   S_SWEEP_EVENTS_T == S_SWEEP_EVENTS + 1 &&
                   S_SWEEP_DELIVERIES_T == S_SWEEP_DELIVERIES + 1,
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
/* A row of a tree whose root is SUSPENDED (status 7): one probe of the
 * partial index instances_suspended (migrations/0010_suspend.sql) per
 * candidate of a lease or timer claim. */
#define SUSPENDED_ROOT_OF_JOBS                                                                     \
    "EXISTS (SELECT 1 FROM instances r WHERE r.tenant_id = jobs.tenant_id AND r.id = "             \
    "jobs.root_id AND r.status = 7)"
/* The activatable jobs of type $2 (tenant $1, now $3). */
#define ACTIVATABLE_WHERE                                                                          \
    "tenant_id = $1 AND job_type = $2 AND state = 1 AND activation_rank <= $3 AND "                \
    "activatable_at <= $3 AND NOT " SUSPENDED_ROOT_OF_JOBS
/* ... with their answer bytes. */
#define ACTIVATABLE_JOB                                                                            \
    "SELECT ctid AS tid, " COLS_JOBS ", octet_length(coalesce(variables_json, '')) + "             \
    "octet_length(coalesce(last_error, '')) + octet_length(coalesce(idempotency_key, '')) + "      \
    "1024 AS b FROM jobs WHERE " ACTIVATABLE_WHERE
/* activate_jobs_fair: k, the head (lowest rank) of each fairness key's queue,
 * in key order, by a skip scan of jobs_activation_fair (one descent per
 * key, at most $4 keys); h, those heads locked, found by their ctids (a
 * Tid Scan each, never a scan of the type's queue); a, the first $4 by rank
 * over every key (jobs_activation_rank). A pass is the heads by rank, then
 * the rest of a by rank ($4 in all, p orders them): about 2 x $4 index
 * entries read and 2 x $4 rows locked. When no job of the type has a key
 * (one key, ''), one descent of the index to its last key finds so and k
 * is empty: a's order, as before keys. A head a concurrent pass holds is
 * skipped: its key may still come by rank. */
#define ACTIVATE_JOBS_FAIR                                                                         \
    "WITH RECURSIVE k(fk, tid) AS ((SELECT fairness_key, ctid FROM jobs WHERE " ACTIVATABLE_WHERE  \
    " AND (SELECT fairness_key FROM jobs WHERE tenant_id = $1 AND job_type = $2 AND state = 1 "    \
    "ORDER BY fairness_key DESC LIMIT 1) > '' ORDER BY fairness_key, activation_rank, id LIMIT "   \
    "1) "                                                                                          \
    "UNION ALL SELECT x.* FROM k CROSS JOIN "                                                      \
    "LATERAL (SELECT fairness_key, ctid FROM jobs WHERE " ACTIVATABLE_WHERE                        \
    " AND fairness_key > k.fk ORDER BY fairness_key, activation_rank, id LIMIT 1) x), "            \
    "h AS (SELECT x.* FROM unnest(ARRAY(SELECT tid FROM k LIMIT $4)) AS hk(tid) CROSS JOIN "       \
    "LATERAL (" ACTIVATABLE_JOB " AND ctid = hk.tid FOR UPDATE SKIP LOCKED) x), "                  \
    "a AS (" ACTIVATABLE_JOB " ORDER BY activation_rank, id LIMIT $4 FOR UPDATE SKIP LOCKED), "    \
    "l AS (SELECT DISTINCT ON (tid) * FROM (SELECT 0 AS p, * FROM h UNION ALL SELECT 1 AS p, * "   \
    "FROM a) y ORDER BY tid, p), "                                                                 \
    "o AS (SELECT * FROM l ORDER BY p, activation_rank, id LIMIT $4), "                            \
    "c AS (SELECT tid FROM (SELECT tid, sum(b) OVER (ORDER BY p, activation_rank, id) AS t FROM "  \
    "o) x WHERE $7::bigint = 0 OR t <= $7::bigint), "                                              \
    "u AS (UPDATE jobs j SET state = 2, key = j.instance_id || '.' || gen_random_uuid()::text, "   \
    "worker = $5, lease_expires_at = $6 WHERE j.ctid = ANY(ARRAY(SELECT tid FROM c)) "             \
    "RETURNING j.*) "                                                                              \
    "SELECT " COLS_JOBS " FROM ((SELECT u.*, o.p FROM u JOIN o ON o.id = u.id) UNION ALL "         \
    "(SELECT j.*, o.p FROM jobs j JOIN (SELECT tid, p FROM o WHERE NOT EXISTS (SELECT 1 FROM c) "  \
    "ORDER BY p, activation_rank, id LIMIT 1) o ON j.ctid = o.tid)) z "                            \
    "ORDER BY p, activation_rank, id"
#define SUSPENDED_ROOT_OF_TIMERS                                                                   \
    "EXISTS (SELECT 1 FROM instances r WHERE r.tenant_id = timers.tenant_id AND r.id = "           \
    "timers.root_id AND r.status = 7)"
/* update_instance*: every column but the keys (tenant_id $2, root_id $6,
 * id $1), in the order of the instance descriptor. */
#define INSTANCE_SET                                                                               \
    "definition_key = $3, definition_version = $4, parent_id = $5, status = $7, variables_json "   \
    "= $8, aggregate_type = $9, aggregate_id = $10, started_by = $11, title = $12, last_error = "  \
    "$13, incident_code = $14, incident_transition_id = $15, incident_at = $16, "                  \
    "incident_attempts = $17, retries = $18, join_mode = $19, join_quorum = $20, "                 \
    "on_all_completed = $21, join_fired = $22, created_at = $23, updated_at = $24, ended_at = "    \
    "$25, version = $26::bigint + 1"
#define OPT(param, col) "(" param "::text IS NULL OR " col " = " param ")"
#define ALL(conds) "CASE WHEN " conds " THEN true ELSE false END"
/* list_instances_*: $13, $14 the end range (0 = unbounded; either set
 * excludes instances that have not ended), $15 the variable filters as one
 * containment document under the tenant's key (NULL = none), matched
 * against the expression that instances_variables (0012) indexes. The
 * variables shape names it outside the CASE, so that the index serves it. */
#define VARS_DOC "jsonb_set('{}'::jsonb, ARRAY[tenant_id], variables_json::jsonb)"
#define ENDED_RANGE                                                                                \
    "(($13::bigint = 0 AND $14::bigint = 0) OR (ended_at <> 0 AND ended_at >= $13 AND ($14 = 0 "   \
    "OR ended_at < $14)))"
#define VARS_OPT "($15::jsonb IS NULL OR " VARS_DOC " @> $15)"
#define LIST_INSTANCES_CONDS(opts)                                                                 \
    opts " AND ($6::smallint[] IS NULL OR status = ANY($6)) AND (NOT $7::boolean OR "              \
         "parent_id IS NULL) AND ($8::int = 0 OR (status = 1 AND NOT coalesce((SELECT true "       \
         "FROM instances c WHERE c.tenant_id = i.tenant_id AND c.parent_id = i.id LIMIT 1), "      \
         "false) AND coalesce((SELECT d.kind = 1 FROM definitions d WHERE d.tenant_id = "          \
         "i.tenant_id AND d.key = i.definition_key COLLATE \"C\" AND d.version = "                 \
         "i.definition_version), false)) = ($8 = 1)) AND " ENDED_RANGE
#define LIST_INSTANCES_PAGE                                                                        \
    "(created_at, id) > ($9::bigint, $10::text) AND created_at < $12::bigint"
/* Newest first: the cursor ($9, $10) is the upper end (created_before
 * moves it), $12 the lower bound of the creation time (created_after, 0 =
 * unbounded). */
#define LIST_INSTANCES_PAGE_NEWEST                                                                 \
    "(created_at, id) < ($9::bigint, $10::text) AND created_at >= $12::bigint"
#define LIST_INSTANCES_OLDEST " ORDER BY created_at, id LIMIT $11"
#define LIST_INSTANCES_NEWEST " ORDER BY created_at DESC, id DESC LIMIT $11"
/* The residual filters of a task listing: states and the due window
 * (0 = no bound), one CASE. */
#define TASKS_WHERE(states, da, db)                                                                \
    "AND " ALL("(" states "::smallint[] IS NULL OR status = ANY(" states ")) AND (" da             \
               "::bigint = 0 OR (due_at <> 0 AND due_at > " da ")) AND (" db                       \
               "::bigint = 0 OR (due_at <> 0 AND due_at < " db "))")
/* The due window alone, for the open tasks of a user's groups, whose
 * states filter stays as the planner of tasks_group_open expects it. */
#define DUE_WINDOW(da, db)                                                                         \
    ALL("(" da "::bigint = 0 OR (due_at <> 0 AND due_at > " da ")) AND (" db                       \
        "::bigint = 0 OR (due_at <> 0 AND due_at < " db "))")
/* The due key of the due order (tasks without a due time last), as
 * indexed by migrations/0011_inbox.sql. */
#define DUE_KEY "(CASE WHEN due_at = 0 THEN 9223372036854775807 ELSE due_at END)"
/* Keyset conditions and orders: by (created_at, id), or by (key,
 * created_at, id), the whole key in one direction. */
#define CUR2(op, a, b) "(created_at, id) " op " (" a "::bigint, " b "::text)"
#define CUR3(k, op, a, b, c)                                                                       \
    "(" k ", created_at, id) " op " (" a "::bigint, " b "::bigint, " c "::text)"
#define ORD2(d) "created_at" d ", id" d
#define ORD3(k, d) k d ", created_at" d ", id" d
#define TASKS_TAIL(cur, ord, lim) " AND " cur " ORDER BY " ord " LIMIT " lim
#define LIST_TASKS_USER(cur, ord, lim)                                                             \
    "SELECT " COLS_TASKS " FROM ((SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 AND "      \
    "assignee_kind = 1 AND assignee_id = $2 " TASKS_WHERE("$4", "$5", "$6") TASKS_TAIL(            \
        cur, ord, lim) ") UNION ALL (SELECT t.* FROM (SELECT DISTINCT "                            \
                       "unnest($3::text[]) AS gid) g CROSS JOIN LATERAL (SELECT " COLS_TASKS       \
                       " FROM tasks WHERE tenant_id = $1 AND assignee_kind = 2 AND "               \
                       "assignee_id = g.gid AND status = 1 AND ($4::smallint[] IS NULL "           \
                       "OR 1 = ANY($4)) AND " DUE_WINDOW("$5", "$6") TASKS_TAIL(                   \
                           cur, ord,                                                               \
                           lim) ") t) UNION ALL (SELECT " COLS_TASKS                               \
                                " FROM tasks WHERE tenant_id = $1 AND claimed_by = $2 AND "        \
                                "(assignee_kind = 1 AND assignee_id = $2) IS NOT TRUE AND "        \
                                "(assignee_kind = 2 AND status = 1 AND assignee_id = "             \
                                "ANY($3::text[])) IS NOT TRUE " TASKS_WHERE("$4", "$5", "$6")      \
                                    TASKS_TAIL(cur, ord, lim) ")) x ORDER BY " ord " LIMIT " lim
#define LIST_TASKS_GROUP(cur, ord, lim)                                                            \
    "SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 AND assignee_kind = 2 AND "             \
    "assignee_id = $2 " TASKS_WHERE("$3", "$4", "$5") TASKS_TAIL(cur, ord, lim)
#define LIST_TASKS_ALL(cur, ord, lim)                                                              \
    "SELECT " COLS_TASKS " FROM tasks WHERE tenant_id = $1 " TASKS_WHERE("$2", "$3", "$4")         \
        TASKS_TAIL(cur, ord, lim)
#define LIST_INSTANCES_IN(key, opts, page, order)                                                  \
    "SELECT " COLS_INSTANCES " FROM instances i WHERE tenant_id = $1 " key                         \
    " AND " ALL(LIST_INSTANCES_CONDS(opts) " AND " VARS_OPT) " AND " page order
#define LIST_INSTANCES(key, opts)                                                                  \
    LIST_INSTANCES_IN(key, opts, LIST_INSTANCES_PAGE, LIST_INSTANCES_OLDEST)
#define LIST_INSTANCES_NEWEST_FIRST(key, opts)                                                     \
    LIST_INSTANCES_IN(key, opts, LIST_INSTANCES_PAGE_NEWEST, LIST_INSTANCES_NEWEST)
/* By variables: the containment, whose document names the tenant as its
 * one key, is the only condition an index can serve (instances_variables):
 * the tenant and the page are checked on the rows it finds, which are then
 * sorted, because a GIN index keeps no order. Left to choose, a generic
 * plan would rather range-scan every instance of the tenant in creation
 * order than trust the containment's unknown selectivity. */
#define LIST_INSTANCES_VARS_IN(opts, page, order)                                                  \
    "SELECT " COLS_INSTANCES " FROM instances i WHERE " VARS_DOC                                   \
    " @> $15 AND " ALL("tenant_id = $1 AND " LIST_INSTANCES_CONDS(opts) " AND " page) order
#define LIST_INSTANCES_VARS(opts)                                                                  \
    LIST_INSTANCES_VARS_IN(opts, LIST_INSTANCES_PAGE, LIST_INSTANCES_OLDEST)
#define LIST_INSTANCES_VARS_NEWEST_FIRST(opts)                                                     \
    LIST_INSTANCES_VARS_IN(opts, LIST_INSTANCES_PAGE_NEWEST, LIST_INSTANCES_NEWEST)
/* The filters of each shape of a listing but its index condition. */
#define LI_OPTS_AGGREGATE OPT("$2", "started_by") " AND " OPT("$3", "definition_key")
#define LI_OPTS_STARTED_BY                                                                         \
    OPT("$3", "definition_key")                                                                    \
    " AND " OPT("$4", "aggregate_type") " AND " OPT("$5", "aggregate_id")
#define LI_OPTS_DEFINITION                                                                         \
    OPT("$2", "started_by") " AND " OPT("$4", "aggregate_type") " AND " OPT("$5", "aggregate_id")
#define LI_OPTS_ALL                                                                                \
    OPT("$2", "started_by")                                                                        \
    " AND " OPT("$3", "definition_key") " AND " OPT("$4", "aggregate_type") " AND " OPT(           \
        "$5", "aggregate_id")
/* list_work_items: $3 holds a bit per work item state (0 = any). */
#define WORK_ITEMS_STATES ALL("($3::int = 0 OR ($3::int >> state) & 1 = 1)")
#define SIGNALS_INSTANCE_OPT "($2::text IS NULL OR instance_id = $2 OR consumed_by_instance = $2)"
#define SIGNALS_OPTS "(NOT $6::boolean OR buffered)"
#define SIGNALS_AFTER "AND (received_at, id) > ($7::bigint, $8::text)"
#define SIGNALS_REST                                                                               \
    ALL(OPT("$3", "aggregate_type") " AND " OPT("$4", "aggregate_id") " AND " OPT(                 \
        "$5", "signal_id") " AND " SIGNALS_OPTS)                                                   \
    " " SIGNALS_AFTER " ORDER BY received_at, id LIMIT $9"
/* list_signals_instance: the delivery of the fanned-out signal row t to
 * the instance $2, by signal_deliveries_log (0019). A row that a release
 * before 0019 wrote during a rollout has received_at 0. */
#define DELIVERY_OF(t)                                                                             \
    "SELECT 1 FROM signal_deliveries d WHERE d.tenant_id = $1 AND d.instance_id = $2 AND "         \
    "d.received_at IN (0, " t ".received_at) AND d.signal_log_id = " t ".id"
#define COLS_SIGNALS_S                                                                             \
    "s.id, s.tenant_id, s.signal_id, s.name, s.instance_id, s.aggregate_type, s.aggregate_id, "    \
    "s.payload_json, s.outcome, s.buffered, s.received_at, s.expires_at, s.consumed_at, "          \
    "s.consumed_by_instance, s.transition_id, s.discarded"
/* ... and every delivery to it, in the log's order from the same index,
 * each joined to its signal row by key. */
#define DELIVERIES_OF_INSTANCE                                                                     \
    "SELECT " COLS_SIGNALS_S ", true, d.state, d.done_at FROM signal_deliveries d JOIN signals s " \
    "ON s.tenant_id = d.tenant_id AND s.id = d.signal_log_id WHERE d.tenant_id = $1 AND "          \
    "d.instance_id = $2 AND (d.received_at, d.signal_log_id) > ($7::bigint, $8::text) AND "        \
    "NOT $6::boolean AND " ALL(                                                                    \
        OPT("$3", "d.aggregate_type") " AND " OPT("$4", "d.aggregate_id") " AND " OPT(             \
            "$5", "s.signal_id")) " ORDER BY d.received_at, d.signal_log_id LIMIT $9"
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

static const wf_store_pg_stmt stmts[S_COUNT_] = {
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
         "started_by, title, last_error, incident_code, incident_transition_id, incident_at, "
         "incident_attempts, retries, join_mode, join_quorum, on_all_completed, "
         "join_fired, created_at, updated_at, ended_at, version) VALUES ($1, $2, $3, $4, "
         "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, "
         "$22, $23, $24, $25, $26::bigint + 1)",
         "instance"},
    [S_UPDATE_INSTANCE] = {"update_instance",
                           "UPDATE instances SET " INSTANCE_SET " WHERE tenant_id = $2 AND root_id "
                           "= $6 AND id = $1 AND version = $26",
                           "instance"},
    /* The same, failing when it updates no row (a stale version), for
     * deferred writes whose row count nobody reads: 1 / 0 raises
     * division_by_zero, which pg/errors.c maps to CONFLICT for this
     * statement only. */
    [S_UPDATE_INSTANCE_CHECKED] = {"update_instance_checked",
                                   "WITH u AS (UPDATE instances SET " INSTANCE_SET
                                   " WHERE tenant_id = $2 AND root_id = $6 AND id = $1 AND "
                                   "version = $26 RETURNING 1) SELECT 1 / count(*) FROM u",
                                   "instance"},
    /* Keyed by (tenant_id, root_id, id), which an update leaves as it is:
     * a distributed table refuses to rewrite its distribution column. */
    [S_UPSERT_TASK] =
        {"upsert_task",
         "INSERT INTO tasks (id, tenant_id, instance_id, root_id, definition_key, "
         "transition_id, work_item_id, title, assignee_kind, assignee_id, assigned_by, "
         "status, claimed_by, completed_by, created_at, due_at, ended_at, priority, "
         "follow_up_at, owner, delegation_state, due_fixed) VALUES ($1, $2, $3, $4, $5, $6, "
         "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) ON "
         "CONFLICT "
         "(tenant_id, root_id, id) DO UPDATE SET instance_id = EXCLUDED.instance_id, "
         "definition_key = EXCLUDED.definition_key, transition_id = "
         "EXCLUDED.transition_id, work_item_id = EXCLUDED.work_item_id, title = "
         "EXCLUDED.title, assignee_kind = EXCLUDED.assignee_kind, assignee_id = "
         "EXCLUDED.assignee_id, assigned_by = EXCLUDED.assigned_by, status = "
         "EXCLUDED.status, claimed_by = EXCLUDED.claimed_by, completed_by = "
         "EXCLUDED.completed_by, created_at = EXCLUDED.created_at, due_at = "
         "EXCLUDED.due_at, ended_at = EXCLUDED.ended_at, priority = EXCLUDED.priority, "
         "follow_up_at = EXCLUDED.follow_up_at, owner = EXCLUDED.owner, delegation_state = "
         "EXCLUDED.delegation_state, due_fixed = EXCLUDED.due_fixed",
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
         "assignee_id, job_type, signal_name, finished_by, foreach_json) VALUES ($1, $2, $3, "
         "$4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT "
         "(tenant_id, root_id, "
         "id) DO UPDATE SET instance_id = EXCLUDED.instance_id, transition_id = "
         "EXCLUDED.transition_id, trigger = EXCLUDED.trigger, token_ids = EXCLUDED.token_ids, "
         "state = EXCLUDED.state, enabled_at = EXCLUDED.enabled_at, finished_at = "
         "EXCLUDED.finished_at, deadline = EXCLUDED.deadline, assignee_kind = "
         "EXCLUDED.assignee_kind, assignee_id = EXCLUDED.assignee_id, job_type = "
         "EXCLUDED.job_type, signal_name = EXCLUDED.signal_name, finished_by = "
         "EXCLUDED.finished_by, foreach_json = EXCLUDED.foreach_json",
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
         "variables_json, idempotency_key, compensation, last_error, created_at, priority, "
         "activation_rank, fairness_key) VALUES "
         "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
         "$18, $19, $20, $21, $22, $23, $24, coalesce($25, '')) ON CONFLICT (tenant_id, root_id, "
         "id) DO UPDATE SET "
         "key "
         "= EXCLUDED.key, instance_id = EXCLUDED.instance_id, work_item_id = "
         "EXCLUDED.work_item_id, transition_id = EXCLUDED.transition_id, job_type = "
         "EXCLUDED.job_type, state = EXCLUDED.state, worker = EXCLUDED.worker, attempt = "
         "EXCLUDED.attempt, max_attempts = EXCLUDED.max_attempts, activatable_at = "
         "EXCLUDED.activatable_at, lease_expires_at = EXCLUDED.lease_expires_at, "
         "initial_backoff_ms = EXCLUDED.initial_backoff_ms, backoff_multiplier = "
         "EXCLUDED.backoff_multiplier, max_backoff_ms = EXCLUDED.max_backoff_ms, "
         "variables_json = EXCLUDED.variables_json, idempotency_key = "
         "EXCLUDED.idempotency_key, compensation = EXCLUDED.compensation, last_error = "
         "EXCLUDED.last_error, created_at = EXCLUDED.created_at, priority = EXCLUDED.priority, "
         "activation_rank = EXCLUDED.activation_rank, fairness_key = EXCLUDED.fairness_key "
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
    /* Every event of a unit of work in one statement, one array per
     * column (pg/tx.c, p_columns), in order: their ids keep it. */
    [S_INSERT_EVENTS] = {"insert_events",
                         "INSERT INTO events (tenant_id, root_id, instance_id, type, actor, "
                         "data_json, time) SELECT * FROM unnest($1::text[], $2::text[], "
                         "$3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])",
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
     * COMPENSATING, 7 SUSPENDED), through instances_aggregate. */
    [S_AGGREGATE_LIVE] = {"aggregate_live",
                          "SELECT EXISTS (SELECT 1 FROM instances WHERE tenant_id = $1 AND "
                          "aggregate_type = $2 AND aggregate_id = $3 AND parent_id IS NULL AND "
                          "status IN (1, 4, 5, 7))",
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
    /* $2 user, $3 user's groups, $4 states, ($5, $6) due window, then the
     * cursor and the limit: given to the user, open in one of the groups,
     * or claimed by the user (and not already in the first two), each
     * branch in index order. Six statements per shape: by creation,
     * priority or due key, each ascending and descending (a backward scan
     * of the same index, migrations/0011_inbox.sql). The cursor of the
     * creation order is ($7 created_at, $8 id) and the limit $9; of the
     * others ($7 key, $8 created_at, $9 id) and the limit $10. */
    [S_LIST_TASKS_USER] = {"list_tasks_user",
                           LIST_TASKS_USER(CUR2(">", "$7", "$8"), ORD2(""), "$9"), "task"},
    [S_LIST_TASKS_USER + 1] = {"list_tasks_user_desc",
                               LIST_TASKS_USER(CUR2("<", "$7", "$8"), ORD2(" DESC"), "$9"), "task"},
    [S_LIST_TASKS_USER +
        2] = {"list_tasks_user_priority",
              LIST_TASKS_USER(CUR3("priority", ">", "$7", "$8", "$9"), ORD3("priority", ""), "$10"),
              "task"},
    [S_LIST_TASKS_USER + 3] = {"list_tasks_user_priority_desc",
                               LIST_TASKS_USER(CUR3("priority", "<", "$7", "$8", "$9"),
                                               ORD3("priority", " DESC"), "$10"),
                               "task"},
    [S_LIST_TASKS_USER +
        4] = {"list_tasks_user_due",
              LIST_TASKS_USER(CUR3(DUE_KEY, ">", "$7", "$8", "$9"), ORD3(DUE_KEY, ""), "$10"),
              "task"},
    [S_LIST_TASKS_USER +
        5] = {"list_tasks_user_due_desc",
              LIST_TASKS_USER(CUR3(DUE_KEY, "<", "$7", "$8", "$9"), ORD3(DUE_KEY, " DESC"), "$10"),
              "task"},
    /* $2 group, $3 states, ($4, $5) due window; cursor ($6, $7) and limit
     * $8, or ($6, $7, $8) and $9. */
    [S_LIST_TASKS_GROUP] = {"list_tasks_group",
                            LIST_TASKS_GROUP(CUR2(">", "$6", "$7"), ORD2(""), "$8"), "task"},
    [S_LIST_TASKS_GROUP + 1] = {"list_tasks_group_desc",
                                LIST_TASKS_GROUP(CUR2("<", "$6", "$7"), ORD2(" DESC"), "$8"),
                                "task"},
    [S_LIST_TASKS_GROUP +
        2] = {"list_tasks_group_priority",
              LIST_TASKS_GROUP(CUR3("priority", ">", "$6", "$7", "$8"), ORD3("priority", ""), "$9"),
              "task"},
    [S_LIST_TASKS_GROUP + 3] = {"list_tasks_group_priority_desc",
                                LIST_TASKS_GROUP(CUR3("priority", "<", "$6", "$7", "$8"),
                                                 ORD3("priority", " DESC"), "$9"),
                                "task"},
    [S_LIST_TASKS_GROUP +
        4] = {"list_tasks_group_due",
              LIST_TASKS_GROUP(CUR3(DUE_KEY, ">", "$6", "$7", "$8"), ORD3(DUE_KEY, ""), "$9"),
              "task"},
    [S_LIST_TASKS_GROUP +
        5] = {"list_tasks_group_due_desc",
              LIST_TASKS_GROUP(CUR3(DUE_KEY, "<", "$6", "$7", "$8"), ORD3(DUE_KEY, " DESC"), "$9"),
              "task"},
    /* $2 states, ($3, $4) due window; cursor ($5, $6) and limit $7, or
     * ($5, $6, $7) and $8. */
    [S_LIST_TASKS_ALL] = {"list_tasks_all", LIST_TASKS_ALL(CUR2(">", "$5", "$6"), ORD2(""), "$7"),
                          "task"},
    [S_LIST_TASKS_ALL + 1] = {"list_tasks_all_desc",
                              LIST_TASKS_ALL(CUR2("<", "$5", "$6"), ORD2(" DESC"), "$7"), "task"},
    [S_LIST_TASKS_ALL +
        2] = {"list_tasks_all_priority",
              LIST_TASKS_ALL(CUR3("priority", ">", "$5", "$6", "$7"), ORD3("priority", ""), "$8"),
              "task"},
    [S_LIST_TASKS_ALL + 3] = {"list_tasks_all_priority_desc",
                              LIST_TASKS_ALL(CUR3("priority", "<", "$5", "$6", "$7"),
                                             ORD3("priority", " DESC"), "$8"),
                              "task"},
    [S_LIST_TASKS_ALL +
        4] = {"list_tasks_all_due",
              LIST_TASKS_ALL(CUR3(DUE_KEY, ">", "$5", "$6", "$7"), ORD3(DUE_KEY, ""), "$8"),
              "task"},
    [S_LIST_TASKS_ALL +
        5] = {"list_tasks_all_due_desc",
              LIST_TASKS_ALL(CUR3(DUE_KEY, "<", "$5", "$6", "$7"), ORD3(DUE_KEY, " DESC"), "$8"),
              "task"},
    /* Every shape binds the same parameters: $2 started_by, $3
     * definition_key, ($4, $5) aggregate, $6 statuses, $7 roots only, $8
     * begun (wf_begun_filter), ($9, $10) cursor, $11 limit, $12 created
     * before (INT64_MAX = unbounded; created after moves the cursor), $13 to
     * $15 (LIST_INSTANCES). */
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
    [S_LIST_INSTANCES_VARIABLES] =
        {"list_instances_variables",
         LIST_INSTANCES_VARS(
             OPT("$2", "started_by") " AND " OPT("$3", "definition_key") " AND " OPT(
                 "$4", "aggregate_type") " AND " OPT("$5", "aggregate_id")),
         "instance"},
    /* ListIncidents: FAILED instances by (incident_at, id), the tenant's
     * (instances_incidents, 0012) or one definition's
     * (instances_incidents_definition); $2 definition key, $3 code, ($4,
     * $5) cursor, $6 limit. */
    [S_LIST_INCIDENTS_DEFINITION] = {"list_incidents_definition",
                                     "SELECT " COLS_INSTANCES " FROM instances WHERE tenant_id = "
                                     "$1 AND status = 4 AND definition_key = $2 AND " ALL(
                                         OPT("$3", "incident_code")) " AND (incident_at, id) > "
                                                                     "($4::bigint, $5::text) ORDER "
                                                                     "BY incident_at, id LIMIT $6",
                                     "instance"},
    [S_LIST_INCIDENTS_ALL] = {"list_incidents_all",
                              "SELECT " COLS_INSTANCES " FROM instances WHERE tenant_id = $1 AND "
                              "status = 4 AND " ALL(OPT("$2", "definition_key") " AND " OPT(
                                  "$3", "incident_code")) " AND (incident_at, id) > ($4::bigint, "
                                                          "$5::text) ORDER BY incident_at, id "
                                                          "LIMIT $6",
                              "instance"},
    [S_LIST_INSTANCES_AGGREGATE_NEWEST] = {"list_instances_aggregate_newest",
                                           LIST_INSTANCES_NEWEST_FIRST(
                                               "AND aggregate_type = $4 AND aggregate_id = $5",
                                               LI_OPTS_AGGREGATE),
                                           "instance"},
    [S_LIST_INSTANCES_STARTED_BY_NEWEST] = {"list_instances_started_by_newest",
                                            LIST_INSTANCES_NEWEST_FIRST("AND started_by = $2",
                                                                        LI_OPTS_STARTED_BY),
                                            "instance"},
    [S_LIST_INSTANCES_DEFINITION_NEWEST] = {"list_instances_definition_newest",
                                            LIST_INSTANCES_NEWEST_FIRST("AND definition_key = $3",
                                                                        LI_OPTS_DEFINITION),
                                            "instance"},
    [S_LIST_INSTANCES_ALL_NEWEST] = {"list_instances_all_newest",
                                     LIST_INSTANCES_NEWEST_FIRST("", LI_OPTS_ALL), "instance"},
    [S_LIST_INSTANCES_VARIABLES_NEWEST] = {"list_instances_variables_newest",
                                           LIST_INSTANCES_VARS_NEWEST_FIRST(LI_OPTS_ALL),
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
     * (work_items_instance, 0009), by state. By instance alone: with the root named too, the
     * planner would rather sort the root's rows from the primary key. */
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
         "SELECT " COLS_SIGNALS
         ", delivery, delivery_state, delivered_at FROM ((SELECT " COLS_SIGNALS
         ", false AS delivery, 0 AS delivery_state, 0::bigint AS delivered_at FROM signals WHERE "
         "tenant_id = $1 AND instance_id = $2 AND " SIGNALS_REST ") UNION ALL (SELECT " COLS_SIGNALS
         ", false, 0, 0::bigint FROM signals s WHERE tenant_id = $1 AND consumed_by_instance = $2 "
         "AND instance_id IS DISTINCT FROM $2 AND NOT EXISTS (" DELIVERY_OF(
             "s") ") AND " SIGNALS_REST ") UNION ALL (" DELIVERIES_OF_INSTANCE ")) x "
                  "ORDER BY received_at, id LIMIT $9",
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

    /* Lease: activatable now, of a tree that is not suspended. The
     * candidates are locked in order and leased while the answer's
     * estimate of their bytes (wf_store__job_answer_bytes: variables,
     * error and idempotency key plus 1024) stays within $7 (0 = no bound); when the first alone
     * passes it, nothing is leased and that row comes back unchanged
     * (state 1), for the caller to refuse. The engine writes the
     * JOB_ACTIVATED events. The leased rows are updated through the ctids
     * the same statement locked: a join back on the key is planned, once
     * the queue is large, as a hash join over every job (a generic plan
     * takes LIMIT $4 for a tenth of the queue). The order is the rank
     * (activatable_at less priority times the aging step, wf_store_job_rank),
     * served by jobs_activation_rank (migrations/0020_job_priority.sql):
     * rank <= now bounds the scan, since a rank is never above its
     * activatable_at; the rows it reads that are not activatable yet are
     * jobs in a retry backoff ending within 100 aging steps. A queue with
     * fairness keys (migrations/0027_job_fairness.sql) takes
     * activate_jobs_fair instead (ACTIVATE_JOBS_FAIR; jobs_keyed tells
     * which: reads.c). */
    [S_ACTIVATE_JOBS] =
        {"activate_jobs",
         "WITH l AS (" ACTIVATABLE_JOB " ORDER BY activation_rank, id LIMIT $4 FOR UPDATE SKIP "
         "LOCKED), "
         "c AS (SELECT tid FROM (SELECT tid, sum(b) OVER "
         "(ORDER BY activation_rank, id) AS t FROM l) x WHERE $7::bigint = 0 OR t <= $7::bigint), "
         "u AS (UPDATE jobs j SET state = 2, key = j.instance_id || '.' || "
         "gen_random_uuid()::text, "
         "worker = $5, lease_expires_at = $6 WHERE j.ctid = ANY(ARRAY(SELECT tid FROM c)) "
         "RETURNING j.*) "
         "SELECT " COLS_JOBS " FROM u UNION ALL (SELECT " COLS_JOBS " FROM l WHERE "
         "NOT EXISTS (SELECT 1 FROM c) ORDER BY activation_rank, id LIMIT 1) "
         "ORDER BY activation_rank, id",
         "job"},
    [S_ACTIVATE_JOBS_FAIR] = {"activate_jobs_fair", ACTIVATE_JOBS_FAIR, "job"},
    /* Whether type $2's queue (tenant $1) has a job with a fairness key:
     * one descent to the last key of jobs_activation_fair. */
    [S_JOBS_KEYED] = {"jobs_keyed",
                      "SELECT coalesce((SELECT fairness_key FROM jobs WHERE tenant_id = $1 AND "
                      "job_type = $2 AND state = 1 ORDER BY fairness_key DESC LIMIT 1) > '', "
                      "false)",
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
    "WITH u AS (UPDATE timers SET claimed_until = $3 WHERE ctid = ANY(ARRAY(SELECT ctid FROM "     \
    "timers WHERE " tenant                                                                         \
    "due_at <= $1 AND claimed_until <= $1 AND NOT " SUSPENDED_ROOT_OF_TIMERS                       \
    " ORDER BY due_at, id LIMIT $2 "                                                               \
    "FOR UPDATE SKIP LOCKED)) RETURNING *) "                                                       \
    "SELECT " COLS_TIMERS " FROM u ORDER BY due_at, id"
    [S_CLAIM_TIMERS] = {"claim_timers", CLAIM_TIMERS(""), "timer"},
    [S_CLAIM_TIMERS_T] = {"claim_timers_tenant", CLAIM_TIMERS("tenant_id = $4 AND "), "timer"},
#define EXPIRED_LEASES(tenant)                                                                     \
    "SELECT " COLS_JOBS " FROM jobs WHERE " tenant "state = 2 AND lease_expires_at <= $1 "         \
    "ORDER BY lease_expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED"
    [S_EXPIRED_LEASES] = {"expired_leases", EXPIRED_LEASES(""), "job"},
    [S_EXPIRED_LEASES_T] = {"expired_leases_tenant", EXPIRED_LEASES("tenant_id = $3 AND "), "job"},
/* Buffered rows are always outcome 2 (BUFFERED) or 5 (STARTED) with
 * consumed_at 0: saying so lets the partial indexes signals_expiry /
 * signals_tenant_expiry serve. */
/* These passes and the sweeps below change the rows they locked through
 * their ctids, as claim_timers: a join back on the key may be planned as a
 * hash join over the whole table (a generic plan takes LIMIT $2 for a
 * tenth of the rows). */
#define EXPIRE_SIGNALS(tenant)                                                                     \
    "UPDATE signals SET buffered = false, discarded = true WHERE ctid = ANY(ARRAY(SELECT ctid "    \
    "FROM signals WHERE " tenant                                                                   \
    "outcome IN (2, 5) AND consumed_at = 0 AND buffered AND NOT discarded AND expires_at <= $1 "   \
    "ORDER BY expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))"
    [S_EXPIRE_SIGNALS] = {"expire_signals", EXPIRE_SIGNALS(""), "signal"},
    [S_EXPIRE_SIGNALS_T] = {"expire_signals_tenant", EXPIRE_SIGNALS("tenant_id = $3 AND "),
                            "signal"},
#define SWEEP_SIGNALS(tenant)                                                                      \
    "DELETE FROM signals WHERE ctid = ANY(ARRAY(SELECT ctid FROM signals WHERE " tenant            \
    "outcome IN (2, 5) AND consumed_at = 0 AND NOT buffered AND expires_at > 0 AND "               \
    "expires_at <= $1 "                                                                            \
    "LIMIT $2 FOR UPDATE SKIP LOCKED))"
    [S_SWEEP_SIGNALS] = {"sweep_signals", SWEEP_SIGNALS(""), "signal"},
    [S_SWEEP_SIGNALS_T] = {"sweep_signals_tenant", SWEEP_SIGNALS("tenant_id = $3 AND "), "signal"},
#define SWEEP_IDEMPOTENCY(tenant)                                                                  \
    "DELETE FROM idempotency WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency WHERE " tenant    \
    "created_at <= $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
    [S_SWEEP_IDEMPOTENCY] = {"sweep_idempotency", SWEEP_IDEMPOTENCY(""), "request record"},
    [S_SWEEP_IDEMPOTENCY_T] = {"sweep_idempotency_tenant", SWEEP_IDEMPOTENCY("tenant_id = $3 AND "),
                               "request record"},
/* Ended for good: COMPLETED (2), CANCELLED (3), COMPENSATED (6). */
/* Up to $2 roots not yet swept (r), up to $2 of their events (c);
 * when c holds fewer than $2, it holds every event of r, and r is
 * marked swept in the same statement (migrations/0005). The events of
 * a root that ended that long ago are all numbered. */
#define SWEEP_EVENTS(tenant)                                                                       \
    "WITH r AS (SELECT tenant_id, id FROM instances WHERE " tenant "parent_id IS NULL AND "        \
    "ended_at > 0 AND NOT events_swept AND ended_at <= $1 AND status IN (2, 3, 6) ORDER BY "       \
    "ended_at LIMIT $2 FOR UPDATE SKIP LOCKED), "                                                  \
    "c AS (SELECT e.ctid AS tid FROM r JOIN events e ON e.tenant_id = r.tenant_id AND "            \
    "e.root_id = r.id WHERE e.sequence IS NOT NULL LIMIT $2 FOR UPDATE OF e SKIP LOCKED), "        \
    "m AS (UPDATE instances i SET events_swept = true FROM r WHERE "                               \
    "i.tenant_id = r.tenant_id AND i.root_id = r.id AND i.id = r.id AND "                          \
    "(SELECT count(*) FROM c) < $2) "                                                              \
    "DELETE FROM events WHERE ctid = ANY(ARRAY(SELECT tid FROM c))"
    [S_SWEEP_EVENTS] = {"sweep_events", SWEEP_EVENTS(""), "event"},
    [S_SWEEP_EVENTS_T] = {"sweep_events_tenant", SWEEP_EVENTS("tenant_id = $3 AND "), "event"},
/* Fan-out deliveries that ran (delivered or skipped) before $1, by the
 * partial indexes of 0019; pending ones are never swept. */
#define SWEEP_DELIVERIES(tenant)                                                                   \
    "DELETE FROM signal_deliveries WHERE ctid = ANY(ARRAY(SELECT ctid FROM signal_deliveries "     \
    "WHERE " tenant "state <> 0 AND done_at <= $1 ORDER BY done_at LIMIT $2 FOR UPDATE SKIP "      \
    "LOCKED))"
    [S_SWEEP_DELIVERIES] = {"sweep_deliveries", SWEEP_DELIVERIES(""), "signal delivery"},
    [S_SWEEP_DELIVERIES_T] = {"sweep_deliveries_tenant", SWEEP_DELIVERIES("tenant_id = $3 AND "),
                              "signal delivery"},
    /* Waits for a signal sent to one instance, or to one aggregate. */
    [S_FIND_SUBS_INSTANCE] = {"find_subscriptions_instance",
                              "SELECT " COLS_SUBSCRIPTIONS " FROM subscriptions WHERE tenant_id = "
                              "$1 AND instance_id = $3 AND signal_name = $2 "
                              "ORDER BY created_at, id",
                              "subscription"},
    [S_FIND_SUBS_AGGREGATE] = {"find_subscriptions_aggregate",
                               "SELECT " COLS_SUBSCRIPTIONS " FROM subscriptions WHERE tenant_id "
                               "= $1 AND signal_name = $2 AND aggregate_type = $3 AND "
                               "aggregate_id = $4 AND NOT EXISTS (" AGG_PENDING ") AND NOT "
                               "EXISTS (" AGG_QUEUED(" ") ") ORDER BY created_at, id LIMIT 64",
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
                         "AND NOT discarded AND expires_at > $1 "
                         "UNION ALL SELECT 4, NULL, count(*) FROM signal_deliveries WHERE "
                         "state = 0",
                         "backlog"},
    /* Batch operations (migrations/0014). A new row is stored at version
     * 1; an update needs the version it read ($18) and stores the next. */
    [S_PUT_BATCH] = {"put_batch",
                     "INSERT INTO batch_operations (" COLS_BATCHES ") VALUES ($1, $2, $3, $4, $5, "
                     "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 1, $18)",
                     "batch operation"},
    [S_GET_BATCH] = {"get_batch",
                     "SELECT " COLS_BATCHES " FROM batch_operations WHERE tenant_id = $1 AND id = "
                     "$2",
                     "batch operation"},
    /* No row: either no such id or another version; the second column
     * of the answer tells them apart. */
    [S_UPDATE_BATCH] =
        {"update_batch",
         "WITH u AS (UPDATE batch_operations SET action = $3, state = $4, "
         "filter_json = $5, reason = $6, created_by = $7, total = $8, done = $9, "
         "failed = $10, errors_json = $11, cursor = $12, lease_owner = $13, "
         "lease_until = $14, created_at = $15, updated_at = $16, ended_at = $17, "
         "args_json = $19, version = $18 + 1 WHERE tenant_id = $2 AND id = $1 AND version = $18 "
         "RETURNING 1) SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM "
         "batch_operations WHERE tenant_id = $2 AND id = $1)",
         "batch operation"},
    /* The cursor is always bound: above every row on the first page. */
    [S_LIST_BATCHES] = {"list_batches",
                        "SELECT " COLS_BATCHES " FROM batch_operations WHERE tenant_id = $1 AND "
                        "(created_at, id) < ($2::bigint, $3::text) "
                        "ORDER BY created_at DESC, id DESC LIMIT $4",
                        "batch operation"},
/* As claim_timers: the rows locked by the inner SELECT, updated through
 * their ctids in the same statement. */
#define CLAIM_BATCHES(tenant)                                                                      \
    "WITH u AS (UPDATE batch_operations SET lease_owner = $3, lease_until = $4, version = "        \
    "version + 1 WHERE ctid = ANY(ARRAY(SELECT ctid FROM batch_operations WHERE " tenant           \
    "state = 1 AND lease_until <= $1 ORDER BY lease_until, id LIMIT $2 FOR UPDATE SKIP LOCKED)) "  \
    "RETURNING *) SELECT " COLS_BATCHES " FROM u ORDER BY lease_until, id"
    [S_CLAIM_BATCHES] = {"claim_batches", CLAIM_BATCHES(""), "batch operation"},
    [S_CLAIM_BATCHES_T] = {"claim_batches_tenant", CLAIM_BATCHES("tenant_id = $5 AND "),
                           "batch operation"},
    [S_PUT_SCHEDULE] = {"put_schedule",
                        "INSERT INTO schedules (" COLS_SCHEDULES ") VALUES ($1, $2, $3, $4, $5, "
                        "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
                        "$21, $22, $23, 1, $24)",
                        "schedule"},
    [S_GET_SCHEDULE] = {"get_schedule",
                        "SELECT " COLS_SCHEDULES " FROM schedules WHERE tenant_id = $1 AND id = $2",
                        "schedule"},
    /* As update_batch: the second column tells a missing row from
     * another version. */
    [S_UPDATE_SCHEDULE] =
        {"update_schedule",
         "WITH u AS (UPDATE schedules SET definition_key = $3, def_version = $4, "
         "variables_json = $5, aggregate_type = $6, aggregate_id = $7, spec_json = $8, "
         "overlap = $9, catchup_window_ms = $10, pause_after_failures = $11, state = $12, "
         "pause_reason = $13, note = $14, next_fire_at = $15, due_at = $16, "
         "last_instance_id = $17, failures = $18, created_by = $19, lease_owner = $20, "
         "lease_until = $21, created_at = $22, updated_at = $23, version = $24 + 1, "
         "buffered_at = $25 "
         "WHERE tenant_id = $2 AND id = $1 AND version = $24 RETURNING 1) "
         "SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM schedules WHERE tenant_id = $2 "
         "AND id = $1)",
         "schedule"},
    [S_DELETE_SCHEDULE] =
        {"delete_schedule",
         "WITH r AS (DELETE FROM schedule_runs WHERE tenant_id = $1 AND "
         "schedule_id = $2) DELETE FROM schedules WHERE tenant_id = $1 AND id = $2",
         "schedule"},
    [S_LIST_SCHEDULES] = {"list_schedules",
                          "SELECT " COLS_SCHEDULES " FROM schedules WHERE tenant_id = $1 AND "
                          "(created_at, id) < ($2::bigint, $3::text) "
                          "ORDER BY created_at DESC, id DESC LIMIT $4",
                          "schedule"},
/* As claim_batches. */
#define CLAIM_SCHEDULES(tenant)                                                                    \
    "WITH u AS (UPDATE schedules SET lease_owner = $3, lease_until = $4, version = version + 1 "   \
    "WHERE ctid = ANY(ARRAY(SELECT ctid FROM schedules WHERE " tenant "state = 1 AND due_at > 0 "  \
    "AND due_at <= $1 AND lease_until <= $1 ORDER BY due_at, id LIMIT $2 FOR UPDATE SKIP "         \
    "LOCKED)) RETURNING *) SELECT " COLS_SCHEDULES " FROM u ORDER BY due_at, id"
    [S_CLAIM_SCHEDULES] = {"claim_schedules", CLAIM_SCHEDULES(""), "schedule"},
    [S_CLAIM_SCHEDULES_T] = {"claim_schedules_tenant", CLAIM_SCHEDULES("tenant_id = $5 AND "),
                             "schedule"},
    [S_PUT_SCHEDULE_RUN] = {"put_schedule_run",
                            "INSERT INTO schedule_runs (" COLS_SCHEDULE_RUNS ") VALUES ($1, $2, "
                            "$3, $4, $5, $6, $7, $8, $9, $10, $11)",
                            "schedule run"},
    /* Only a BUFFERED run (outcome 5) is settled: a second replica that
     * saw the same instance end updates nothing. */
    [S_SETTLE_SCHEDULE_RUN] =
        {"settle_schedule_run",
         "UPDATE schedule_runs SET actual_at = $4, outcome = $5, manual = $6, "
         "instance_id = $7, detail = $8, buffered_at = $9, "
         "cancelled_instance_id = $10, backfill = $11 WHERE tenant_id = $2 AND "
         "schedule_id = $1 AND nominal_at = $3 AND outcome = 5",
         "schedule run"},
    [S_LIST_SCHEDULE_RUNS] = {"list_schedule_runs",
                              "SELECT " COLS_SCHEDULE_RUNS " FROM schedule_runs WHERE tenant_id = "
                              "$1 AND schedule_id = $2 AND nominal_at < $3 "
                              "ORDER BY nominal_at DESC LIMIT $4",
                              "schedule run"},
    [S_GET_RESOURCE] = {"get_resource",
                        "SELECT " COLS_RESOURCES
                        " FROM resources WHERE tenant_id = $1 AND name = $2",
                        "resource"},
    /* A name declared meanwhile is a unique violation: WF_E_CONFLICT. */
    [S_PUT_RESOURCE] = {"put_resource",
                        "INSERT INTO resources (" COLS_RESOURCES ") VALUES ($1, $2, $3, $4, $5, "
                        "$6, $7, $8, $9, $10, 1)",
                        "resource"},
    /* As update_schedule: the second column tells a missing row from
     * another version. */
    [S_UPDATE_RESOURCE] =
        {"update_resource",
         "WITH u AS (UPDATE resources SET capacity = $3, per_key = $4, rate_limit = $5, "
         "rate_period_ms = $6, strategy = $7, created_by = $8, created_at = $9, "
         "updated_at = $10, version = $11 + 1 "
         "WHERE tenant_id = $2 AND name = $1 AND version = $11 RETURNING 1) "
         "SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM resources WHERE tenant_id = $2 "
         "AND name = $1)",
         "resource"},
    [S_DELETE_RESOURCE] = {"delete_resource",
                           "DELETE FROM resources WHERE tenant_id = $1 AND name = $2", "resource"},
    [S_LIST_RESOURCES] = {"list_resources",
                          "SELECT " COLS_RESOURCES " FROM resources WHERE tenant_id = $1 AND "
                          "(created_at, name) < ($2::bigint, $3::text) "
                          "ORDER BY created_at DESC, name DESC LIMIT $4",
                          "resource"},
    /* The fan-out of a signal sent to an aggregate (migrations/0016), under
     * its correlation lock: $1 tenant, $2 name, $3/$4 aggregate, $5 the
     * signal's log id, $6 now, $7 page, ($8, $9) the QUEUED bound, $10 the
     * signal's receipt (the order of each instance's log, 0019). Nothing
     * is written when deliveries or earlier signals are pending; else one
     * row per waiting RUNNING instance, seq in the order they began to
     * wait. Answers a summary row (k 0: pending, count) and the first page
     * of ids (k 1). */
    [S_FANOUT_TARGETS] =
        {"fanout_targets",
         "WITH p AS (SELECT EXISTS (" AGG_PENDING ") OR EXISTS (" AGG_QUEUED(
             " AND (received_at, id) < ($8, $9)") ") AS pending), "
                                                  "t AS (SELECT DISTINCT ON (s.instance_id) "
                                                  "s.instance_id, s.root_id, s.created_at, s.id "
                                                  "FROM subscriptions s JOIN instances i ON "
                                                  "i.tenant_id = s.tenant_id AND i.root_id = "
                                                  "s.root_id AND i.id = s.instance_id WHERE "
                                                  "s.tenant_id = $1 AND s.signal_name = $2 AND "
                                                  "s.aggregate_type = $3 AND s.aggregate_id = $4 "
                                                  "AND i.status = 1 AND NOT (SELECT pending "
                                                  "FROM p) ORDER BY s.instance_id, s.created_at, "
                                                  "s.id), "
                                                  "o AS (SELECT instance_id, root_id, row_number() "
                                                  "OVER (ORDER BY created_at, id) AS seq "
                                                  "FROM t), "
                                                  "ins AS (INSERT INTO signal_deliveries "
                                                  "(tenant_id, signal_log_id, instance_id, "
                                                  "root_id, "
                                                  "aggregate_type, aggregate_id, seq, state, "
                                                  "created_at, received_at) SELECT $1, $5, "
                                                  "instance_id, root_id, $3, $4, seq, 0, $6, "
                                                  "$10 FROM o RETURNING "
                                                  "instance_id, seq) "
                                                  "SELECT k, pending, n, instance_id FROM (SELECT "
                                                  "0 AS k, (SELECT pending FROM p) AS "
                                                  "pending, (SELECT count(*) FROM ins) AS n, "
                                                  "NULL::text AS instance_id, 0::bigint AS seq "
                                                  "UNION ALL (SELECT 1, NULL, NULL, instance_id, "
                                                  "seq FROM ins ORDER BY seq LIMIT $7)) x "
                                                  "ORDER BY k, seq",
         "signal delivery"},
    /* Consumes one pending delivery: $4 its state, $5 done_at, $6 the root
     * the unit of work locked. */
    [S_TAKE_DELIVERY] = {"take_delivery",
                         "UPDATE signal_deliveries SET state = $4, done_at = $5 WHERE tenant_id = "
                         "$1 AND root_id = $6 AND signal_log_id = $2 AND instance_id = $3 AND "
                         "state = 0",
                         "signal delivery"},
    /* A few pending deliveries to the aggregate ($2, $3), $4 at most. */
    [S_PENDING_DELIVERIES] = {"pending_deliveries",
                              "SELECT " COLS_DELIVERIES " FROM signal_deliveries d WHERE "
                              "tenant_id = $1 AND aggregate_type = $2 AND aggregate_id = $3 AND "
                              "state = 0 LIMIT $4",
                              "signal delivery"},
    [S_GET_SIGNAL] = {"get_signal",
                      "SELECT " COLS_SIGNALS " FROM signals WHERE tenant_id = $1 AND id = $2",
                      "signal"},
    /* $1 now, $2 limit, $3 claimed until, $4 tenant (NULL: every one). */
    [S_CLAIM_DELIVERIES] = {"claim_deliveries",
                            "WITH c AS (SELECT tenant_id, signal_log_id, instance_id FROM "
                            "signal_deliveries WHERE state = 0 AND claimed_until <= $1 AND "
                            "($4::text IS NULL OR tenant_id = $4) ORDER BY claimed_until, "
                            "created_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED) "
                            "UPDATE signal_deliveries d SET claimed_until = $3 FROM c WHERE "
                            "d.tenant_id = c.tenant_id AND d.signal_log_id = c.signal_log_id AND "
                            "d.instance_id = c.instance_id RETURNING " COLS_DELIVERIES,
                            "signal delivery"},
    /* The oldest QUEUED signal of each aggregate with nothing pending
     * before it: $1 limit, $2 tenant (NULL: every one). */
    [S_FIND_QUEUED] = {"find_queued_signals",
                       "SELECT " COLS_SIGNALS " FROM signals s WHERE outcome = 6 AND ($2::text "
                       "IS NULL OR tenant_id = $2) AND NOT EXISTS (SELECT 1 FROM "
                       "signal_deliveries d WHERE d.tenant_id = s.tenant_id AND "
                       "d.aggregate_type = s.aggregate_type AND d.aggregate_id = s.aggregate_id "
                       "AND d.state = 0) AND NOT EXISTS (SELECT 1 FROM signals q WHERE "
                       "q.tenant_id = s.tenant_id AND q.aggregate_type = s.aggregate_type AND "
                       "q.aggregate_id = s.aggregate_id AND q.outcome = 6 AND (q.received_at, "
                       "q.id) < (s.received_at, s.id)) ORDER BY received_at, id LIMIT $1",
                       "signal"},
    [S_COUNT_DELIVERIES] = {"count_deliveries",
                            "SELECT state, count(*) FROM signal_deliveries WHERE tenant_id = $1 "
                            "AND signal_log_id = $2 GROUP BY state",
                            "signal delivery"},
    /* GetDefinitionStatistics: the live instances of ($2 key, versions $3
     * to $4) counted (kind 0), then their tokens by place (1), ENABLED
     * work items by transition (2) and the FAILED ones by incident
     * transition (3), each one grouped read: instances_live_definition
     * (0025) finds the instances, tokens_instance and work_items_enabled
     * their rows, index only. Unordered: the store sorts the few groups. */
    [S_FLEET_COUNTS] = {"fleet_counts",
                        "SELECT 0, NULL::text, count(*) FROM instances WHERE tenant_id = $1 AND "
                        "definition_key = $2 AND definition_version BETWEEN $3 AND $4 AND status "
                        "IN (1, 4, 5, 7) UNION ALL (SELECT 1, t.place_id, count(*) FROM instances "
                        "i JOIN tokens t ON t.tenant_id = i.tenant_id AND t.instance_id = i.id "
                        "WHERE i.tenant_id = $1 AND i.definition_key = $2 AND i.definition_version "
                        "BETWEEN $3 AND $4 AND i.status IN (1, 4, 5, 7) GROUP BY t.place_id) "
                        "UNION ALL (SELECT 2, w.transition_id, count(*) FROM instances i JOIN "
                        "work_items w ON w.tenant_id = i.tenant_id AND w.instance_id = i.id AND "
                        "w.state = 1 WHERE i.tenant_id = $1 AND i.definition_key = $2 AND "
                        "i.definition_version BETWEEN $3 AND $4 AND i.status IN (1, 4, 5, 7) "
                        "GROUP BY w.transition_id) UNION ALL (SELECT 3, "
                        "coalesce(incident_transition_id, ''), count(*) FROM instances WHERE "
                        "tenant_id = $1 AND definition_key = $2 AND definition_version BETWEEN $3 "
                        "AND $4 AND status = 4 GROUP BY 2)",
                        "instance"},
    /* The live instances of ($2 key, versions $3 to $4) at one element
     * ($6 kind: 1 a token in place $7, 2 an ENABLED work item of
     * transition $7, 3 the incident at $7), by id after $5, at most $8:
     * instances_live_definition in id order, each checked by
     * tokens_instance or work_items_enabled. */
    [S_FLEET_INSTANCES] = {"fleet_instances",
                           "SELECT i.id FROM instances i WHERE i.tenant_id = $1 AND "
                           "i.definition_key = $2 AND i.definition_version BETWEEN $3 AND $4 AND "
                           "i.status IN (1, 4, 5, 7) AND i.id > $5 AND CASE $6::int WHEN 1 THEN "
                           "EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = i.tenant_id AND "
                           "t.instance_id = i.id AND t.place_id = $7) WHEN 2 THEN EXISTS (SELECT "
                           "1 FROM work_items w WHERE w.tenant_id = i.tenant_id AND w.instance_id "
                           "= i.id AND w.state = 1 AND w.transition_id = $7) ELSE i.status = 4 "
                           "AND coalesce(i.incident_transition_id, '') = $7 END ORDER BY i.id "
                           "LIMIT $8",
                           "instance"},
    /* Utility statements go through the extended protocol too. */
    [S_LISTEN_EVENTS] = {"listen_events", "LISTEN wf_events", "the database"},
    [S_LISTEN_JOBS] = {"listen_jobs", "LISTEN wf_jobs", "the database"},
    /* The notifier's coalesced wake-ups: ($1 channels, $2 payloads). */
    [S_NOTIFY] = {"notify", "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)",
                  "the database"},
    /* The notifier's statistics of growing tables (0015): how many it
     * analysed. */
    [S_ANALYZE_GROWN] = {"analyze_grown", "SELECT wf_analyze_grown_tables($1, $2)", "the schema"},

    [S_MIG_LOCK] = {"mig_lock", "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", "the schema"},
    [S_MIG_UNLOCK] = {"mig_unlock", "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", "the schema"},
    [S_MIG_TABLE] = {"mig_table",
                     "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())",
                     "the schema"},
    [S_MIG_HAS] = {"mig_has", "SELECT 1 FROM schema_migrations WHERE version = $1", "the schema"},
    [S_MIG_MAX] = {"mig_max", "SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1",
                   "the schema"},
    [S_MIG_RECORD] = {"mig_record", "INSERT INTO schema_migrations (version) VALUES ($1)",
                      "the schema"},
};

/* The table, for the plan guard (tests/store/test_store_plans.c). */
const wf_store_pg_stmt *const wf_store_pg_statements = stmts;
const int wf_store_pg_n_statements = S_COUNT_;
