#!/usr/bin/env python3
"""Shard-locality of the Postgres store, simulated with hash partitions.

docs/scaling.md explains how the schema maps onto a distributed Postgres
(Citus) sharded by (tenant_id, root_id). This suite checks that claim
against the real store code, statement by statement:

1. Creates a scratch database and turns statement logging on for it only
   (log_min_duration_statement = 0 logs every prepared statement the store
   executes, with its bound parameters).
2. Runs end-to-end suites (--suite, WF_TEST_STORE=pg) against it: the real
   server, engine and store, over gRPC.
3. Loads every migration into schema wf_src, then builds schema wf_part
   from the catalog: each table with a root_id column is PARTITION BY HASH
   (tenant_id, root_id) with 8 partitions, carrying the same constraints
   and indexes. A unique key that Postgres rejects because it lacks the
   partition key (as Citus would reject it) is recorded and replaced by
   (tenant_id, root_id, <its columns>).
4. Replays every logged statement, with its logged parameters, as
   EXPLAIN EXECUTE on wf_part under plan_cache_mode = force_custom_plan, so
   that partition pruning shows in the plan, and counts the partitions of
   each partitioned table the plan touches (an INSERT's plan names none: it
   is routed to the one partition of its row). The sequencer's nested
   statements are captured with auto_explain (log_nested_statements).
5. Compares each statement's measured class with the class documented in
   docs/scaling.md (CLASSES below): single (one partition of each table it
   names, or an INSERT routed to its row's partition), fan-out (a
   documented cross-instance read), global (touches no per-root table).
   Every statement that locks, reads or writes the rows of a unit of work's
   aggregate is single: a plan that touches a second partition fails the
   suite. So does a statement the store executes that is not classified,
   and a classified mutation the workload never ran.

Needs a superuser DSN (WF_TEST_PG_DSN) whose server log it can read
(pg_read_file); without WF_TEST_PG_DSN it skips (exit 77).
"""
import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import wf_testkit  # noqa: E402  (the Python suites' shared kit)

PARTITIONS = 8
SUITE_TIMEOUT_S = 90  # times the time scale, at most 240 (ctest allows 300)
REPLAYS_PER_PATTERN = 3
REPLAYS_PER_STATEMENT = 24

