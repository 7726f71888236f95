-- 0005_event_sweep: event retention remembers the roots it has emptied.
--
-- The sweep deletes the events of trees whose root ended for good. It used
-- to find them by joining every ended root (older than the cutoff) to its
-- events in each batch, so each pass grew with the number of roots ever
-- ended, long after their events were gone. A root is now marked swept in
-- the batch that deletes its last events, and the index covers unswept
-- roots only: a pass costs what there is to delete.

ALTER TABLE instances ADD COLUMN events_swept boolean NOT NULL DEFAULT false;

-- Roots already emptied by earlier sweeps (every root has events until
-- then: INSTANCE_STARTED at least).
UPDATE instances i SET events_swept = true
    WHERE i.parent_id IS NULL AND i.ended_at > 0 AND i.status IN (2, 3, 6)
      AND NOT EXISTS (SELECT 1 FROM events e
                      WHERE e.tenant_id = i.tenant_id AND e.root_id = i.id);

DROP INDEX instances_ended;
CREATE INDEX instances_unswept ON instances (ended_at)
    WHERE parent_id IS NULL AND ended_at > 0 AND NOT events_swept;
