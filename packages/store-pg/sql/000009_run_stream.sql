-- Cairn store schema, version 9: a run's stream log, what it says while it runs (StreamStore).

-- One row per chunk, keyed by the run's incarnation and the chunk's position (1, 2, ... with no gap): an append
-- inserts its chunks and touches no other row (the runs row is only locked, for the fence), so a streamed token
-- costs its own row and index entry, not a rewrite of the wide runs row. Deleted with its run (and a child with
-- its parent). `part` is the JSON text of the part as written; `at` is the writer's clock in milliseconds, as
-- float8 so any number it gave reads back the same.
CREATE TABLE {{schema}}.run_stream (
  run_seq bigint NOT NULL REFERENCES {{schema}}.runs (created_seq) ON DELETE CASCADE,
  position bigint NOT NULL,
  at double precision NOT NULL,
  unit text NOT NULL,
  part text NOT NULL,
  PRIMARY KEY (run_seq, position)
);

-- The highest position in the stream of incarnation `run_seq`, 0 when it has none: the primary key's last
-- entry. VOLATILE (and plpgsql, never inlined) on purpose, as mail_above: called by an append after it locked
-- the run's row, it reads with a snapshot taken then, so it sees the chunks of an append that held that lock
-- and committed while this one waited for it (a retry sent while the first try was still running). The
-- append's own snapshot, taken before, would miss them.
CREATE FUNCTION {{schema}}.stream_position(run_seq bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN coalesce((SELECT max(s.position) FROM {{schema}}.run_stream s
                    WHERE s.run_seq = stream_position.run_seq), 0);
END
$$;
