-- Cairn store schema, version 4: lighter writes. A trip is two fenced updates of its run's row and one new
-- row of conversation; the rest of what version 3 wrote per trip (a journal row and index entry per entry,
-- their deletes, a row and index entry per message) is gone.

-- A heap-only update logs the new row from its first changed byte to its last. The columns an append or a
-- checkpoint rewrites go last (in this order), so that is all it logs; the snapshot becomes compact JSON
-- text, since nothing queries inside it and jsonb takes half as much again.
ALTER TABLE {{schema}}.runs
  RENAME COLUMN snapshot_version TO snapshot_version_v3;
ALTER TABLE {{schema}}.runs
  RENAME COLUMN checkpoint_seq TO checkpoint_seq_v3;
ALTER TABLE {{schema}}.runs
  RENAME COLUMN snapshot TO snapshot_v3;
ALTER TABLE {{schema}}.runs
  RENAME COLUMN journal_seq TO journal_seq_v3;
ALTER TABLE {{schema}}.runs
  RENAME COLUMN updated_at TO updated_at_v3;
ALTER TABLE {{schema}}.runs
  ADD COLUMN snapshot_version bigint NOT NULL DEFAULT 0,
  -- The highest journal seq the stored snapshot accounts for.
  ADD COLUMN checkpoint_seq bigint,
  -- The snapshot without its long arrays (in snapshot_chunks).
  ADD COLUMN snapshot text,
  -- The highest journal seq ever appended, kept across checkpoints, so a retried append never repeats one.
  ADD COLUMN journal_seq bigint,
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
  -- The journal since the last checkpoint: a trip appends a few small entries (the model's answer, the tool
  -- calls it starts) and the checkpoint that follows supersedes them, so they ride on the fenced update the
  -- append makes anyway. Compact JSON text, one entry per line (JSON text has no raw newline). An entry that
  -- would make it longer than `inlineJournalBytes` (append-journal.ts) goes to the journal table instead, so
  -- no append rewrites more than that; a load reads both, in seq order.
  ADD COLUMN journal text NOT NULL DEFAULT '';
UPDATE {{schema}}.runs
   SET snapshot_version = snapshot_version_v3, checkpoint_seq = checkpoint_seq_v3,
       snapshot = snapshot_v3::text, journal_seq = journal_seq_v3, updated_at = updated_at_v3;
ALTER TABLE {{schema}}.runs
  DROP COLUMN snapshot_version_v3,
  DROP COLUMN checkpoint_seq_v3,
  DROP COLUMN snapshot_v3,
  DROP COLUMN journal_seq_v3,
  DROP COLUMN updated_at_v3,
  ALTER COLUMN updated_at SET DEFAULT clock_timestamp();

-- The journal table keeps what did not fit in the row, as the same compact text.
ALTER TABLE {{schema}}.journal ALTER COLUMN entry TYPE text USING entry::text;

-- A run's incarnation keys what hangs off it that is written every trip: eight bytes, not its id.
CREATE UNIQUE INDEX runs_created_seq_key ON {{schema}}.runs (created_seq);
DROP INDEX {{schema}}.runs_created_seq_idx;

-- A long array's elements are kept as rows of what each checkpoint added (`idx`: the index of the first,
-- `items`: the text of a JSON array) instead of a row per element: a trip that adds two messages writes one
-- row and one index entry, on the run alone (a load reads all of a run's rows; a rewrite deletes the ones it
-- replaces first).
CREATE TABLE {{schema}}.snapshot_chunks (
  run_seq bigint NOT NULL REFERENCES {{schema}}.runs (created_seq) ON DELETE CASCADE,
  path text NOT NULL,
  idx integer NOT NULL,
  items text NOT NULL
);
CREATE INDEX snapshot_chunks_run_seq_idx ON {{schema}}.snapshot_chunks (run_seq);
INSERT INTO {{schema}}.snapshot_chunks (run_seq, path, idx, items)
  SELECT r.created_seq, i.path, 0, jsonb_agg(i.item ORDER BY i.idx)::text
    FROM {{schema}}.snapshot_items i JOIN {{schema}}.runs r ON r.run_id = i.run_id
   GROUP BY r.created_seq, i.path;
DROP TABLE {{schema}}.snapshot_items;
