/*
 * test_store_plans.c: the plan guard of the Postgres store.
 *
 * Postgres may plan a prepared statement once for every parameter value
 * (a generic plan: plan_cache_mode = auto switches to it after five runs
 * when it looks no dearer). A generic plan cannot use a value to drop an
 * "$n IS NULL OR ..." branch, and statistics that never saw a job type or
 * a signal name make a Sort of the whole backlog look cheap. Either turns
 * one call into a read of every waiting row.
 *
 * This suite fills the tables with a backlog (tens of thousands of rows
 * across tenants, roots, job types, users, groups and signal names), then
 * plans every statement the store prepares (wf_store_pg_statements: the
 * store's own table, so a new statement is checked without being listed
 * here) with plan_cache_mode = force_generic_plan, twice: before any
 * ANALYZE, and after an ANALYZE followed by a new job type, signal name,
 * user, definition and root that it never saw. A plan fails when it holds
 * a Seq Scan of a backlog table, or a Sort (or Incremental Sort) whose
 * input reads one (a Sort above a Limit sorts a bounded set, and is
 * fine). Each failure names the statement and prints its plan.
 *
 * Needs WF_TEST_PG_DSN (a superuser DSN); without it prints one "skipped"
 * line and exits 77 (skipped). Runs in its own schema, migrated by the store.
 */
#include <check.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/pool.h" /* wf_store_pg_statements */
#include "store.h"
#include "test_list.h"
#include "test_pg.h"

/* Tables that grow with the work in flight or with history. */
static const char *const backlog[] = {
    "instances",     "tasks",  "tokens",      "work_items",       "jobs", "timers", "signals",
    "subscriptions", "events", "idempotency", "signal_deliveries"};

/*
 * Statements allowed to do what the guard otherwise refuses, and why.
 * Keep it short: an entry needs a reason that holds for every backlog.
 * A prefix ending in '*' names every statement starting so.
 */
typedef struct exemption {
    const char *name;
    bool sort; /* may sort rows of a backlog table */
    bool scan; /* may read a backlog table sequentially */
    const char *why;
} exemption;

static const exemption exempt[] = {
    /* The aggregate of one root, found by (tenant_id, root_id): sorts the
     * rows of one aggregate, however large the backlog. */
    {"agg_*", true, false, "sorts the rows of one aggregate"},
    /* The /metrics gauge counts every activatable job by type: it reads
     * the backlog by definition, every few seconds, off the hot path. */
    {"count_backlog", true, true, "the gauge counts the whole backlog"},
    /* The oldest of two index-ordered runs (sent to the instance, sent to
     * an aggregate), each in the buffer only (signals_buffer_*, 0006): the
     * planner may sort the two runs instead of merging them. The engine
     * asks by instance or by aggregate (consume_signal_*), never both. */
    {"consume_signal", true, false, "sorts the buffer of one instance and one aggregate"},
    /* RunSchedulerPass for one tenant: may sort that tenant's records past
     * their retention, which is what the pass is there to delete (an index
     * by tenant would cost every request record an entry, for a pass run on
     * demand). */
    {"sweep_idempotency_tenant", true, false, "sorts the expired records of one tenant"},
    /* ListInstances by variables: the rows of one tenant that match every
     * variable filter, found by instances_variables (0012, a GIN index,
     * which keeps no order) and sorted by creation, either way: as many as
     * match, never the backlog (the index must serve it: see required
     * below). */
    {"list_instances_variables*", true, false, "sorts the instances matching the filters"},
    /* A user's inbox with the due window: for a group the statistics never
     * saw, the planner may read that group's OPEN tasks from
     * tasks_group_open by bitmap and sort them rather than walk the index
     * in order. It reads one group's open queue (never its history), by
     * index; the other branches stay in index order. */
    {"list_tasks_user*", true, false, "sorts the open queue of one of the user's groups"},
    /* The fan-out of a signal (0016): the waits of one aggregate for one
     * signal, sorted into the order they began (the target set), never
     * the backlog. */
    {"fanout_targets", true, false, "sorts the waits of one aggregate"},
    /* The schedulers' claim of pending deliveries (signal_deliveries_claim,
     * a partial index of the pending rows): before the table's first
     * statistics the planner may sort the pending rows whose claim ran out
     * rather than walk the index in order. It reads the queue of pending
     * deliveries, never the log of those that ran. */
    {"claim_deliveries", true, false, "sorts the pending deliveries"},
    /* The schedulers' QUEUED signals (a partial index of outcome 6): may
     * sort those, never the delivery log. */
    {"find_queued_signals", true, false, "sorts the QUEUED signals"},
    /* A definition's live totals (GetDefinitionStatistics): a total reads
     * every live instance of one definition by design, found by
     * instances_live_definition (required below), and the planner may
     * group their tokens and work items by sorting them. Never an ended
     * instance, nor another definition's. */
    {"fleet_counts", true, false, "groups the rows of one definition's live instances"},
};

