-- Cairn store schema, version 4: lighter writes.
--
-- The journal since the last checkpoint lives in the run's row.
-- A trip appends a few small entries (the model's answer, the tool calls it starts) and the checkpoint that
-- follows supersedes them. Kept in the runs row they ride on the fenced update the append makes anyway: no
-- journal row, index entry or later delete per entry. They are kept as compact JSON text, one entry per line
-- (JSON text has no raw newline), since nothing queries inside them and jsonb takes half as much again.
-- An entry that would make the row's journal larger than `inlineJournalBytes` (append-journal.ts) is written to the journal table
-- instead, so no append rewrites more than that; a load reads both, in seq order.
ALTER TABLE {{schema}}.runs ADD COLUMN journal text NOT NULL DEFAULT '';

-- The journal table keeps what did not fit in the row, as the same compact text.
ALTER TABLE {{schema}}.journal ALTER COLUMN entry TYPE text USING entry::text;

-- A long array's elements are kept as rows of what each checkpoint added (`idx`: the index of the first,
-- `items`: the text of a JSON array) instead of a row per element: a trip that adds two messages writes one
-- row and one index entry.
CREATE TABLE {{schema}}.snapshot_chunks (
  run_id text NOT NULL REFERENCES {{schema}}.runs (run_id) ON DELETE CASCADE,
  path text NOT NULL,
  idx integer NOT NULL,
  items text NOT NULL,
  PRIMARY KEY (run_id, path, idx)
);
INSERT INTO {{schema}}.snapshot_chunks (run_id, path, idx, items)
  SELECT run_id, path, 0, jsonb_agg(item ORDER BY idx)::text FROM {{schema}}.snapshot_items GROUP BY run_id, path;
DROP TABLE {{schema}}.snapshot_items;
