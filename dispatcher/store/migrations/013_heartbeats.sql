-- Heartbeats of long tasks (docs/limits.md, "Heartbeats"): the last one a running attempt
-- sent, and its details, which the task's next attempt receives to resume where it stopped.
-- Columns outside every index: a heartbeat moves no index entry.
ALTER TABLE tasks
  ADD COLUMN heartbeat_at      DATETIME(3) NULL,
  ADD COLUMN heartbeat_details MEDIUMTEXT  NULL;