/*
 * Statements whose plan must read a given index, in both phases: where the
 * guard's rules alone would also pass a plan that reads the wrong one.
 */
typedef struct required_index {
    const char *name;
    const char *index;
} required_index;

static const required_index required[] = {
    /* Variable equality: the GIN on {tenant: variables}, not a range scan
     * of every instance of the tenant filtered row by row. */
    {"list_instances_variables", "instances_variables"},
    {"list_instances_variables_newest", "instances_variables"},
    /* The open incidents, from the partial indexes of FAILED rows. */
    {"list_incidents_all", "instances_incidents"},
    {"list_incidents_definition", "instances_incidents_definition"},
    /* Activation by priority and age: the rank index (0020), whose order
     * is the statement's, so that the LIMIT stops the scan. */
    {"activate_jobs", "jobs_activation_rank"},
    /* The fairness keys and the head of each key's queue (0027): a skip
     * scan of this index, not a read of the type's backlog; the rest of the
     * pass by rank. */
    {"activate_jobs_fair", "jobs_activation_fair"},
    {"activate_jobs_fair", "jobs_activation_rank"},
    /* Whether a queue has keys: one descent to its last key. */
    {"jobs_keyed", "jobs_activation_fair"},
    /* A definition's live totals: its instances that have not ended, from
     * the partial index of those (0025), never every instance of the
     * key. */
    {"fleet_counts", "instances_live_definition"},
};

/* The index entry i requires of statement name, or NULL. */
static const char *
required_of(const char *name, size_t i)
{
    return strcmp(required[i].name, name) == 0 ? required[i].index : NULL;
}

static const exemption *
exemption_of(const char *name)
{
    for (size_t i = 0; i < sizeof exempt / sizeof exempt[0]; i++) {
        size_t n = strlen(exempt[i].name);
        if (exempt[i].name[n - 1] == '*' ? strncmp(name, exempt[i].name, n - 1) == 0
                                         : strcmp(name, exempt[i].name) == 0)
            return &exempt[i];
    }
    return NULL;
}

static const char *dsn;
static char schema[64];
static PGconn *pg;

static void
quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void
exec_ok(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(res);
    ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%.200s: %s", sql,
                  PQerrorMessage(c));
    PQclear(res);
}

/* ---- the backlog ------------------------------------------------------------ */

/* Trees of four instances (a root and three children), spread over eight
 * tenants; everything else hangs off instance g of row g. */
#define INST(g) "'i' || (" g ")"
#define ROOT(g) "'i' || (((" g ") - 1) / 4 * 4 + 1)"
#define TENANT(g) "'t' || (((" g ") - 1) / 4 % 8)"

