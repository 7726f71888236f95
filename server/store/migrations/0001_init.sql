-- 0001_init: the first data model: definitions, instances and tasks, the
-- rows of a running net (tokens, work items, jobs, timers, subscriptions),
-- signals, events and request records (docs/scaling.md lists the tables).
--
-- Conventions: every table starts its primary key with tenant_id, and every
-- per-instance table carries root_id (the aggregate and future sharding
-- key). Times are bigint microseconds since the Unix epoch (0 = unset);
-- enums are smallint (values fixed in store.h); JSON is text. Ids sort
-- byte-wise (COLLATE "C") so keyset pagination matches the memory store.

CREATE TABLE definitions (
    tenant_id     text NOT NULL,
    key           text COLLATE "C" NOT NULL,
    version       int NOT NULL,
    kind          smallint NOT NULL,
    name          text,
    content       bytea,
    content_hash  text,
    valid_from    bigint NOT NULL DEFAULT 0,
    valid_until   bigint NOT NULL DEFAULT 0,
    created_at    bigint NOT NULL,
    created_by    text,
    PRIMARY KEY (tenant_id, key, version)
);

CREATE TABLE instances (
    tenant_id            text NOT NULL,
    id                   text COLLATE "C" NOT NULL,
    root_id              text COLLATE "C" NOT NULL,
    parent_id            text COLLATE "C",
    definition_key       text NOT NULL,
    definition_version   int NOT NULL,
    status               smallint NOT NULL,
    variables_json       text,
    aggregate_type       text,
    aggregate_id         text,
    started_by           text,
    title                text,
    last_error           text,
    join_mode            smallint NOT NULL DEFAULT 0,
    join_quorum          int NOT NULL DEFAULT 0,
    on_all_completed     bytea,
    join_fired           boolean NOT NULL DEFAULT false,
    created_at           bigint NOT NULL,
    updated_at           bigint NOT NULL,
    ended_at             bigint NOT NULL DEFAULT 0,
    version              bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX instances_root ON instances (tenant_id, root_id);
CREATE INDEX instances_parent ON instances (tenant_id, parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX instances_started_by ON instances (tenant_id, started_by, created_at, id);
CREATE INDEX instances_aggregate ON instances (tenant_id, aggregate_type, aggregate_id)
    WHERE aggregate_type IS NOT NULL;

CREATE TABLE tasks (
    tenant_id       text NOT NULL,
    id              text COLLATE "C" NOT NULL,
    root_id         text COLLATE "C" NOT NULL,
    instance_id     text COLLATE "C" NOT NULL,
    definition_key  text,
    transition_id   text,
    work_item_id    text,
    title           text,
    assignee_kind   smallint NOT NULL,
    assignee_id     text,
    assigned_by     text,
    status          smallint NOT NULL,
    claimed_by      text,
    completed_by    text,
    created_at      bigint NOT NULL,
    due_at          bigint NOT NULL DEFAULT 0,
    ended_at        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tasks_inbox ON tasks (tenant_id, assignee_kind, assignee_id, status);
CREATE INDEX tasks_claimed ON tasks (tenant_id, claimed_by) WHERE claimed_by IS NOT NULL;
CREATE INDEX tasks_root ON tasks (tenant_id, root_id);

CREATE TABLE tokens (
    tenant_id    text NOT NULL,
    id           text COLLATE "C" NOT NULL,
    root_id      text COLLATE "C" NOT NULL,
    instance_id  text COLLATE "C" NOT NULL,
    place_id     text NOT NULL,
    created_seq  bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tokens_root ON tokens (tenant_id, root_id);

CREATE TABLE work_items (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    root_id        text COLLATE "C" NOT NULL,
    instance_id    text COLLATE "C" NOT NULL,
    transition_id  text NOT NULL,
    trigger        smallint NOT NULL,
    token_ids      text,
    state          smallint NOT NULL,
    enabled_at     bigint NOT NULL,
    finished_at    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX work_items_root ON work_items (tenant_id, root_id);

CREATE TABLE jobs (
    tenant_id           text NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    key                 text,
    root_id             text COLLATE "C" NOT NULL,
    instance_id         text COLLATE "C" NOT NULL,
    work_item_id        text,
    transition_id       text,
    job_type            text NOT NULL,
    state               smallint NOT NULL,
    worker              text,
    attempt             int NOT NULL,
    max_attempts        int NOT NULL,
    activatable_at      bigint NOT NULL,
    lease_expires_at    bigint NOT NULL DEFAULT 0,
    initial_backoff_ms  bigint NOT NULL DEFAULT 0,
    backoff_multiplier  double precision NOT NULL DEFAULT 0,
    max_backoff_ms      bigint NOT NULL DEFAULT 0,
    variables_json      text,
    idempotency_key     text,
    compensation        boolean NOT NULL DEFAULT false,
    last_error          text,
    created_at          bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX jobs_activation ON jobs (tenant_id, job_type, state, activatable_at);
CREATE INDEX jobs_key ON jobs (tenant_id, key) WHERE key IS NOT NULL;
CREATE INDEX jobs_root ON jobs (tenant_id, root_id);

CREATE TABLE timers (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    root_id        text COLLATE "C" NOT NULL,
    instance_id    text COLLATE "C" NOT NULL,
    work_item_id   text,
    transition_id  text,
    due_at         bigint NOT NULL,
    created_at     bigint NOT NULL,
    claimed_until  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX timers_due ON timers (due_at);
CREATE INDEX timers_root ON timers (tenant_id, root_id);

CREATE TABLE subscriptions (
    tenant_id       text NOT NULL,
    id              text COLLATE "C" NOT NULL,
    root_id         text COLLATE "C" NOT NULL,
    instance_id     text COLLATE "C" NOT NULL,
    work_item_id    text,
    transition_id   text,
    signal_name     text NOT NULL,
    aggregate_type  text,
    aggregate_id    text,
    created_at      bigint NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX subscriptions_correlation
    ON subscriptions (tenant_id, signal_name, aggregate_type, aggregate_id);
CREATE INDEX subscriptions_instance ON subscriptions (tenant_id, instance_id);
CREATE INDEX subscriptions_root ON subscriptions (tenant_id, root_id);

-- The delivery log (workflow_signals): every signal, matched or not.
CREATE TABLE signals (
    tenant_id             text NOT NULL,
    id                    text COLLATE "C" NOT NULL,
    signal_id             text,
    name                  text NOT NULL,
    instance_id           text,
    aggregate_type        text,
    aggregate_id          text,
    payload_json          text,
    outcome               smallint NOT NULL,
    buffered              boolean NOT NULL DEFAULT false,
    received_at           bigint NOT NULL,
    expires_at            bigint NOT NULL DEFAULT 0,
    consumed_at           bigint NOT NULL DEFAULT 0,
    consumed_by_instance  text,
    transition_id         text,
    discarded             boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX signals_dedupe ON signals (tenant_id, signal_id)
    WHERE signal_id IS NOT NULL AND signal_id <> '';
CREATE INDEX signals_correlation ON signals (tenant_id, name, aggregate_type, aggregate_id);
CREATE INDEX signals_instance ON signals (tenant_id, instance_id) WHERE instance_id IS NOT NULL;
CREATE INDEX signals_consumer ON signals (tenant_id, consumed_by_instance)
    WHERE consumed_by_instance IS NOT NULL;

-- Domain events. Writers only ever INSERT them, with sequence NULL; the
-- sequencer (wf_sequence_events below) is the only statement that sets
-- sequence, in commit-visibility order. id orders the events of one
-- transaction and of transactions serialised by a root lock; it must keep
-- the identity's default CACHE 1 (a per-session cache would let a later
-- insert take a smaller id). Readers only look at sequenced rows.
CREATE TABLE events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sequence     bigint UNIQUE,
    tenant_id    text NOT NULL,
    root_id      text COLLATE "C",
    instance_id  text COLLATE "C",
    type         text NOT NULL,
    actor        text,
    data_json    text,
    time         bigint NOT NULL
);
CREATE INDEX events_root ON events (tenant_id, root_id, sequence);
-- What the sequencer has left to do: empty (and so free to probe) when
-- every committed event is numbered.
CREATE INDEX events_unsequenced ON events (id) WHERE sequence IS NULL;

-- The last sequence handed out. Updated only by the sequencer, in the same
-- transaction as the events it numbers, so an aborted batch gives its
-- numbers back: sequences are dense (1, 2, 3, ...), as in the memory store.
CREATE TABLE event_sequencer (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    last  bigint NOT NULL
);
INSERT INTO event_sequencer (one, last) VALUES (true, 0);

-- The sequencer: numbers up to batch committed, unsequenced events in id
-- order and returns how many (-1: another session held the sequencer lock
-- for longer than wait_ms; nothing was done). Run it as a statement of its
-- own (autocommit) so that its numbers become visible at once. It relies
-- on READ COMMITTED (the default): each statement below takes a fresh
-- snapshot, so the numbering statement, which starts after the lock is
-- held, sees every batch committed before it (the lock is released only
-- after the holder's commit is visible). Under REPEATABLE READ it would
-- fail (serialization failure, or the UNIQUE on sequence), never number
-- twice. The numbers are
-- base + row_number() over the id order, not nextval() in the UPDATE,
-- whose evaluation order the UPDATE would not guarantee.
--
-- Why no reader ever passes a gap: batches are serialised by the advisory
-- lock (one sequencer at a time across every replica), a batch numbers
-- only rows committed before it started, starting above every number
-- committed before it, and its numbers become visible all at once at its
-- commit, which precedes the next batch. So the sequenced rows any
-- snapshot sees are always 1..N with nothing missing, and an event whose
-- transaction commits late is numbered after everything already visible.
-- Per-root order: the transactions of one root are serialised by the root
-- row lock, so a later one inserts (larger ids) after the earlier one
-- committed, and lands in the same batch after it or in a later batch.
CREATE FUNCTION wf_sequence_events(batch int, wait_ms int) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    base  bigint;
    top   bigint;
    n     bigint;
BEGIN
    -- The cheap probe (ordered like the index, so an index scan).
    PERFORM 1 FROM events WHERE sequence IS NULL ORDER BY id LIMIT 1;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    -- 7318240518: any constant, the same in every replica (the migration
    -- lock is 7318240517). Wait a little for a running batch rather than
    -- return before it: a caller must find every event committed before
    -- its call numbered.
    IF NOT pg_try_advisory_xact_lock(7318240518) THEN
        IF wait_ms <= 0 THEN
            RETURN -1;
        END IF;
        BEGIN
            PERFORM set_config('lock_timeout', wait_ms::text, true);
            PERFORM pg_advisory_xact_lock(7318240518);
            PERFORM set_config('lock_timeout', '0', true);
        EXCEPTION WHEN lock_not_available THEN
            RETURN -1;
        END;
    END IF;
    SELECT last INTO base FROM event_sequencer;
    WITH todo AS (
        SELECT id, row_number() OVER (ORDER BY id) AS k
        FROM events WHERE sequence IS NULL ORDER BY id LIMIT batch
    ), done AS (
        UPDATE events e SET sequence = base + todo.k FROM todo WHERE e.id = todo.id
        RETURNING e.sequence
    )
    SELECT count(*), max(sequence) INTO n, top FROM done;
    IF n > 0 THEN
        UPDATE event_sequencer SET last = top;
    END IF;
    RETURN n;
END
$$;

-- Cross-replica wake-ups (LISTEN/NOTIFY). Notifications are sent at commit
-- only, once per distinct (channel, payload) per transaction.
-- wf_events (payload ''): the transaction wrote events.
CREATE FUNCTION wf_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wf_events', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION wf_notify_events();

-- wf_jobs (payload: the job type): a job became activatable, i.e. was
-- inserted ACTIVATABLE (1), or updated to be ACTIVATABLE with a state,
-- activatable_at or job type it did not have before.
CREATE FUNCTION wf_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wf_jobs', NEW.job_type);
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
    FOR EACH ROW WHEN (NEW.state = 1) EXECUTE FUNCTION wf_notify_jobs();
CREATE TRIGGER jobs_notify_update AFTER UPDATE ON jobs
    FOR EACH ROW WHEN (NEW.state = 1 AND (OLD.state, OLD.activatable_at, OLD.job_type)
                       IS DISTINCT FROM (NEW.state, NEW.activatable_at, NEW.job_type))
    EXECUTE FUNCTION wf_notify_jobs();

-- AIP-155 request records, written in the transaction of their effect.
CREATE TABLE idempotency (
    tenant_id     text NOT NULL,
    method        text NOT NULL,
    request_id    text NOT NULL,
    request_hash  text,
    response      bytea,
    created_at    bigint NOT NULL,
    PRIMARY KEY (tenant_id, method, request_id)
);
