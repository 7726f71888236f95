-- 0015_grown_tables: the statistics of a growing table come from the
-- service, not only from autovacuum's visits.
--
-- A statement is planned once per connection and its generic plan kept
-- until the statistics of a table it reads change. A plan made while a
-- table was empty or small stays while the table grows: on a table that
-- was never analysed, every index that starts with tenant_id costs the
-- same, so a read of one root ("tenant_id = $1 AND root_id = $2") may be
-- planned on an index by tenant, filtered by root; on a small table, a
-- queue read ("ORDER BY activatable_at, id LIMIT $4") may be planned as a
-- bitmap scan of every waiting row and a sort. Autovacuum analyses a table
-- after 50 rows and then after a tenth of it changes, but up to a minute
-- later (or never, when it is behind), and until it does, each of those
-- statements reads every row of the tenant or of the queue.
--
-- The store calls this function about once a second from its background
-- thread (pg/listen.c, "notifier"): every backlog table of at least
-- min_bytes that was never analysed, or that has grown to factor times
-- the pages its last analysis saw, is analysed now. That makes every
-- connection plan its statements again on what the table holds; past a
-- few growths the plans keep their shape and autovacuum's pace is enough.
-- It answers how many tables it analysed. SKIP_LOCKED: a replica that
-- finds a table being analysed by another goes on. Only tables the role
-- may analyse (it owns them, or is a superuser) are tried, so a role that
-- did not migrate the schema leaves the statistics to autovacuum instead
-- of logging a warning every second.
CREATE FUNCTION wf_analyze_grown_tables(min_bytes bigint, factor int) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    t regclass;
    seen bigint;
    never boolean;
    size bigint;
    n integer := 0;
BEGIN
    FOR t, seen, never IN
        SELECT c.oid::regclass, c.relpages, c.reltuples < 0 FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND c.relname IN ('instances', 'tasks', 'tokens', 'work_items', 'jobs', 'timers',
                            'subscriptions', 'signals', 'events', 'idempotency',
                            'batch_operations')
          AND (pg_has_role(c.relowner, 'MEMBER')
               OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user))
    LOOP
        size := pg_relation_size(t);
        IF size >= min_bytes AND (never OR size / 8192 >= factor * greatest(seen, 1)) THEN
            EXECUTE format('ANALYZE (SKIP_LOCKED) %s', t);
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END $$;
