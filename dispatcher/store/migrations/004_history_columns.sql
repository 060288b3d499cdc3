-- The happy path's history lives in the task row, so a task that succeeds at
-- its first attempt costs one insert and two updates of its row and no event
-- rows (it cost one insert, two updates and five event rows before).
--
-- accepted_by, intake     who accepted it and its first path: the "accepted" and
--                         "queued" events, both at created_at, attempt 0
-- dispatched_at/_by       the "dispatched" event of the current attempt (attempts)
-- started_at, finished_by the "running" and "succeeded" events of a success; the
--                         succeeded event's time is updated_at
--
-- Everything off the happy path (retries, failures, cancels, give-backs,
-- recoveries) is still written to task_events. When an attempt ends any other
-- way than in success, its dispatched event moves from the columns into
-- task_events first, so the columns only ever hold the latest attempt and the
-- history keeps its order: the column events come first (accepted, queued),
-- then task_events by id, then the current attempt's column events.
-- Rows written before this migration have accepted_by NULL and their whole
-- history in task_events.
ALTER TABLE tasks
  ADD COLUMN accepted_by   VARCHAR(128) NULL,
  ADD COLUMN intake        VARCHAR(8)   NULL,
  ADD COLUMN dispatched_at DATETIME(3)  NULL,
  ADD COLUMN dispatched_by VARCHAR(128) NULL,
  ADD COLUMN started_at    DATETIME(3)  NULL,
  ADD COLUMN finished_by   VARCHAR(128) NULL;

-- The whole history of every task, for SQL readers (runbooks, tests): the
-- column events and task_events in one ordered stream. `seq` orders one task's
-- events. Read it by task_id (MariaDB pushes the condition into each branch).
-- Every attempt and seq is cast to one unsigned type: a UNION of a plain literal
-- and an unsigned column would be DECIMAL.
CREATE OR REPLACE VIEW task_history AS
  SELECT task_id, 'accepted' AS state, created_at AS at, accepted_by AS node, CAST(0 AS UNSIGNED) AS attempt,
         CAST(NULL AS CHAR) AS detail, CAST(0 AS UNSIGNED) AS seq
    FROM tasks WHERE accepted_by IS NOT NULL
  UNION ALL
  SELECT task_id, 'queued', created_at, accepted_by, CAST(0 AS UNSIGNED), intake, CAST(1 AS UNSIGNED)
    FROM tasks WHERE accepted_by IS NOT NULL
  UNION ALL
  SELECT task_id, state, at, node, CAST(attempt AS UNSIGNED), detail, CAST(1 + id AS UNSIGNED)
    FROM task_events
  UNION ALL
  SELECT task_id, 'dispatched', dispatched_at, dispatched_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551613 AS UNSIGNED)
    FROM tasks WHERE dispatched_at IS NOT NULL
  UNION ALL
  SELECT task_id, 'running', started_at, finished_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551614 AS UNSIGNED)
    FROM tasks WHERE started_at IS NOT NULL
  UNION ALL
  SELECT task_id, 'succeeded', updated_at, finished_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551615 AS UNSIGNED)
    FROM tasks WHERE finished_by IS NOT NULL;
