-- 0015_first_analyze: the first statistics of a table come from the
-- service, not from autovacuum's first visit.
--
-- A statement is planned once per connection and its generic plan kept
-- until the statistics of a table it reads change. A table that was never
-- analysed looks empty to the planner, and on an empty table every index
-- that starts with tenant_id costs the same: a read of one root
-- ("tenant_id = $1 AND root_id = $2") may then be planned on an index by
-- tenant, filtered by root, and keep that plan while the tenant's rows
-- grow, until autovacuum first analyses the table (with 50 rows and then
-- up to a minute later, or never when autovacuum is behind). Each of those
-- reads walks every row of the tenant.
--
-- The store calls this function from its background thread (store_pg.c,
-- "notifier") until it answers 0: every backlog table that was never
-- analysed and holds at least min_bytes is analysed now (which makes every
-- connection plan its statements again, on what the table holds). It
-- answers how many of them are still never analysed. SKIP_LOCKED: a
-- replica that finds a table being analysed by another goes on.
CREATE FUNCTION wf_analyze_new_tables(min_bytes bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    t regclass;
    still integer := 0;
BEGIN
    FOR t IN SELECT c.oid::regclass FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
               AND c.reltuples < 0
               AND c.relname IN ('instances', 'tasks', 'tokens', 'work_items', 'jobs', 'timers',
                                 'subscriptions', 'signals', 'events', 'idempotency',
                                 'batch_operations')
    LOOP
        IF pg_relation_size(t) >= min_bytes THEN
            EXECUTE format('ANALYZE (SKIP_LOCKED) %s', t);
        END IF;
        IF (SELECT reltuples FROM pg_class WHERE oid = t) < 0 THEN
            still := still + 1;
        END IF;
    END LOOP;
    RETURN still;
END $$;
