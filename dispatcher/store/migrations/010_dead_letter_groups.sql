-- The failure groups of the dead letters, kept as counts (dispatcher/store/dead_letters.py):
-- written in the transaction that dead-letters, replays or deletes, on the shard of the dead
-- letters they count, so the Failures view reads a few hundred rows, not every dead letter.
-- A view narrowed by time still reads dead_letters (idx_dead_lettered_at bounds it).
-- first_at / last_at: when the group's first and latest failure was dead-lettered.
CREATE TABLE IF NOT EXISTS dead_letter_groups (
  namespace      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  task_type      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  error_group    CHAR(16)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  error_class    VARCHAR(128) NOT NULL,
  error_shape    VARCHAR(255) NOT NULL,
  dead           BIGINT       NOT NULL,
  first_at       DATETIME(3)  NOT NULL,
  last_at        DATETIME(3)  NOT NULL,
  sample_task_id VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  sample_error   TEXT         NULL,
  PRIMARY KEY (namespace, task_type, error_group),
  KEY idx_groups_dead (dead)
) ENGINE=InnoDB;

INSERT INTO dead_letter_groups (namespace, task_type, error_group, error_class, error_shape, dead, first_at,
                                last_at, sample_task_id, sample_error)
  SELECT namespace, task_type, COALESCE(error_group, ''), MIN(COALESCE(error_class, '')),
         MIN(COALESCE(error_shape, '')), COUNT(*), MIN(dead_lettered_at), MAX(dead_lettered_at), MAX(task_id),
         MAX(last_error)
    FROM dead_letters GROUP BY namespace, task_type, COALESCE(error_group, '');