static const char *const fill_seen[] = {
    "INSERT INTO instances (tenant_id, id, root_id, parent_id, definition_key, "
    "definition_version, status, aggregate_type, aggregate_id, started_by, created_at, "
    "updated_at, ended_at, version, variables_json, incident_code, incident_at) SELECT " TENANT(
        "g") ", " INST("g") ", " ROOT("g") ", "
                                           "CASE WHEN (g - 1) % 4 = 0 THEN NULL ELSE " ROOT(
                                               "g") " END, 'def' || g % 30, 1, CASE WHEN g % 7 = 0 "
                                                    "THEN 4 ELSE 1 + g % 3 END, "
                                                    "CASE WHEN g % 2 = 0 THEN 'order' END, 'a' || "
                                                    "g % 5000, 'u' || g % 200, g, "
                                                    "g, "
                                                    "CASE WHEN g % 3 = 1 THEN g ELSE 0 END, 1, "
                                                    "'{\"n\": ' || g % 100 || ', "
                                                    "\"customer\": {\"country\": \"c' || g % 20 || "
                                                    "'\"}}', CASE WHEN g % 3 "
                                                    "= 1 THEN 'JOB_FAILED' END, CASE WHEN g % 3 = "
                                                    "1 THEN g ELSE 0 END FROM "
                                                    "generate_series(1, 40000) g",
    "INSERT INTO tasks (tenant_id, id, root_id, instance_id, assignee_kind, assignee_id, status, "
    "claimed_by, created_at) SELECT " TENANT("g") ", 'k' || g, " ROOT("g") ", " INST(
        "g") ", "
             "1 + g % 2, CASE WHEN g % 2 = 0 THEN 'u' || g % 200 ELSE 'grp' || g % 40 END, 1 + g % "
             "4, "
             "CASE WHEN g % 4 = 1 THEN 'u' || g % 200 END, g FROM generate_series(1, 40000) g",
    "INSERT INTO tokens (tenant_id, id, root_id, instance_id, place_id, created_seq) "
    "SELECT " TENANT("g") ", 'o' || g, " ROOT("g") ", " INST(
        "g") ", 'p', g FROM generate_series(1, 40000) g",
    "INSERT INTO work_items (tenant_id, id, root_id, instance_id, transition_id, trigger, state, "
    "enabled_at) SELECT " TENANT("g") ", 'w' || g, " ROOT("g") ", " INST(
        "g") ", 'tr', 1, 1, g "
             "FROM generate_series(1, 40000) g",
    "INSERT INTO jobs (tenant_id, id, key, root_id, instance_id, job_type, state, attempt, "
    "max_attempts, activatable_at, lease_expires_at, created_at, priority, activation_rank, "
    "fairness_key) SELECT " TENANT("g") ", 'j' || g, 'key' || g, " ROOT("g") ", " INST(
        "g") ", 'type' || g % 20, 1 + g % 3, 1, 3, g, CASE WHEN g % 3 = 1 THEN g ELSE 0 END, g, "
             "g % 101, g - (g % 101) * 1000000, CASE WHEN g % 5 = 0 THEN 'f' || g % 70 ELSE '' "
             "END FROM generate_series(1, 40000) g",
    "INSERT INTO timers (tenant_id, id, root_id, instance_id, due_at, created_at) SELECT " TENANT(
        "g") ", 'm' || g, " ROOT("g") ", " INST("g") ", g, g FROM generate_series(1, 40000) g",
    "INSERT INTO subscriptions (tenant_id, id, root_id, instance_id, signal_name, aggregate_type, "
    "aggregate_id, created_at) SELECT " TENANT("g") ", 'b' || g, " ROOT("g") ", " INST(
        "g") ", "
             "'sig' || g % 50, 'order', 'a' || g % 5000, g FROM generate_series(1, 40000) g",
    "INSERT INTO signals (tenant_id, id, signal_id, name, instance_id, aggregate_type, "
    "aggregate_id, outcome, buffered, received_at, expires_at, consumed_at, consumed_by_instance) "
    "SELECT " TENANT("g") ", 's' || g, 'sid' || g, 'sig' || g % 50, CASE WHEN g % 3 = 0 THEN " INST(
        "g") " END, CASE WHEN g % 3 <> 0 THEN 'order' END, CASE WHEN g % 3 <> 0 THEN 'a' || "
             "g % 5000 END, 1 + g % 3, g % 3 = 1, g, g + 100000, CASE WHEN g % 3 = 0 THEN g ELSE 0 "
             "END, "
             "CASE WHEN g % 3 = 0 THEN " INST("g") " END FROM generate_series(1, 40000) g",
    "INSERT INTO events (tenant_id, root_id, instance_id, type, sequence, time) SELECT " TENANT(
        "1 + g % 40000") ", " ROOT("1 + g % 40000") ", " INST("1 + g % 40000") ", "
                                                                               "'T' || g % 10, g, "
                                                                               "g FROM "
                                                                               "generate_series(1, "
                                                                               "80000) g",
    "INSERT INTO idempotency (tenant_id, method, request_id, created_at) SELECT " TENANT(
        "g") ", 'M' || g % 10, 'r' || g, g FROM generate_series(1, 40000) g",
    /* A delivery of signal g to instance g: pending, delivered, skipped. */
    "INSERT INTO signal_deliveries (tenant_id, signal_log_id, instance_id, root_id, "
    "aggregate_type, aggregate_id, seq, state, created_at, done_at, received_at) SELECT " TENANT(
        "g") ", 's' || g, " INST("g") ", " ROOT("g") ", 'order', 'a' || g % 5000, 1, g % 3, g, "
                                                     "CASE WHEN g % 3 = 0 THEN 0 ELSE g END, g "
                                                     "FROM generate_series(1, 40000) g",
};

