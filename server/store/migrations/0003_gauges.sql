-- 0003_gauges: the backlog gauges of /metrics count rows of every tenant
-- every few seconds. Tasks and the signal log keep their history, so each
-- count reads a partial index holding only the live rows.

-- Tasks waiting for a person: OPEN (1) or CLAIMED (2).
CREATE INDEX tasks_pending ON tasks (status) WHERE status IN (1, 2);

-- Signals in the buffer, by expiry (expired ones are not counted).
CREATE INDEX signals_buffered ON signals (expires_at) WHERE buffered AND NOT discarded;
