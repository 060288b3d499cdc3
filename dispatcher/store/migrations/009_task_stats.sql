-- Per-minute counts per task type and node, for the console's overview (dispatcher/task_stats.py):
-- each node keeps its counts of the current minute in memory and writes its own rows every
-- few seconds (REPLACE, cumulative for the minute), so the console reads a few hundred small
-- rows instead of scanning the task table. On shard 0.
-- duration_buckets: counts of execution durations per bucket (task_stats.DURATION_BOUNDS_MS),
-- comma-separated, so percentiles merge across nodes and minutes.
CREATE TABLE IF NOT EXISTS task_stats (
  minute           DATETIME        NOT NULL,
  namespace        VARCHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  task_type        VARCHAR(128)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  node             VARCHAR(128)    NOT NULL,
  submitted        BIGINT UNSIGNED NOT NULL DEFAULT 0,
  succeeded        BIGINT UNSIGNED NOT NULL DEFAULT 0,
  failed           BIGINT UNSIGNED NOT NULL DEFAULT 0,
  dead_lettered    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  duration_buckets VARCHAR(255)    NOT NULL DEFAULT '',
  PRIMARY KEY (minute, namespace, task_type, node)
) ENGINE=InnoDB;