/* After the ANALYZE: values it never saw, each with a backlog of its own,
 * in tenant t0 (the trees of rows 1-4 of fill_seen). */
static const char *const fill_unseen[] = {
    "INSERT INTO jobs (tenant_id, id, root_id, instance_id, job_type, state, attempt, "
    "max_attempts, activatable_at, created_at, priority, activation_rank, fairness_key) "
    "SELECT 't0', 'jf' || g, 'i1', 'i1', 'fresh', 1, 1, 3, g, g, g % 101, "
    "g - (g % 101) * 1000000, CASE WHEN g % 2 = 0 THEN 'fresh' || g % 40 ELSE 'bulk' END "
    "FROM generate_series(1, 25000) g",
    "INSERT INTO subscriptions (tenant_id, id, root_id, instance_id, signal_name, aggregate_type, "
    "aggregate_id, created_at) SELECT 't0', 'bf' || g, 'i1', 'i' || (1 + g % 4), 'fresh', 'big', "
    "'b' || g % 10, g FROM generate_series(1, 25000) g",
    "INSERT INTO tasks (tenant_id, id, root_id, instance_id, assignee_kind, assignee_id, status, "
    "claimed_by, created_at) SELECT 't0', 'kf' || g, 'i1', 'i1', 1 + g % 2, CASE WHEN g % 2 = 0 "
    "THEN 'newbie' ELSE 'newgroup' END, 1 + g % 2, CASE WHEN g % 4 = 1 THEN 'newbie' END, g "
    "FROM generate_series(1, 25000) g",
    "INSERT INTO signals (tenant_id, id, signal_id, name, instance_id, aggregate_type, "
    "aggregate_id, outcome, buffered, received_at, expires_at, consumed_by_instance) SELECT 't0', "
    "'sf' || g, 'sidf' || g, 'fresh', 'i1', 'big', 'b' || g % 10, 2, true, g, g + 100000, "
    "'i2' FROM generate_series(1, 25000) g",
    "INSERT INTO instances (tenant_id, id, root_id, definition_key, definition_version, status, "
    "aggregate_type, aggregate_id, started_by, created_at, updated_at, version) SELECT 't0', "
    "'if' || g, 'if' || g, 'newdef', 1, 1, 'big', 'b' || g % 10, 'newbie', g, g, 1 "
    "FROM generate_series(1, 25000) g",
    "INSERT INTO events (tenant_id, root_id, instance_id, type, sequence, time) SELECT 't0', "
    "'if1', 'if1', 'T1', 100000 + g, g FROM generate_series(1, 25000) g",
    "INSERT INTO timers (tenant_id, id, root_id, instance_id, due_at, created_at) SELECT 't0', "
    "'mf' || g, 'if1', 'if1', g, g FROM generate_series(1, 25000) g",
    "INSERT INTO signal_deliveries (tenant_id, signal_log_id, instance_id, root_id, "
    "aggregate_type, aggregate_id, seq, state, created_at, done_at, received_at) SELECT 't0', "
    "'sf' || g, 'i2', 'i1', 'big', 'b' || g % 10, g, g % 3, g, CASE WHEN g % 3 = 0 THEN 0 ELSE g "
    "END, g FROM generate_series(1, 25000) g",
};

/* ---- the plans ---------------------------------------------------------------- */

static bool
is_backlog(const char *rel)
{
    for (size_t i = 0; rel != NULL && i < sizeof backlog / sizeof backlog[0]; i++)
        if (strcmp(rel, backlog[i]) == 0)
            return true;
    return false;
}

static const char *
str_of(json_t *node, const char *key)
{
    return json_string_value(json_object_get(node, key));
}

/* The plan of CTE name within the tree at root (NULL: none). */
static json_t *
find_cte(json_t *root, const char *name)
{
    const char *sub = str_of(root, "Subplan Name");
    if (sub != NULL && strncmp(sub, "CTE ", 4) == 0 && strcmp(sub + 4, name) == 0)
        return root;
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(root, "Plans"), i, child)
    {
        json_t *hit = find_cte(child, name);
        if (hit != NULL)
            return hit;
    }
    return NULL;
}

