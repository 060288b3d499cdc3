-- Policies per task type set through the API (PolicyService, docs/limits.md "Setting policies"):
-- each row replaces the policies file's entry for its type, in the file's JSON shape. On the
-- first shard only: a handful of rows every node reads every few seconds. A deleted entry stays
-- as a tombstone so that its revision never goes back (a stale `if_revision` never matches again).
CREATE TABLE IF NOT EXISTS type_policies (
  namespace    VARCHAR(64)     NOT NULL,
  task_type    VARCHAR(128)    NOT NULL,
  policy_json  TEXT            NOT NULL,
  revision     BIGINT UNSIGNED NOT NULL,
  deleted      TINYINT(1)      NOT NULL DEFAULT 0,
  updated_by   VARCHAR(128)    NOT NULL,
  updated_at   DATETIME(3)     NOT NULL,
  PRIMARY KEY (namespace, task_type)
) ENGINE=InnoDB;
