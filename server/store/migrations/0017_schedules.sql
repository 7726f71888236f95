-- 0017_schedules: schedules that start instances on a calendar, and one
-- row per fire time of each (engine/schedules.h).
--
-- A schedule row is written by its RPCs and by the schedulers of every
-- replica, each write checked against version: a claim sets the lease
-- (lease_owner, lease_until), a pass moves next_fire_at / due_at on and
-- lets the lease go. spec_json belongs to the engine; the store reads
-- state, due_at and the lease only.
CREATE TABLE schedules (
    id                   text NOT NULL,
    tenant_id            text NOT NULL,
    definition_key       text NOT NULL,
    def_version          integer NOT NULL DEFAULT 0,
    variables_json       text,
    aggregate_type       text,
    aggregate_id         text,
    spec_json            text NOT NULL,
    overlap              smallint NOT NULL,
    catchup_window_ms    bigint NOT NULL,
    pause_after_failures integer NOT NULL DEFAULT 0,
    state                smallint NOT NULL,
    pause_reason         text,
    note                 text,
    next_fire_at         bigint NOT NULL DEFAULT 0,
    due_at               bigint NOT NULL DEFAULT 0,
    last_instance_id     text,
    failures             integer NOT NULL DEFAULT 0,
    created_by           text,
    lease_owner          text,
    lease_until          bigint NOT NULL DEFAULT 0,
    created_at           bigint NOT NULL,
    updated_at           bigint NOT NULL,
    version              bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- ListSchedules (list_schedules): newest first, a backward scan.
CREATE INDEX schedules_created ON schedules (tenant_id, created_at, id);

-- The schedulers' claims (claim_schedules*): only ACTIVE rows with a
-- fire time left enter, in the order they fall due.
CREATE INDEX schedules_due ON schedules (due_at, id) WHERE state = 1 AND due_at > 0;
CREATE INDEX schedules_tenant_due ON schedules (tenant_id, due_at, id)
    WHERE state = 1 AND due_at > 0;

-- One row per fire time: the primary key is what makes a fire time start
-- at most one instance, whichever replica handles it and however often.
CREATE TABLE schedule_runs (
    schedule_id text NOT NULL,
    tenant_id   text NOT NULL,
    nominal_at  bigint NOT NULL,
    actual_at   bigint NOT NULL,
    outcome     smallint NOT NULL,
    manual      smallint NOT NULL DEFAULT 0,
    instance_id text,
    detail      text,
    PRIMARY KEY (tenant_id, schedule_id, nominal_at)
);