static bool
is_subplan(json_t *node)
{
    const char *rel = str_of(node, "Parent Relationship");
    return rel != NULL && (strcmp(rel, "InitPlan") == 0 || strcmp(rel, "SubPlan") == 0);
}

/* The backlog table whose rows node returns unbounded (NULL: none): a
 * Limit bounds its input; a Nested Loop returns what its outer side
 * drives (the inner side runs once per outer row); a CTE Scan returns
 * its CTE; a Tid Scan, the rows it names. */
static const char *
reads_backlog(json_t *top, json_t *node, int depth)
{
    const char *type = str_of(node, "Node Type");
    if (type == NULL || depth > 64 || strcmp(type, "Limit") == 0)
        return NULL;
    if (strcmp(type, "CTE Scan") == 0) {
        json_t *cte = find_cte(top, str_of(node, "CTE Name"));
        return cte != NULL ? reads_backlog(top, cte, depth + 1) : NULL;
    }
    /* A Tid Scan returns the rows whose ctids its condition names. */
    if (strcmp(type, "Tid Scan") == 0)
        return NULL;
    if (strstr(type, "Scan") != NULL && is_backlog(str_of(node, "Relation Name")))
        return str_of(node, "Relation Name");
    bool nested = strcmp(type, "Nested Loop") == 0;
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(node, "Plans"), i, child)
    {
        const char *rel = str_of(child, "Parent Relationship");
        if (is_subplan(child) || (nested && rel != NULL && strcmp(rel, "Inner") == 0))
            continue;
        const char *hit = reads_backlog(top, child, depth + 1);
        if (hit != NULL)
            return hit;
    }
    return NULL;
}

/* Whether the tree at node reads index name. */
static bool
reads_index(json_t *node, const char *name)
{
    const char *ix = str_of(node, "Index Name");
    if (ix != NULL && strcmp(ix, name) == 0)
        return true;
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(node, "Plans"), i, child)
    {
        if (reads_index(child, name))
            return true;
    }
    return false;
}

/* Appends to why each refused node of the tree at node. */
static void
check_node(json_t *top, json_t *node, const exemption *ex, char *why, size_t cap)
{
    const char *type = str_of(node, "Node Type");
    const char *rel = str_of(node, "Relation Name");
    size_t len = strlen(why);
    if (type != NULL && strcmp(type, "Seq Scan") == 0 && is_backlog(rel) &&
        (ex == NULL || !ex->scan))
        snprintf(why + len, cap - len, " Seq Scan on %s;", rel);
    if (type != NULL && strstr(type, "Sort") != NULL && (ex == NULL || !ex->sort)) {
        size_t i;
        json_t *child;
        json_array_foreach(json_object_get(node, "Plans"), i, child)
        {
            const char *hit = is_subplan(child) ? NULL : reads_backlog(top, child, 0);
            len = strlen(why);
            if (hit != NULL)
                snprintf(why + len, cap - len, " %s over %s;", type, hit);
        }
    }
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(node, "Plans"), i, child)
        check_node(top, child, ex, why, cap);
}

/* Statements with a plan: queries and DML (not BEGIN, LISTEN, CREATE). */
static bool
plannable(const char *sql)
{
    static const char *const kw[] = {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "("};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strncmp(sql, kw[i], strlen(kw[i])) == 0)
            return true;
    return false;
}

/* EXPLAIN (options) EXECUTE name(NULL, ...): under a generic plan the
 * values do not matter, and nothing is executed. */
static void
explain_sql(char *buf, size_t cap, const char *options, const char *name, int np)
{
    int len = snprintf(buf, cap, "EXPLAIN (%s) EXECUTE %s", options, name);
    for (int k = 0; k < np && len > 0 && (size_t)len < cap; k++)
        len += snprintf(buf + len, cap - (size_t)len, "%sNULL", k == 0 ? "(" : ", ");
    if (np > 0 && len > 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, ")");
}

/* Plans every statement generically; returns how many failed, printing
 * each with its plan. */
