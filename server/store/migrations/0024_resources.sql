-- 0024_resources: the resources of each tenant, limits shared by its
-- definitions (engine/resources.h).
--
-- A row is written by DeclareResource and UpdateResource against its
-- version and removed by DeleteResource; strategy is a
-- wf_resource_strategy (1 QUEUE, 2 CANCEL_NEWEST). A new table: nothing
-- of the release before reads or writes it.
CREATE TABLE resources (
    name           text NOT NULL,
    tenant_id      text NOT NULL,
    capacity       integer NOT NULL,
    per_key        smallint NOT NULL,
    rate_limit     integer NOT NULL,
    rate_period_ms bigint NOT NULL,
    strategy       smallint NOT NULL,
    created_by     text,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    version        bigint NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

-- ListResources (list_resources): newest first, a backward scan.
CREATE INDEX resources_created ON resources (tenant_id, created_at, name);
