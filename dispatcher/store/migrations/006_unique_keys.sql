-- Unique keys (dispatcher/unique.py): who holds each (namespace, unique_key).
-- A row is written with the task that takes the key, in the same transaction, and
-- taken over by the next task once its holder is terminal (held_until NULL) or
-- held_until has passed; a holder's release costs the hot path nothing.
-- slot: the holder's, so a sharded store knows where to read its status.
CREATE TABLE IF NOT EXISTS unique_keys (
  namespace  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  unique_key VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  task_id    VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  slot       INT UNSIGNED NOT NULL,
  held_until DATETIME(3) NULL,
  taken_at   DATETIME(3) NOT NULL,
  PRIMARY KEY (namespace, unique_key)
) ENGINE=InnoDB;