# Per statement name of pg/stmts.c: (runs in a unit of work?, class).
# Keep in step with the tables of docs/scaling.md.
CLASSES = {
    # the root lock and its aggregate, addressed by the root's id
    "lock_root": (True, "single"),
    "agg_instances": (True, "single"),
    "agg_tasks": (True, "single"),
    "agg_tokens": (True, "single"),
    "agg_work_items": (True, "single"),
    "agg_jobs": (True, "single"),
    "agg_timers": (True, "single"),
    "agg_subscriptions": (True, "single"),
    # writes of the aggregate
    "insert_instance": (True, "single"),
    "update_instance": (True, "single"),
    "update_instance_checked": (True, "single"),
    "upsert_task": (True, "single"),
    "upsert_token": (True, "single"),
    "upsert_work_item": (True, "single"),
    "upsert_job": (True, "single"),
    "upsert_timer": (True, "single"),
    "upsert_subscription": (True, "single"),
    "insert_events": (True, "single"),
    "del_token": (True, "single"),
    "del_job": (True, "single"),
    "del_timer": (True, "single"),
    "del_subscription": (True, "single"),
    # the root of a child named by its id alone, before the lock (a lookup
    # by id: run only when the caller had no row carrying the root)
    "root_of": (False, "fanout"),
    # not per root: reference or separately distributed tables
    "upsert_signal": (True, "global"),
    "consume_signal": (True, "global"),
    "consume_signal_instance": (True, "global"),
    "consume_signal_aggregate": (True, "global"),
    "idem_get": (True, "global"),
    "idem_put": (True, "global"),
    "idem_amend": (True, "global"),
    "put_definition": (True, "global"),
    "get_definition": (True, "global"),
    # correlation by aggregate inside a unit of work: a lock that is no
    # row's, and whether any instance waits for the aggregate
    "lock_correlation": (True, "global"),
    "sub_awaited": (True, "fanout"),
    # SendSignal with start: whether a root of the aggregate is live
    "aggregate_live": (True, "fanout"),
    # lease of jobs of one type across instances (with fairness keys: the
    # fair lease, and whether the type's queue has keys)
    "activate_jobs": (True, "fanout"),
    "activate_jobs_fair": (True, "fanout"),
    "jobs_keyed": (True, "fanout"),
    # reads outside a unit of work
    "get_instance": (False, "fanout"),
    "get_task": (False, "fanout"),
    "get_job_by_key": (False, "fanout"),
    "list_tasks_user": (False, "fanout"),
    "list_tasks_group": (False, "fanout"),
    "list_tasks_all": (False, "fanout"),
    "list_instances_aggregate": (False, "fanout"),
    "list_instances_started_by": (False, "fanout"),
    "list_instances_definition": (False, "fanout"),
    "list_instances_all": (False, "fanout"),
    "list_instances_variables": (False, "fanout"),
    "list_incidents_all": (False, "fanout"),
    "list_incidents_definition": (False, "fanout"),
    "list_definitions": (False, "global"),
    "list_signals_id": (False, "global"),
    "list_signals_instance": (False, "fanout"),
    "list_signals_aggregate": (False, "global"),
    "list_signals_all": (False, "global"),
    "find_subscriptions_instance": (False, "fanout"),
    "find_subscriptions_aggregate": (False, "fanout"),
    "read_events_instance": (False, "fanout"),
    "read_events_all": (False, "fanout"),
    "sequence_events": (False, "global"),
    # the scheduler's passes
    "claim_timers": (False, "fanout"),
    "expired_leases": (False, "fanout"),
    "expire_signals": (False, "global"),
    "sweep_signals": (False, "global"),
    "sweep_idempotency": (False, "global"),
    "sweep_events": (False, "fanout"),
    # ... and their one-tenant shapes (RunSchedulerPass)
    "claim_timers_tenant": (False, "fanout"),
    "expired_leases_tenant": (False, "fanout"),
    "expire_signals_tenant": (False, "global"),
    "sweep_signals_tenant": (False, "global"),
    "sweep_idempotency_tenant": (False, "global"),
    "sweep_events_tenant": (False, "fanout"),
    "count_backlog": (False, "fanout"),
    # batch operations: a table of the tenant without root_id
    "put_batch": (True, "global"),
    "get_batch": (False, "global"),
    "update_batch": (False, "global"),
    "list_batches": (False, "global"),
    "claim_batches": (False, "global"),
    "claim_batches_tenant": (False, "global"),
    # schedules and their runs: tables of the tenant without root_id
    "put_schedule": (True, "global"),
    "get_schedule": (False, "global"),
    "update_schedule": (False, "global"),
    "delete_schedule": (False, "global"),
    "list_schedules": (False, "global"),
    "claim_schedules": (False, "global"),
    "claim_schedules_tenant": (False, "global"),
    "put_schedule_run": (True, "global"),
    "list_schedule_runs": (False, "global"),
    # the fan-out of a signal to an aggregate (0016): the target set read
    # from every shard under the correlation lock, each delivery consumed
    # on its instance's root, the schedulers' claims across shards
    "fanout_targets": (True, "fanout"),
    "take_delivery": (True, "single"),
    "get_signal": (True, "global"),
    "claim_deliveries": (False, "fanout"),
    "pending_deliveries": (False, "fanout"),
    "find_queued_signals": (False, "fanout"),
    "count_deliveries": (False, "fanout"),
    # a definition's live totals and its instances at one element
    # (GetDefinitionStatistics): grouped reads across shards
    "fleet_counts": (False, "fanout"),
    "fleet_instances": (False, "fanout"),
    # ... and their retention (0019), every tenant's or one's
    "sweep_deliveries": (False, "fanout"),
    "sweep_deliveries_tenant": (False, "fanout"),
}
# Run only on a path (a signal racing the wait for its aggregate) that the
# workload may not take; checked when it does. consume_signal (by instance
# and aggregate at once) is the store contract's; the engine asks by one.
OPTIONAL = {"lock_correlation", "sub_awaited", "aggregate_live", "consume_signal", "update_instance",
            "idem_amend", "put_batch", "fanout_targets", "take_delivery", "get_signal",
            "put_schedule", "put_schedule_run"}
# Transaction control, settings, LISTEN, the notifier's NOTIFY and its
# ANALYZE of growing tables (0015), migrations: nothing to plan.
UTILITY = {"begin", "commit", "rollback", "timeout_local", "timeout_session", "ping",
           "listen_events", "listen_jobs", "notify", "analyze_grown", "mig_lock", "mig_unlock",
           "mig_table", "mig_has", "mig_max", "mig_record"}

