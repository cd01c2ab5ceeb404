-- Cairn store schema, version 2: fences that name the incarnation, child runs held by their root, checkpoints
-- that account for a journal seq.
--
-- A run's incarnation is its created_seq: an identity that never repeats, so a run deleted and created again
-- under the same id is told apart from the old one, and a write made for the old one never lands.

-- A child run (a planner's agent node) belongs to the incarnation of its parent that created it, is deleted
-- with it, and is held by its root's lease (its own owner and lease_until stay empty).
ALTER TABLE {{schema}}.runs
  ADD COLUMN parent_run_id text REFERENCES {{schema}}.runs (run_id) ON DELETE CASCADE,
  ADD COLUMN parent_incarnation bigint,
  ADD COLUMN root_run_id text,
  -- The highest journal seq the stored snapshot accounts for: an older checkpoint (a statement that arrived
  -- late) is refused, and a checkpoint removes only the journal up to it.
  ADD COLUMN checkpoint_seq bigint;

-- The foreign key's cascade finds a parent's children by this index.
CREATE INDEX runs_parent_run_id_idx ON {{schema}}.runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
