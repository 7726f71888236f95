-- Grows the database as a service's grows when retention is off: :n more
-- ended root instances, each with the events of one finished job, copied
-- from the latest root the warm-up ended (its variables, its indexes, its
-- event rows). Run by run.sh --grown while the server is idle: it holds
-- both tables locked until it commits.
\set ON_ERROR_STOP on
BEGIN;
-- The sequencer waits: the copies take the next :n x k sequence numbers.
LOCK TABLE event_sequencer IN EXCLUSIVE MODE;
CREATE TEMP TABLE tpl_i ON COMMIT DROP AS
    SELECT * FROM instances WHERE ended_at > 0 AND id = root_id ORDER BY ended_at DESC LIMIT 1;
SELECT count(*) = 1 AS have_template FROM tpl_i \gset
\if :have_template
\else
\echo 'grow.sql: no ended root instance to copy (the warm-up ended none)'
\quit 3
\endif
CREATE TEMP TABLE tpl_e ON COMMIT DROP AS
    SELECT row_number() OVER (ORDER BY e.sequence, e.id) AS k, e.*
    FROM events e JOIN tpl_i i ON e.tenant_id = i.tenant_id AND e.root_id = i.id;
SELECT count(*) AS per FROM tpl_e \gset
-- Built again after the copies: one sorted build per index is much faster
-- than 1M insertions into each (the GIN over variables above all).
CREATE TEMP TABLE grow_idx ON COMMIT DROP AS
    SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
    FROM pg_index i
    WHERE i.indrelid IN ('instances'::regclass, 'events'::regclass)
      AND NOT i.indisprimary AND NOT i.indisunique;
SELECT format('DROP INDEX %s', name) FROM grow_idx \gexec
INSERT INTO instances
SELECT (jsonb_populate_record(NULL::instances, to_jsonb(t) || jsonb_build_object(
            'id', 'grown-' || g, 'root_id', 'grown-' || g,
            'aggregate_id', CASE WHEN t.aggregate_id IS NULL THEN NULL ELSE 'grown-' || g END,
            'created_at', t.created_at - (:n - g) * 1000,
            'ended_at', t.ended_at - (:n - g) * 1000,
            'updated_at', t.ended_at - (:n - g) * 1000))).*
FROM tpl_i t, generate_series(1, :n) g;
INSERT INTO events (sequence, tenant_id, root_id, instance_id, type, actor, data_json, time)
SELECT s.last + (g - 1) * :per + e.k, e.tenant_id, 'grown-' || g, 'grown-' || g, e.type, e.actor,
       e.data_json, e.time - (:n - g) * 1000
FROM tpl_e e, generate_series(1, :n) g, event_sequencer s;
UPDATE event_sequencer SET last = last + :n * :per;
SET LOCAL maintenance_work_mem = '256MB';
SELECT def FROM grow_idx \gexec
COMMIT;
VACUUM ANALYZE instances;
VACUUM ANALYZE events;
SELECT :n AS instances_added, :n * :per AS events_added;