# Builds wf_part from the catalog of wf_src (see step 3 above). Notes go to
# wf_scale_notes: (table, key, definition it had, error, replacement).
GENERATE_SQL = r"""
CREATE SCHEMA wf_part;
CREATE TABLE wf_scale_notes (tbl text, key text, had text, error text, replacement text);
DO $gen$
DECLARE
    t record;
    x record;
    k int;
    stmt text;
    keycols text;
BEGIN
    FOR t IN SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'wf_src' AND c.relkind = 'r' ORDER BY c.relname LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = t.oid AND attname = 'root_id'
                       AND NOT attisdropped) THEN
            EXECUTE format('CREATE TABLE wf_part.%I (LIKE wf_src.%I INCLUDING ALL)',
                           t.relname, t.relname);
            CONTINUE;
        END IF;
        EXECUTE format('CREATE TABLE wf_part.%I (LIKE wf_src.%I INCLUDING DEFAULTS '
                       'INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS) '
                       'PARTITION BY HASH (tenant_id, root_id)', t.relname, t.relname);
        FOR k IN 0 .. %(parts)s - 1 LOOP
            EXECUTE format('CREATE TABLE wf_part.%I PARTITION OF wf_part.%I '
                           'FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                           t.relname || '_h' || k, t.relname, %(parts)s, k);
        END LOOP;
        FOR x IN SELECT ic.relname AS iname, i.indisunique, i.indisprimary, con.oid AS con,
                        con.conname, pg_get_indexdef(i.indexrelid) AS def,
                        pg_get_expr(i.indpred, i.indrelid) AS pred,
                        (SELECT array_agg(a.attname::text ORDER BY o.n)
                           FROM unnest(i.indkey::int2[]) WITH ORDINALITY o(att, n)
                           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = o.att)
                            AS cols
                   FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                   LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid
                                              AND con.conrelid = i.indrelid
                   WHERE i.indrelid = t.oid ORDER BY ic.relname LOOP
            IF x.con IS NOT NULL THEN
                stmt := format('ALTER TABLE wf_part.%I ADD CONSTRAINT %I %s', t.relname,
                               x.conname, pg_get_constraintdef(x.con));
            ELSE
                stmt := replace(x.def, ' ON wf_src.', ' ON wf_part.');
            END IF;
            BEGIN
                EXECUTE stmt;
            EXCEPTION WHEN others THEN
                -- A unique key without the partition key: what it would
                -- have to become, (tenant_id, root_id, its other columns).
                keycols := (SELECT string_agg(quote_ident(c), ', ' ORDER BY n)
                              FROM unnest(ARRAY['tenant_id', 'root_id'] ||
                                          array(SELECT c2 FROM unnest(x.cols) c2
                                                WHERE c2 NOT IN ('tenant_id', 'root_id')))
                                   WITH ORDINALITY u(c, n));
                IF x.con IS NOT NULL THEN
                    stmt := format('ALTER TABLE wf_part.%I ADD CONSTRAINT %I %s (%s)', t.relname,
                                   x.conname,
                                   CASE WHEN x.indisprimary THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
                                   keycols);
                ELSE
                    stmt := format('CREATE UNIQUE INDEX %I ON wf_part.%I (%s)%s', x.iname,
                                   t.relname, keycols,
                                   coalesce(' WHERE ' || x.pred, ''));
                END IF;
                INSERT INTO wf_scale_notes VALUES (t.relname, coalesce(x.conname, x.iname),
                    coalesce(pg_get_constraintdef(x.con), x.def), SQLERRM, stmt);
                EXECUTE stmt;
            END;
        END LOOP;
    END LOOP;
    -- Functions (the sequencer), bound to wf_part instead of wf_src.
    FOR x IN SELECT p.oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'wf_src' LOOP
        EXECUTE replace(pg_get_functiondef(x.oid), 'wf_src', 'wf_part');
    END LOOP;
END
$gen$;

-- EXPLAIN EXECUTE of one logged statement: the plan's text or "ERROR: ...".
CREATE FUNCTION wf_scale_explain(q text, args text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    line text;
    plan text := '';
BEGIN
    DEALLOCATE ALL;
    BEGIN
        EXECUTE 'PREPARE wf_scale_q AS ' || q;
        FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE wf_scale_q' || args LOOP
            plan := plan || line || E'\n';
        END LOOP;
    EXCEPTION WHEN others THEN
        plan := 'ERROR: ' || SQLERRM;
    END;
    RETURN plan;
END
$f$;
"""

