-- 0014_batch_operations: batch operations over the instances a filter
-- matches (StartBatchOperation; engine/batch.h).
--
-- One row per operation, written once by StartBatchOperation (with its
-- request record) and then by the schedulers of every replica, each
-- write checked against version: a claim sets the lease (lease_owner,
-- lease_until), a chunk advances cursor and the counters and lets the
-- lease go, CancelBatchOperation ends it. filter_json, args_json (the
-- action's arguments: MIGRATE's target version and place mapping),
-- errors_json and cursor belong to the engine; the store never reads them.
CREATE TABLE batch_operations (
    id          text NOT NULL,
    tenant_id   text NOT NULL,
    action      smallint NOT NULL,
    state       smallint NOT NULL,
    filter_json text NOT NULL,
    reason      text,
    created_by  text,
    total       bigint NOT NULL DEFAULT 0,
    done        bigint NOT NULL DEFAULT 0,
    failed      bigint NOT NULL DEFAULT 0,
    errors_json text,
    cursor      text,
    lease_owner text,
    lease_until bigint NOT NULL DEFAULT 0,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    ended_at    bigint NOT NULL DEFAULT 0,
    version     bigint NOT NULL,
    args_json   text,
    PRIMARY KEY (tenant_id, id)
);

-- ListBatchOperations (list_batches): newest first, a backward scan.
CREATE INDEX batch_operations_created ON batch_operations (tenant_id, created_at, id);

-- The schedulers' claims (claim_batches*): only RUNNING rows enter, so a
-- pass reads the running operations and nothing else, in lease order.
CREATE INDEX batch_operations_running ON batch_operations (lease_until, id) WHERE state = 1;
CREATE INDEX batch_operations_tenant_running
    ON batch_operations (tenant_id, lease_until, id) WHERE state = 1;
