-- Cron rules (dispatcher/cron/): the registry of seed 000 (rule, task type and payload,
-- owner team, description) and where each rule's planning stands. A rule lives on the
-- shard of its slot (the slot of its namespace and task type), so its owner plans it and
-- writes its fire tasks in one fenced transaction on one server.
-- spec:          the rule as validated (a serialized taskring.v1.CronRule)
-- rule_uid:      in every fire's task id (cron-<uid>-<fire ms>); new at create, update and resume
-- planned_until: every fire time up to here has its task, or was decided against
-- last_task_id:  the latest fire's task (the overlap policies look at its state)
-- version:       bumped by every change through the API; a plan made on an older
--                version writes nothing
CREATE TABLE IF NOT EXISTS cron_rules (
  namespace     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  rule_uid      CHAR(12)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  slot          INT UNSIGNED NOT NULL,
  task_type     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  spec          BLOB NOT NULL,
  paused        TINYINT(1) NOT NULL DEFAULT 0,
  planned_until DATETIME(3) NOT NULL,
  last_task_id  VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  skipped       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  version       INT UNSIGNED NOT NULL,
  created_at    DATETIME(3) NOT NULL,
  updated_at    DATETIME(3) NOT NULL,
  PRIMARY KEY (namespace, name),
  UNIQUE KEY cron_rules_uid (rule_uid),
  KEY cron_rules_slot (slot, paused, planned_until)
) ENGINE=InnoDB;
