-- Cairn store schema, version 1. `{{schema}}` is replaced by the quoted schema name.
CREATE TABLE {{schema}}.runs (
  run_id text PRIMARY KEY,
  -- Insertion order: `list` returns runs oldest first, ties included.
  created_seq bigint GENERATED ALWAYS AS IDENTITY,
  kind text NOT NULL,
  name text NOT NULL,
  signature text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'suspended', 'dead_lettered')),
  epoch bigint NOT NULL DEFAULT 0,
  owner text,
  lease_until timestamptz,
  heartbeat_at timestamptz,
  -- The holder's lock connection; together they survive pid reuse.
  holder_pid integer,
  holder_backend_start timestamptz,
  -- Claims that took the run from a holder that never released it; past a worker's limit it is dead-lettered.
  recoveries integer NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  -- The snapshot without its long growing arrays, which live in snapshot_items; the version rises at every save.
  snapshot jsonb,
  snapshot_version bigint NOT NULL DEFAULT 0,
  output jsonb,
  error jsonb,
  -- The highest journal seq ever appended, kept across checkpoints, so a retried append never repeats one.
  journal_seq bigint,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX runs_created_seq_idx ON {{schema}}.runs (created_seq);
CREATE INDEX runs_status_updated_at_idx ON {{schema}}.runs (status, updated_at);

CREATE TABLE {{schema}}.journal (
  run_id text NOT NULL REFERENCES {{schema}}.runs (run_id) ON DELETE CASCADE,
  epoch bigint NOT NULL,
  seq bigint NOT NULL,
  entry jsonb NOT NULL,
  PRIMARY KEY (run_id, seq)
);

-- One row per element of each long array of a run's snapshot (path: a JSON array of keys), so a checkpoint
-- writes only the elements that are new.
CREATE TABLE {{schema}}.snapshot_items (
  run_id text NOT NULL REFERENCES {{schema}}.runs (run_id) ON DELETE CASCADE,
  path text NOT NULL,
  idx integer NOT NULL,
  item jsonb NOT NULL,
  PRIMARY KEY (run_id, path, idx)
);

-- Workers LISTEN on {{channel}}: a run was created or released and may be claimable now.
CREATE FUNCTION {{schema}}.notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify({{channel}}, NEW.run_id);
  RETURN NULL;
END
$$;

CREATE TRIGGER runs_notify_work
  AFTER INSERT OR UPDATE OF owner ON {{schema}}.runs
  FOR EACH ROW WHEN (NEW.owner IS NULL AND NEW.status IN ('queued', 'running', 'suspended'))
  EXECUTE FUNCTION {{schema}}.notify_work();
