-- Which shard of the task store this database is, and the slot -> shard map it belongs to
-- (dispatcher/store/sharded.py). One row, written by the first node that starts on it;
-- a node started with another map is refused, because it would look for a slot's rows
-- on a shard that does not hold them.
CREATE TABLE IF NOT EXISTS store_shard (
  id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
  shard_index INT UNSIGNED NOT NULL,
  shard_count INT UNSIGNED NOT NULL,
  slot_map VARCHAR(4096) NOT NULL,
  recorded_at DATETIME(3) NOT NULL,
  recorded_by VARCHAR(255) NOT NULL
) ENGINE=InnoDB;
