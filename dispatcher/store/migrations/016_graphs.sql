-- Graphs: tasks that depend on other tasks (SubmitGraph; docs/graphs.md, store/graphs.py).
--
-- Ids, keys and names are case-sensitive ASCII, compared byte for byte, as in `tasks`
-- (003_case_sensitive_ids.sql): the same collation is also what lets a join on task_id use
-- the other table's primary key. Only the texts people write (a reason, a result) are utf8mb4.
--
-- The one idea: a dependency is released by a conditional change of the CHILD's rows, in one
-- transaction on the child's shard, driven by a "look at this parent" note that every end of
-- a parent writes into graph_outbox in the transaction of that end, on the parent's shard. A
-- note may be applied any number of times by any node: the edge's `outcome` says whether that
-- parent was counted already, and the child's status whether it was released. No step spans
-- two shards. A task of a graph is inserted `waiting` (lane 0: no owner acts on it) and
-- released to `enqueued` or `pending` like a new task.

-- One row per graph, on the shard of its home slot (crc32 of "namespace/graph_id").
CREATE TABLE IF NOT EXISTS graphs (
  namespace    VARCHAR(64)     NOT NULL,
  graph_id     VARCHAR(64)     NOT NULL,
  home_slot    SMALLINT UNSIGNED NOT NULL,
  digest       CHAR(64)        NOT NULL,   -- sha256 of the request: same id, other tasks -> refused
  node_count   INT UNSIGNED    NOT NULL,
  complete     TINYINT(1)      NOT NULL DEFAULT 0, -- every shard's rows committed: roots may run
  created_at   DATETIME(3)     NOT NULL,
  -- The home owner's watch (engine/graph_watch.py): when every task had ended, when it last
  -- looked, and since when nothing ran, nothing was due and tasks still waited.
  finished_at  DATETIME(3)     NULL,
  checked_at   DATETIME(3)     NULL,
  stuck_since  DATETIME(3)     NULL,
  PRIMARY KEY (namespace, graph_id),
  KEY idx_home_open (home_slot, finished_at, checked_at)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- The graph side of a task, on the task's shard: its key, join rule and the counts of its
-- parents' ends, so the join reads nothing of another shard.
CREATE TABLE IF NOT EXISTS graph_nodes (
  task_id      VARCHAR(64)     NOT NULL,
  namespace    VARCHAR(64)     NOT NULL,
  graph_id     VARCHAR(64)     NOT NULL,
  node_key     VARCHAR(128)    NOT NULL,
  seq          INT UNSIGNED    NOT NULL,   -- its place in the request, for GetGraph's order
  slot         SMALLINT UNSIGNED NOT NULL,
  join_rule    VARCHAR(14)     NOT NULL,
  join_k       INT UNSIGNED    NOT NULL DEFAULT 0,
  delay_ms     BIGINT UNSIGNED NOT NULL DEFAULT 0, -- the task's own delay, counted from its release
  n_parents    INT UNSIGNED    NOT NULL,
  n_succeeded  INT UNSIGNED    NOT NULL DEFAULT 0,
  n_failed     INT UNSIGNED    NOT NULL DEFAULT 0,
  n_skipped    INT UNSIGNED    NOT NULL DEFAULT 0,
  n_ignored    INT UNSIGNED    NOT NULL DEFAULT 0,
  n_cancelled  INT UNSIGNED    NOT NULL DEFAULT 0,
  has_dependents TINYINT(1)    NOT NULL DEFAULT 0, -- its end leaves a note (its children wait for it)
  released_at  DATETIME(3)     NULL,       -- when it left `waiting` (queued, skipped or cancelled)
  result_json  MEDIUMTEXT      CHARACTER SET utf8mb4 NULL,       -- its handler's return value (<= 64 KiB), kept as long as the graph
  reason       VARCHAR(512)    CHARACTER SET utf8mb4 NULL,       -- why it was skipped or cancelled by its parents
  operator_skipped TINYINT(1)  NOT NULL DEFAULT 0, -- skipped by an operator: counts as succeeded
  cancel_mode  VARCHAR(9)      NULL,       -- its graph was cancelled (graceful|immediate): never
                                           -- released, and a failed attempt is not retried
  PRIMARY KEY (task_id),
  KEY idx_graph (namespace, graph_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- One row per edge, on the CHILD's shard: everything the child's join reads is local to it.
CREATE TABLE IF NOT EXISTS graph_edges (
  child_id     VARCHAR(64)     NOT NULL,
  parent_id    VARCHAR(64)     NOT NULL,
  parent_key   VARCHAR(128)    NOT NULL,
  on_failure   VARCHAR(8)      NOT NULL,   -- skip | ignore
  outcome      VARCHAR(10)     NULL,       -- NULL until counted: graph_rules.EdgeOutcome
  resolved_at  DATETIME(3)     NULL,
  PRIMARY KEY (child_id, parent_id),
  KEY idx_parent (parent_id)               -- a parent's children, on each shard
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- "Look at this": written in the transaction of a parent's end (kind 'task', ref = its task
-- id, slot = its slot), of a change of an end by an operator (kind 'reopen': a skip, a replay)
-- or of a graph's completion (kind 'graph', ref = "namespace/graph_id", slot = its home slot). Deleted once applied; the owner of `slot` applies what is left
-- (a node that died between its commit and the apply).
CREATE TABLE IF NOT EXISTS graph_outbox (
  id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  slot         SMALLINT UNSIGNED NOT NULL,
  kind         VARCHAR(6)      NOT NULL,   -- task | graph | reopen
  ref          VARCHAR(140)    NOT NULL,
  created_at   DATETIME(3)     NOT NULL,
  PRIMARY KEY (id),
  KEY idx_slot_id (slot, id),
  KEY idx_ref (ref)                        -- an applied note is deleted by what it is about
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- A task of a graph is accepted and waits, as one row: accepted_by and intake = 'graph' are
-- its "accepted" and "waiting" events (2 task_events rows a task fewer than writing them),
-- as accepted_by and intake are a plain task's "accepted" and "queued" (004). Its release
-- writes its "queued" event. The view of 008 otherwise unchanged.
CREATE OR REPLACE VIEW task_history AS
  SELECT task_id, 'accepted' AS state, created_at AS at, accepted_by AS node, CAST(0 AS UNSIGNED) AS attempt,
         CAST(NULL AS CHAR) AS detail, CAST(0 AS UNSIGNED) AS seq, CAST(NULL AS CHAR) AS stack_trace
    FROM tasks WHERE accepted_by IS NOT NULL
  UNION ALL
  SELECT task_id, IF(intake = 'graph', 'waiting', 'queued'), created_at, accepted_by, CAST(0 AS UNSIGNED),
         IF(intake = 'graph', NULL, intake), CAST(1 AS UNSIGNED), NULL
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
