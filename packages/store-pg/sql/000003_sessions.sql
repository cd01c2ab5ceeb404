-- Cairn store schema, version 3: liveness by session, leases renewed in batches, claims without a herd,
-- and writes that stay heap-only (HOT).
--
-- Each store instance keeps one session open and holds a session advisory lock on a key of its own for as
-- long as the session lives; its row here says which key. A holder is alive while its session's lock is held,
-- which any role can test (pg_try_advisory_lock, then unlock), unlike pg_stat_activity's backend_start.
CREATE TABLE {{schema}}.sessions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lock_key bigint NOT NULL,
  -- The store instance that opened it: an instance whose session was lost moves its runs to its next one.
  instance uuid NOT NULL,
  opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- When a claimer first found its lock free: its runs may then be taken (after a grace, by other instances).
  dead_at timestamptz
);

ALTER TABLE {{schema}}.runs
  ADD COLUMN holder_session bigint,
  -- The lease length of the current claim, so a batched renewal extends each lease by its own.
  ADD COLUMN lease_ms integer,
  DROP COLUMN holder_pid,
  DROP COLUMN holder_backend_start;

-- Writes change none of the indexed columns, so they stay heap-only: room on each page for that.
ALTER TABLE {{schema}}.runs SET (fillfactor = 70);

-- updated_at changes with every write: indexing it made every write a non-HOT update.
DROP INDEX {{schema}}.runs_status_updated_at_idx;
CREATE INDEX runs_status_created_seq_idx ON {{schema}}.runs (status, created_seq);

-- Claimable root runs nobody holds, oldest first: what a claim reads, in O(runs it takes).
CREATE INDEX runs_free_idx ON {{schema}}.runs (created_seq)
  WHERE owner IS NULL AND status IN ('queued', 'running', 'suspended') AND parent_run_id IS NULL;

-- The runs of a session, to take them over when it is dead or move them to its instance's next one.
CREATE INDEX runs_holder_session_idx ON {{schema}}.runs (holder_session) WHERE holder_session IS NOT NULL;

-- The trigger fired on every update of owner; it now fires only when a run becomes free.
DROP TRIGGER runs_notify_work ON {{schema}}.runs;
CREATE TRIGGER runs_notify_work
  AFTER INSERT OR UPDATE OF owner ON {{schema}}.runs
  FOR EACH ROW WHEN (NEW.owner IS NULL AND NEW.status IN ('queued', 'running', 'suspended')
                     AND NEW.parent_run_id IS NULL)
  EXECUTE FUNCTION {{schema}}.notify_work();
