-- Operations (dispatcher/ops/): dead letters a person can group, read and replay, an audit
-- trail of every manual action, bulk replays that survive a restart, and task search.
--
-- Dead letters are grouped by the failure's fingerprint (dispatcher/failures.py): the
-- exception class and the message's shape with its numbers, ids and quoted values taken
-- out, so 5,000 dead letters of one outage are one group.
ALTER TABLE dead_letters
  ADD COLUMN error_class VARCHAR(128) NULL,
  ADD COLUMN error_shape VARCHAR(255) NULL,
  ADD COLUMN error_group CHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL,
  ADD KEY idx_dead_lettered_at (dead_lettered_at, task_id),
  ADD KEY idx_error_group (error_group, dead_lettered_at);

-- Every attempt's stack trace beside its error, so a dead letter shows each attempt's,
-- not only the last one's. Written only off the happy path (failures).
ALTER TABLE task_events
  ADD COLUMN stack_trace MEDIUMTEXT NULL;

CREATE OR REPLACE VIEW task_history AS
  SELECT task_id, 'accepted' AS state, created_at AS at, accepted_by AS node, CAST(0 AS UNSIGNED) AS attempt,
         CAST(NULL AS CHAR) AS detail, CAST(0 AS UNSIGNED) AS seq, CAST(NULL AS CHAR) AS stack_trace
    FROM tasks WHERE accepted_by IS NOT NULL
  UNION ALL
  SELECT task_id, 'queued', created_at, accepted_by, CAST(0 AS UNSIGNED), intake, CAST(1 AS UNSIGNED), NULL
    FROM tasks WHERE accepted_by IS NOT NULL
  UNION ALL
  SELECT task_id, state, at, node, CAST(attempt AS UNSIGNED), detail, CAST(1 + id AS UNSIGNED), stack_trace
    FROM task_events
  UNION ALL
  SELECT task_id, 'dispatched', dispatched_at, dispatched_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551613 AS UNSIGNED), NULL
    FROM tasks WHERE dispatched_at IS NOT NULL
  UNION ALL
  SELECT task_id, 'running', started_at, finished_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551614 AS UNSIGNED), NULL
    FROM tasks WHERE started_at IS NOT NULL
  UNION ALL
  SELECT task_id, 'succeeded', updated_at, finished_by, CAST(attempts AS UNSIGNED), NULL,
         CAST(18446744073709551615 AS UNSIGNED), NULL
    FROM tasks WHERE finished_by IS NOT NULL;

-- Task search (dispatcher/ops/search.py): by trace id, and by namespace + task type +
-- status over a time range of acceptance, each an index range read with keyset paging.
ALTER TABLE tasks
  ADD COLUMN trace_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  ADD KEY idx_trace (trace_id),
  ADD KEY idx_ns_type_status_created (namespace, task_type, status, created_at);

-- The audit trail: who did what, when, from where, to what, the value before and after.
-- Appended in the transaction of the action itself, on the shard of the task it is about
-- (actions on no task, such as a bulk replay's start, on shard 0). No API changes or
-- deletes a record, and the triggers refuse it to SQL as well.
CREATE TABLE IF NOT EXISTS audit_log (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  at          DATETIME(3)     NOT NULL,
  actor       VARCHAR(128)    NOT NULL,
  address     VARCHAR(64)     NOT NULL,
  action      VARCHAR(32)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  target      VARCHAR(200)    NOT NULL,
  namespace   VARCHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  reason      TEXT            NULL,
  before_json MEDIUMTEXT      NULL,
  after_json  MEDIUMTEXT      NULL,
  PRIMARY KEY (id),
  KEY idx_audit_at (at),
  KEY idx_audit_target (target, id)
) ENGINE=InnoDB;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW
  SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit records cannot be changed';

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW
  SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit records cannot be deleted';

-- Bulk replays of a filtered set of dead letters at a chosen rate (dispatcher/ops/bulk_replay.py),
-- on shard 0. A node runs a job while it holds its lease; the cursor (dead_lettered_at,
-- task_id) says how far it got, so a job resumes after any node's restart where it stood.
CREATE TABLE IF NOT EXISTS bulk_replays (
  id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  filter_json    TEXT            NOT NULL,
  rate_per_s     INT UNSIGNED    NOT NULL,
  retries        INT UNSIGNED    NOT NULL,
  state          VARCHAR(12)     NOT NULL,
  total          INT UNSIGNED    NOT NULL,
  replayed       INT UNSIGNED    NOT NULL DEFAULT 0,
  skipped        INT UNSIGNED    NOT NULL DEFAULT 0,
  cursor_at      DATETIME(3)     NULL,
  cursor_task_id VARCHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NULL,
  reason         TEXT            NULL,
  created_by     VARCHAR(128)    NOT NULL,
  created_at     DATETIME(3)     NOT NULL,
  updated_at     DATETIME(3)     NOT NULL,
  lease_owner    VARCHAR(128)    NOT NULL DEFAULT '',
  lease_until    DATETIME(3)     NULL,
  PRIMARY KEY (id),
  KEY idx_bulk_state (state)
) ENGINE=InnoDB;
