-- Why a due task waits (docs/limits.md, "What a waiting task shows"): the owner notes the limit a
-- task is held at (a concurrency limit, a retry cap, a rate) once per attempt, so that GetTask and
-- the console can say it. Columns outside every index; the note names the attempt it is about, so
-- a later attempt is never shown an earlier one's reason and the hot path never clears it.
ALTER TABLE tasks
  ADD COLUMN wait_attempt INT UNSIGNED NULL,
  ADD COLUMN wait_reason  VARCHAR(200) NULL;
