-- The task store. One row per task is the source of truth for its state,
-- whichever path (Kafka or MySQL) carries its next attempt.
--
-- status is finer than the API state:
--   pending      waits in MySQL for its slot's poller            (API: queued / retry_wait)
--   enqueued     travels through Kafka to its slot's owner        (API: queued / retry_wait)
--   claimed      held in an owner's ETA heap                      (API: queued)
--   dispatched   handed to an executor, outcome not yet recorded  (API: dispatched / running)
--   succeeded | dead_lettered | cancelled                         (terminal)
CREATE TABLE tasks (
  task_id          VARCHAR(64)       NOT NULL,
  slot             SMALLINT UNSIGNED NOT NULL,
  namespace        VARCHAR(64)       NOT NULL,
  task_type        VARCHAR(128)      NOT NULL,
  priority         TINYINT UNSIGNED  NOT NULL,
  status           VARCHAR(16)       NOT NULL,
  trigger_at       DATETIME(3)       NOT NULL,
  attempts         INT UNSIGNED      NOT NULL DEFAULT 0,
  epoch            BIGINT UNSIGNED   NOT NULL DEFAULT 0,
  envelope         MEDIUMBLOB        NOT NULL,
  last_error       TEXT              NULL,
  last_stack_trace MEDIUMTEXT        NULL,
  created_at       DATETIME(3)       NOT NULL,
  updated_at       DATETIME(3)       NOT NULL,
  PRIMARY KEY (task_id),
  -- Each owned slot is polled by equality on slot and status, ordered by
  -- trigger_at with ties broken by the primary key (implicit in InnoDB).
  KEY idx_slot_status_trigger (slot, status, trigger_at)
) ENGINE=InnoDB;

-- Every state change, written in batches.
CREATE TABLE task_events (
  id         BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT,
  task_id    VARCHAR(64)      NOT NULL,
  state      VARCHAR(16)      NOT NULL,
  at         DATETIME(3)      NOT NULL,
  node       VARCHAR(128)     NOT NULL,
  attempt    INT UNSIGNED     NOT NULL,
  detail     TEXT             NULL,
  PRIMARY KEY (id),
  KEY idx_task (task_id, id)
) ENGINE=InnoDB;

-- What kept failing, with everything needed to inspect and replay it.
CREATE TABLE dead_letters (
  task_id          VARCHAR(64)       NOT NULL,
  slot             SMALLINT UNSIGNED NOT NULL,
  namespace        VARCHAR(64)       NOT NULL,
  task_type        VARCHAR(128)      NOT NULL,
  envelope         MEDIUMBLOB        NOT NULL,
  attempts         INT UNSIGNED      NOT NULL,
  last_error       TEXT              NULL,
  last_stack_trace MEDIUMTEXT        NULL,
  first_attempt_at DATETIME(3)       NULL,
  dead_lettered_at DATETIME(3)       NOT NULL,
  PRIMARY KEY (task_id),
  KEY idx_ns_type (namespace, task_type, dead_lettered_at)
) ENGINE=InnoDB;

-- The fencing record: who owns a slot and under which epoch. A claim bumps the
-- epoch; every write for the slot checks it under a shared lock, so a node that
-- lost the slot writes nothing.
CREATE TABLE slot_owners (
  slot        SMALLINT UNSIGNED NOT NULL,
  epoch       BIGINT UNSIGNED   NOT NULL DEFAULT 0,
  owner       VARCHAR(128)      NOT NULL DEFAULT '',
  claimed_at  DATETIME(3)       NULL,
  PRIMARY KEY (slot)
) ENGINE=InnoDB;

-- Kafka progress per partition, stored under the slot's epoch (Kafka's own
-- group commits do not fence a manually assigned consumer).
CREATE TABLE kafka_offsets (
  topic        VARCHAR(128)     NOT NULL,
  kpartition   INT UNSIGNED     NOT NULL,
  next_offset  BIGINT           NOT NULL,
  epoch        BIGINT UNSIGNED  NOT NULL,
  updated_at   DATETIME(3)      NOT NULL,
  PRIMARY KEY (topic, kpartition)
) ENGINE=InnoDB;
