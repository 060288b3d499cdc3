-- Which task types live in which slot, for the admin view of the ring. Written
-- once per new (slot, namespace, task_type) at submit, with INSERT IGNORE.
CREATE TABLE slot_task_types (
  slot           SMALLINT UNSIGNED NOT NULL,
  namespace      VARCHAR(64)       NOT NULL,
  task_type      VARCHAR(128)      NOT NULL,
  first_seen_at  DATETIME(3)       NOT NULL,
  PRIMARY KEY (slot, namespace, task_type)
) ENGINE=InnoDB;