# The sequencer on wf_part, with one unnumbered event, rolled back; the
# plans of its nested statements arrive as NOTICEs (auto_explain).
SEQUENCER_SQL = """
SET search_path = wf_part;
SET plan_cache_mode = force_custom_plan;
BEGIN;
INSERT INTO events (tenant_id, root_id, instance_id, type, time)
    VALUES ('t', 'r', 'r', 'PROBE', 0);
LOAD 'auto_explain';
SET LOCAL auto_explain.log_min_duration = 0;
SET LOCAL auto_explain.log_analyze = off;
SET LOCAL auto_explain.log_nested_statements = on;
SET LOCAL auto_explain.log_level = notice;
SET LOCAL client_min_messages = notice;
SELECT wf_sequence_events(1000, 0);
ROLLBACK;
"""


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Pg:
    def __init__(self, psql, dsn):
        self.psql, self.dsn = psql, dsn

    def run(self, sql, check=True, timeout=60):
        r = subprocess.run([self.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.dsn],
                           input=sql, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            fail("psql: %s\n%s" % (r.stderr.strip(), sql[:400]))
        return r


with_db = wf_testkit.dsn_with_db


PREFIX = r"^\S.*?\b(LOG|DETAIL|ERROR|WARNING|NOTICE|STATEMENT|HINT|CONTEXT|FATAL):  "


def parse_log(text):
    """[(name, query, [param literal or NULL, ...])] of every execute logged."""
    records = []
    for line in text.split("\n"):
        m = re.match(PREFIX, line)
        if m:
            records.append([m.group(1), line[m.end():]])
        elif records:  # a parameter value spanning lines
            records[-1][1] += "\n" + line
    out = []
    for i, (level, msg) in enumerate(records):
        m = re.match(r"duration: [0-9.]+ ms  execute (\w+): (.*)$", msg, re.S) if level == "LOG" else None
        if not m:
            continue
        params = []
        if i + 1 < len(records) and records[i + 1][0] == "DETAIL" and \
                records[i + 1][1].startswith("parameters: "):
            detail = records[i + 1][1][len("parameters: "):]
            params = [v for _, v in re.findall(r"\$(\d+) = ('(?:[^']|'')*'|NULL)", detail, re.S)]
        out.append((m.group(1), m.group(2), params))
    return out


def touched(plan):
    """{partitioned table: number of its partitions named in the plan}."""
    seen = {}
    for table, k in re.findall(r"\b([a-z_]+)_h(\d+)\b", plan):
        seen.setdefault(table, set()).add(k)
    return {t: len(ks) for t, ks in seen.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--migrations", required=True)
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    dsn = os.environ.get("WF_TEST_PG_DSN", "")
    if not dsn:
        print("skipped: WF_TEST_PG_DSN is not set")
        return wf_testkit.SKIP
    # The workload suites run side by side with statement logging on: on a
    # loaded machine or under sanitizers they take several times longer.
    global SUITE_TIMEOUT_S
    if args.suite:
        SUITE_TIMEOUT_S = min(SUITE_TIMEOUT_S * wf_testkit.time_scale(args.suite[0]), 240)
    psql = wf_testkit.psql_path()
    os.makedirs(args.work, exist_ok=True)
    started = time.monotonic()
    admin = Pg(psql, dsn)
    if admin.run("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").stdout.strip() != "t":
        print("skipped: WF_TEST_PG_DSN is not a superuser (needed to log statements)")
        return wf_testkit.SKIP
    # One scratch database per workload suite, so that the suites can run
    # side by side without seeing each other's rows.
    stem = "wf_scaling_%d_%s" % (os.getpid(), secrets.token_hex(3))
    dbs = ["%s_%d" % (stem, i) for i in range(max(1, len(args.suite)))]
    try:
        for db in dbs:
            admin.run("CREATE DATABASE %s" % db)
        return run(args, admin, [Pg(psql, with_db(dsn, db)) for db in dbs], dbs, started)
    finally:
        for db in dbs:
            admin.run("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db, check=False)


def server_log(pg):
    """The server log's path: the logging collector's file, or pg.sh's
    server.log beside the data directory."""
    path = pg.run("SELECT coalesce(pg_current_logfile('stderr'), '')").stdout.strip()
    data = pg.run("SHOW data_directory").stdout.strip()
    if path and not path.startswith("/"):
        path = os.path.join(data, path)
    return path or os.path.join(os.path.dirname(data), "server.log")


def log_size(pg, path):
    r = pg.run("SELECT (pg_stat_file('%s')).size" % path.replace("'", "''"), check=False)
    if r.returncode != 0:
        fail("cannot read the server log %s: %s" % (path, r.stderr.strip()))
    return int(r.stdout.strip())


def run(args, admin, pgs, dbs, started):
    pg = pgs[0]
    # 1. statement logging, for the scratch databases only
    for db in dbs:
        admin.run("ALTER DATABASE %s SET log_min_duration_statement = 0;"
                  "ALTER DATABASE %s SET log_parameter_max_length = -1;" % (db, db))
    logpath = server_log(admin)
    offset = log_size(admin, logpath)

    # 2. workload: the suites side by side, each on its own database
    t0 = time.monotonic()
    procs = [(suite, subprocess.Popen([suite], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True,
                                      env=dict(os.environ, WF_TEST_STORE="pg",
                                               WF_TEST_PG_DSN=p.dsn)))
             for suite, p in zip(args.suite, pgs)]
    failed = []
    for suite, proc in procs:
        try:
            out, _ = proc.communicate(timeout=max(1, SUITE_TIMEOUT_S - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            out += "\n(killed after %d s)" % SUITE_TIMEOUT_S
        summary = [l for l in out.splitlines() if "Checks:" in l]
        print("workload %s: %s (%.1f s)" % (os.path.basename(suite),
                                            summary[-1] if summary else "exit %s" % proc.returncode,
                                            time.monotonic() - t0))
        if proc.returncode != 0:
            print(out[-2000:])
            failed.append(suite)
    if failed:
        fail("workload suites failed, the statements they cover are unchecked: "
             + ", ".join(failed))
    for db in dbs:
        admin.run("ALTER DATABASE %s RESET log_min_duration_statement;"
                  "ALTER DATABASE %s RESET log_parameter_max_length;" % (db, db))
    end = log_size(admin, logpath)
    # In bounded chunks, as bytes (hex): a chunk may end inside a line or
    # a character, and psql would add a line break after each.
    chunks = []
    for at in range(offset, end, 8 << 20):
        chunks.append(bytes.fromhex(admin.run(
            "SELECT encode(pg_read_binary_file('%s', %d, %d), 'hex')"
            % (logpath.replace("'", "''"), at, min(8 << 20, end - at)), timeout=60).stdout.strip()))
    execs = parse_log(b"".join(chunks).decode("utf-8", "replace"))
    if not execs:
        fail("no statement of the store found in the server log %s" % logpath)

    # 3. the partitioned schema
    migrations = sorted(f for f in os.listdir(args.migrations) if f.endswith(".sql"))
    sql = "CREATE SCHEMA wf_src; SET search_path = wf_src;\n"
    for f in migrations:
        with open(os.path.join(args.migrations, f)) as fh:
            sql += fh.read() + "\n"
    pg.run(sql)
    pg.run("SET search_path = public;\n" + GENERATE_SQL.replace("%(parts)s", str(PARTITIONS)))
    notes = pg.run("SELECT tbl, key, had, error, replacement FROM wf_scale_notes ORDER BY 1, 2"
                   ).stdout.strip()
    print("\nUnique keys the partitioned schema rejects (migrations %s):" % ", ".join(migrations))
    for line in notes.splitlines():
        tbl, key, had, err, repl = line.split("|")
        print("  %s.%s %s: %s\n    replaced by: %s" % (tbl, key, had, err, repl))

    # 4. replay: a few executions per statement and per pattern of NULL parameters
    by_name, picked = {}, []
    for name, q, params in execs:
        by_name.setdefault(name, []).append((q, params))
    unknown = sorted(n for n in by_name if n not in CLASSES and n not in UTILITY)
    if unknown:
        fail("statements not classified for sharding (add them to CLASSES here and to "
             "docs/scaling.md): %s" % ", ".join(unknown))
    for name, runs in sorted(by_name.items()):
        if name in UTILITY:
            continue
        per_pattern, n = {}, 0
        for q, params in runs:
            pat = tuple(p == "NULL" for p in params)
            if per_pattern.get(pat, 0) >= REPLAYS_PER_PATTERN or n >= REPLAYS_PER_STATEMENT:
                continue
            per_pattern[pat] = per_pattern.get(pat, 0) + 1
            n += 1
            picked.append((name, q, "(%s)" % ", ".join(params) if params else ""))
    tag = "$wf%s$" % secrets.token_hex(4)
    rows = []
    for i, (name, q, a) in enumerate(picked):
        if tag in q or tag in a:
            fail("replay quote tag occurs in a statement")
        rows.append("(%d, %s%s%s, %s%s%s)" % (i, tag, q, tag, tag, a, tag))
    out = pg.run("SET search_path = wf_part;\nSET plan_cache_mode = force_custom_plan;\n"
                 "CREATE TEMP TABLE wf_scale_replay (id int, q text, args text);\n"
                 "INSERT INTO wf_scale_replay VALUES %s;\n"
                 "SELECT json_agg(json_build_object('id', id, 'plan', "
                 "public.wf_scale_explain(q, args)) ORDER BY id) FROM wf_scale_replay;\n"
                 % ",\n".join(rows), timeout=120).stdout
    plans = {r["id"]: r["plan"] for r in json.loads(out)}
    seq = pg.run(SEQUENCER_SQL)
    nested = [p for p in re.split(r"NOTICE:  duration: ", seq.stderr) if "Query Text:" in p]

    # 5. classify and compare
    partitioned = set(pg.run("SELECT relname FROM pg_class WHERE relkind = 'p' AND "
                             "relnamespace = 'wf_part'::regnamespace").stdout.split())
    measured = {}
    for i, (name, q, a) in enumerate(picked):
        m = measured.setdefault(name, {"n": 0, "errors": set(), "parts": {}})
        m["n"] += 1
        plan = plans[i]
        if plan.startswith("ERROR: "):
            m["errors"].add(plan[len("ERROR: "):].strip())
            continue
        for t, k in touched(plan).items():
            m["parts"][t] = max(m["parts"].get(t, 0), k)
        target = re.match(r"\s*Insert on (\w+)", plan)
        if target and target.group(1) in partitioned and not touched(plan):
            m["routed"] = True

    def observed(name):
        m = measured[name]
        if m["errors"]:
            return "error"
        if not m["parts"]:
            return "routed" if m.get("routed") else "global"
        return "multi" if max(m["parts"].values()) > 1 else "single"

    ok_for = {"single": {"single", "routed"}, "global": {"global"},
              "fanout": {"multi", "single"}}
    problems = []
    print("\n%-20s %-4s %-8s %-8s %4s  %s" % ("statement", "uow", "class", "measured", "runs",
                                               "partitions touched (of %d)" % PARTITIONS))
    for name in sorted(measured):
        uow, cls = CLASSES[name]
        obs = observed(name)
        m = measured[name]
        what = ", ".join("%s %d" % (t, k) for t, k in sorted(m["parts"].items()))
        if obs == "routed":
            what = "1 (INSERT routed by its row)"
        if m["errors"]:
            what = "; ".join(sorted(m["errors"]))[:90]
        print("%-20s %-4s %-8s %-8s %4d  %s" % (name, "yes" if uow else "no", cls, obs, m["n"],
                                                what or "-"))
        if obs not in ok_for[cls]:
            problems.append("%s: documented as %s, measured %s (%s)" % (name, cls, obs, what))
    print("\nfan-out (documented cross-instance reads): %s" % ", ".join(
        sorted(n for n in measured if CLASSES[n][1] == "fanout")))
    print("\nwf_sequence_events, nested statements (auto_explain):")
    for p in nested:
        qt = re.search(r"Query Text: (.*)", p)
        parts = touched(p)
        print("  %s\n    -> %s" % (qt.group(1).strip()[:100] if qt else "?",
                                   ", ".join("%s %d" % kv for kv in sorted(parts.items())) or "-"))
    if not any(touched(p).get("events", 0) > 1 for p in nested):
        problems.append("the sequencer's nested plans were not captured (auto_explain)")


    missing = sorted(n for n, (uow, _) in CLASSES.items()
                     if uow and n not in measured and n not in OPTIONAL)
    if missing:
        problems.append("mutation statements the workload never ran: " + ", ".join(missing))
    single = [n for n in measured
              if CLASSES[n] == (True, "single") and observed(n) in ok_for["single"]]
    print("\n%d statements replayed (%d plans), %d mutation statements on one partition each, "
          "%.1f s" % (len(measured), len(picked), len(single), time.monotonic() - started))
    if problems:
        for p in problems:
            print("FAIL: " + p)
        return 1
    print("OK: every statement matches its class in docs/scaling.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
