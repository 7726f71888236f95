-- 0023_schedule_backfill: runs recorded by BackfillSchedule
-- (engine/schedules.h). A column with a constant default only (metadata):
-- an older release neither reads nor writes it.
--
-- schedule_runs.backfill is 1 for a run a backfill recorded, 0 for the
-- calendar's and TriggerSchedule's. A backfill inserts its runs under the
-- same unique key (tenant_id, schedule_id, nominal_at) as the calendar,
-- so a fire time is started once whichever of them reaches it first.
ALTER TABLE schedule_runs ADD COLUMN backfill smallint NOT NULL DEFAULT 0;
