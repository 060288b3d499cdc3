-- Slot leases: the store's word on who may dispatch a slot right now, so that owners keep
-- working while ZooKeeper is unreachable (cluster/coordinator.py, "Leases").
--
-- ZooKeeper says who *should* own a slot; this row says who *does*, until when. The owner
-- renews every slot it holds in one statement a second; a claim by another node is refused
-- while the lease is live and marks the row `wanted_by`, which tells the owner to hand the
-- slot over. Times are the server's (NOW(3)), so a node's clock plays no part.
--
-- A table of its own, not columns of slot_owners: every fenced write holds a shared lock
-- on its slot's slot_owners row, and a renewal there would queue behind (and stall) them.
CREATE TABLE slot_leases (
  slot        SMALLINT UNSIGNED NOT NULL,
  owner       VARCHAR(128)      NOT NULL DEFAULT '',
  epoch       BIGINT UNSIGNED   NOT NULL DEFAULT 0,
  lease_until DATETIME(3)       NULL,
  wanted_by   VARCHAR(128)      NOT NULL DEFAULT '',
  PRIMARY KEY (slot)
) ENGINE=InnoDB;
