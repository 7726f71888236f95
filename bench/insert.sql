-- The commit ceiling: one one-row INSERT per transaction (pgbench -n -f).
-- wfbench creates the table first:
--   bench_commit (id bigserial PRIMARY KEY, payload text NOT NULL,
--                 created_at timestamptz NOT NULL DEFAULT now())
INSERT INTO bench_commit (payload) VALUES ('{"amount":42,"customer":"c-1"}');
