-- Task ids, namespaces and task types are case-sensitive ASCII ([A-Za-z0-9._:-]):
-- compare them byte for byte. Under utf8mb4_general_ci, `Order-1` and `order-1`
-- were one key, so the second task was taken for a duplicate of the first.
ALTER TABLE tasks
  MODIFY task_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  MODIFY namespace VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  MODIFY task_type VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE task_events
  MODIFY task_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE dead_letters
  MODIFY task_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  MODIFY namespace VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  MODIFY task_type VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
ALTER TABLE slot_task_types
  MODIFY namespace VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  MODIFY task_type VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
