-- 0018_schedule_overlap: the overlap policies BUFFER_ONE and CANCEL_OTHER
-- (engine/schedules.h). Columns with constant defaults only: an older
-- release neither reads nor writes them.
--
-- schedules.buffered_at is the nominal time of the one fire a BUFFER_ONE
-- schedule keeps waiting (0: none); its run row is BUFFERED until the
-- instance before it ends. That run becomes STARTED (or FAILED) in the
-- unit of work that starts its instance, by an update that requires it
-- still BUFFERED, so it starts once whichever replica sees the end.
ALTER TABLE schedules ADD COLUMN buffered_at bigint NOT NULL DEFAULT 0;

-- schedule_runs.buffered_at: when a fire that waited was buffered (0: it
-- never waited). cancelled_instance_id: the instance a CANCEL_OTHER fire
-- cancelled before it started its own.
ALTER TABLE schedule_runs ADD COLUMN buffered_at bigint NOT NULL DEFAULT 0;
ALTER TABLE schedule_runs ADD COLUMN cancelled_instance_id text;
