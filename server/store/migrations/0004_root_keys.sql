-- 0004_root_keys: the per-instance tables are keyed by their root.
--
-- Every row of an aggregate carries root_id (= id for a root instance),
-- and a unit of work addresses its rows by (tenant_id, root_id, id), so
-- that a table distributed by root_id (docs/scaling.md) can route each
-- statement to one shard. The primary key leads with the same columns; it
-- also serves the aggregate reads (tenant_id, root_id), which had their
-- own index.
--
-- Lookups by id alone (get_instance, root_of, get_task) keep an index on
-- (tenant_id, id) for instances and tasks. It stays UNIQUE here: an id
-- names one row per tenant, as before. A distributed table cannot enforce
-- it (no shard key in it); there it is created non-unique, and ids stay
-- unique because the server mints them (UUIDv7). The other tables are
-- only ever addressed through their root (the aggregate reads, and the
-- scheduler's and activation's batches join back on the primary key), so
-- they need no second index.

ALTER TABLE instances DROP CONSTRAINT instances_pkey,
    ADD CONSTRAINT instances_pkey PRIMARY KEY (tenant_id, root_id, id);
CREATE UNIQUE INDEX instances_id ON instances (tenant_id, id);
DROP INDEX instances_root;

ALTER TABLE tasks DROP CONSTRAINT tasks_pkey,
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (tenant_id, root_id, id);
CREATE UNIQUE INDEX tasks_id ON tasks (tenant_id, id);
DROP INDEX tasks_root;

ALTER TABLE tokens DROP CONSTRAINT tokens_pkey,
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (tenant_id, root_id, id);
DROP INDEX tokens_root;

ALTER TABLE work_items DROP CONSTRAINT work_items_pkey,
    ADD CONSTRAINT work_items_pkey PRIMARY KEY (tenant_id, root_id, id);
DROP INDEX work_items_root;

ALTER TABLE jobs DROP CONSTRAINT jobs_pkey,
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (tenant_id, root_id, id);
DROP INDEX jobs_root;

ALTER TABLE timers DROP CONSTRAINT timers_pkey,
    ADD CONSTRAINT timers_pkey PRIMARY KEY (tenant_id, root_id, id);
DROP INDEX timers_root;

ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_pkey,
    ADD CONSTRAINT subscriptions_pkey PRIMARY KEY (tenant_id, root_id, id);
DROP INDEX subscriptions_root;