static int
guard(const char *phase, int *checked)
{
    int failed = 0;
    *checked = 0;
    exec_ok(pg, "DEALLOCATE ALL");
    exec_ok(pg, "SET plan_cache_mode = force_generic_plan");
    for (int i = 0; i < wf_store_pg_n_statements; i++) {
        const wf_store_pg_stmt *s = &wf_store_pg_statements[i];
        ck_assert_msg(s->name != NULL, "statement %d has no entry in the table", i);
        if (!plannable(s->sql))
            continue;
        PGresult *res = PQprepare(pg, s->name, s->sql, 0, NULL);
        ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "prepare %s: %s", s->name,
                      PQerrorMessage(pg));
        PQclear(res);
        res = PQdescribePrepared(pg, s->name);
        ck_assert_int_eq(PQresultStatus(res), PGRES_COMMAND_OK);
        int np = PQnparams(res);
        PQclear(res);
        char sql[1024];
        explain_sql(sql, sizeof sql, "FORMAT JSON", s->name, np);
        res = PQexec(pg, sql);
        ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
        json_error_t jerr;
        json_t *doc = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
        ck_assert_msg(doc != NULL, "%s: plan is not JSON: %s", s->name, jerr.text);
        json_t *top = json_object_get(json_array_get(doc, 0), "Plan");
        char why[512] = "";
        check_node(top, top, exemption_of(s->name), why, sizeof why);
        for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
            const char *ix = required_of(s->name, r);
            if (ix != NULL && !reads_index(top, ix)) {
                size_t len = strlen(why);
                snprintf(why + len, sizeof why - len, " does not read %s;", ix);
            }
        }
        if (why[0] != '\0') {
            failed++;
            fprintf(stderr, "FAIL (%s) %s:%s\n%s\n", phase, s->name, why, s->sql);
            PQclear(res);
            /* The plan again, as text, for the reader. */
            explain_sql(sql, sizeof sql, "COSTS OFF", s->name, np);
            res = PQexec(pg, sql);
            for (int r = 0; PQresultStatus(res) == PGRES_TUPLES_OK && r < PQntuples(res); r++)
                fprintf(stderr, "    %s\n", PQgetvalue(res, r, 0));
        }
        json_decref(doc);
        PQclear(res);
        (*checked)++;
    }
    exec_ok(pg, "DEALLOCATE ALL");
    return failed;
}

WF_TEST(test_generic_plans_over_a_backlog)
{
    /* The store migrates the fresh schema, as at a server's start. */
    char *store_dsn = wf_test_pg_schema_dsn(dsn, schema);
    wf_store_pg_config cfg = {store_dsn, 1, 1000, 2};
    wf_error err = {0};
    wf_store *st = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(st != NULL, "postgres store: %s", err.msg);
    wf_store_free(st);
    free(store_dsn);

    char sql[256];
    snprintf(sql, sizeof sql, "SET search_path = %s", schema);
    exec_ok(pg, sql);
    /* Statistics change only when this suite says so. */
    snprintf(sql, sizeof sql,
             "DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE "
             "schemaname = '%s' LOOP EXECUTE format('ALTER TABLE %%I SET "
             "(autovacuum_enabled = false)', t); END LOOP; END $$",
             schema);
    exec_ok(pg, sql);
    for (size_t i = 0; i < sizeof fill_seen / sizeof fill_seen[0]; i++)
        exec_ok(pg, fill_seen[i]);

    int checked, failed = guard("never analyzed", &checked);
    ck_assert_int_gt(checked, 40);

    exec_ok(pg, "ANALYZE");
    for (size_t i = 0; i < sizeof fill_unseen / sizeof fill_unseen[0]; i++)
        exec_ok(pg, fill_unseen[i]);
    failed += guard("values the last ANALYZE never saw", &checked);
    ck_assert_msg(failed == 0, "%d generic plans read the backlog (see above)", failed);
}
END_TEST

int
main(void)
{
    dsn = wf_test_pg_dsn();
    snprintf(schema, sizeof schema, "wf_plans_%d", (int)getpid());
    /* Outside a Check test: no ck_assert here (test_pg asserts too). */
    pg = PQconnectdb(dsn);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s", PQerrorMessage(pg));
        return 1;
    }
    PQsetNoticeProcessor(pg, quiet, NULL);
    char sql[256];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema, schema);
    PQclear(PQexec(pg, sql));

    int failed =
        wf_test_run_mode(wf_test_suite("store_plans", "plans", NULL, NULL, 240), CK_NOFORK);

    /* WF_TEST_PLANS_KEEP=1 keeps the schema and its backlog, to look at. */
    const char *keep = getenv("WF_TEST_PLANS_KEEP");
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    if (keep != NULL && strcmp(keep, "1") == 0)
        printf("kept schema %s\n", schema);
    else
        PQclear(PQexec(pg, sql));
    PQfinish(pg);
    return failed;
}
