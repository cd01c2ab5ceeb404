-- Cairn store schema, version 6: runs that wait (a time, signals, or both) and run mailboxes (signals).
--
-- A waiting run holds no lease: its row says what it waits for, and a claim takes it once it is due. Every
-- column added here has a constant default, so adding them rewrites no row.

ALTER TABLE {{schema}}.runs DROP CONSTRAINT runs_status_check;
ALTER TABLE {{schema}}.runs ADD CONSTRAINT runs_status_check CHECK (status IN (
  'queued', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'suspended', 'dead_lettered'));

ALTER TABLE {{schema}}.runs
  -- While status is 'waiting': when it is due (milliseconds on the clock of the runtime that wrote the wait,
  -- a JS number, so any it writes reads back the same), the signal names that wake it, and the JSON text a
  -- reader is shown. NULL in every other status.
  ADD COLUMN wait_until double precision,
  ADD COLUMN wait_signals text[],
  ADD COLUMN wait_detail text,
  -- The mailbox holds an unconsumed signal the wait names: set by the signal that arrives (send_signal) or by
  -- the checkpoint that starts the wait (wait_woken), so a claim finds such runs by an index, never by reading
  -- mailboxes.
  ADD COLUMN woken boolean NOT NULL DEFAULT false,
  -- The highest signal seq a checkpoint consumed: the mailbox is what is above it.
  ADD COLUMN signals_consumed bigint NOT NULL DEFAULT 0;

-- A run's mailbox, keyed by its incarnation (created_seq, which never repeats): a run deleted and created
-- again under the same id starts with an empty mailbox and no remembered keys, and the rows go with the run.
-- Consumed signals without a key are deleted by the checkpoint that consumes them; keyed ones stay, so a key is
-- remembered for the life of the incarnation. Seqs are 1, 2, 3, ... per incarnation (see send_signal).
CREATE TABLE {{schema}}.signals (
  run_seq bigint NOT NULL REFERENCES {{schema}}.runs (created_seq) ON DELETE CASCADE,
  seq bigint NOT NULL,
  name text NOT NULL,
  payload jsonb NOT NULL,
  idempotency_key text,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (run_seq, seq)
);
-- One signal per key and incarnation, whatever races: the backstop of send_signal's check under the row lock.
CREATE UNIQUE INDEX signals_idempotency_key_idx ON {{schema}}.signals (run_seq, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- Waiting root runs by the time they are due: a claim reads the due ones (wait_until <= now) and nextWake the
-- first, without reading the runs that wait for later. Held ones (a claim took them, the runtime has not written
-- yet) are few and filtered.
CREATE INDEX runs_wait_until_idx ON {{schema}}.runs (wait_until)
  WHERE status = 'waiting' AND parent_run_id IS NULL AND wait_until IS NOT NULL;
-- Waiting root runs a signal woke or a client asked to cancel, oldest first.
CREATE INDEX runs_woken_idx ON {{schema}}.runs (created_seq)
  WHERE status = 'waiting' AND parent_run_id IS NULL AND (woken OR cancel_requested);

-- Whether the mailbox of incarnation `run_seq` holds a signal above `after` of one of `names`. VOLATILE (and
-- plpgsql, never inlined) on purpose: called by a checkpoint after it locked the run's row, it reads with a
-- snapshot taken then, so it sees a signal whose transaction held that lock and committed while the checkpoint
-- waited for it (the checkpoint's own snapshot, taken before, would miss it and the signal would wake nothing).
CREATE FUNCTION {{schema}}.wait_woken(run_seq bigint, after bigint, names text[]) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM {{schema}}.signals s
                  WHERE s.run_seq = wait_woken.run_seq AND s.seq > wait_woken.after
                    AND s.name = ANY (wait_woken.names));
END
$$;

-- Puts a signal in a run's mailbox, with the rules of store.signal, inside the caller's transaction (so a
-- rolled-back transaction sends nothing). Errors: 22023 a name, key or payload it refuses, or a child run (DETAIL:
-- its root run id); P0002 an unknown run; 55000 a run in a final status (DETAIL: the status).
--
-- It holds the run's row FOR KEY SHARE until the caller's transaction ends: a checkpoint (FOR UPDATE) or a delete
-- of the run waits for it, so a wait written meanwhile sees this signal, while the holder's renewals and releases
-- (no-key updates) go on, so a transaction left open does not cost the holder its lease. Signals to one run are
-- numbered by their insert: two that take the same seq or key meet on a unique index, the second waits for the
-- first to end, then looks again (a key seen before: the first signal's seq, `duplicate`).
CREATE FUNCTION {{schema}}.send_signal(
  run_id text, name text, payload jsonb, idempotency_key text DEFAULT NULL,
  OUT seq bigint, OUT duplicate boolean
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  run record;
  compact_bytes bigint;
BEGIN
  IF send_signal.name IS NULL OR length(send_signal.name) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'A signal''s name must be a string of 1 to 200 characters without NUL.'
      USING ERRCODE = '22023';
  END IF;
  IF send_signal.idempotency_key IS NOT NULL AND length(send_signal.idempotency_key) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'A signal''s idempotency key must be a string of 1 to 200 characters without NUL.'
      USING ERRCODE = '22023';
  END IF;
  payload := coalesce(send_signal.payload, 'null'::jsonb);
  -- Measured as compact JSON text, as store.signal measures it: Postgres prints a space after each , and :.
  compact_bytes := octet_length(replace(replace(payload::text, ', ', ','), ': ', ':'));
  IF compact_bytes > 1000000 THEN
    RAISE EXCEPTION 'The payload of signal "%" is % bytes of JSON, more than 1000000.', send_signal.name, compact_bytes
      USING ERRCODE = '22023';
  END IF;

  SELECT r.created_seq, r.status, r.root_run_id, r.signals_consumed INTO run
    FROM {{schema}}.runs r WHERE r.run_id = send_signal.run_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Run "%" not found.', send_signal.run_id USING ERRCODE = 'P0002';
  END IF;
  IF run.root_run_id IS NOT NULL THEN
    RAISE EXCEPTION 'Run "%" is a child run: signal its root run "%".', send_signal.run_id, run.root_run_id
      USING ERRCODE = '22023', DETAIL = run.root_run_id;
  END IF;
  IF run.status IN ('completed', 'failed', 'cancelled', 'dead_lettered') THEN
    RAISE EXCEPTION 'Run "%" already ended %: it takes no more signals.', send_signal.run_id, run.status
      USING ERRCODE = '55000', DETAIL = run.status;
  END IF;

  -- Each statement takes a new snapshot: after an insert waited for another transaction, the next round sees it.
  FOR attempt IN 1..1000 LOOP
    IF send_signal.idempotency_key IS NOT NULL THEN
      SELECT s.seq INTO send_signal.seq FROM {{schema}}.signals s
       WHERE s.run_seq = run.created_seq AND s.idempotency_key = send_signal.idempotency_key;
      IF FOUND THEN
        duplicate := true;
        RETURN;
      END IF;
    END IF;
    -- Consumed signals without a key are deleted: the cursor (which no checkpoint moves while this lock is held)
    -- keeps the next seq above them.
    SELECT greatest(coalesce(max(s.seq), 0), run.signals_consumed) + 1 INTO send_signal.seq
      FROM {{schema}}.signals s WHERE s.run_seq = run.created_seq;
    INSERT INTO {{schema}}.signals (run_seq, seq, name, payload, idempotency_key)
    VALUES (run.created_seq, send_signal.seq, send_signal.name, payload, send_signal.idempotency_key)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
      -- Waking a waiting run changes `woken`: the trigger below notifies workers, at commit.
      UPDATE {{schema}}.runs r SET woken = true
       WHERE r.created_seq = run.created_seq AND NOT r.woken AND r.status = 'waiting'
         AND send_signal.name = ANY (r.wait_signals);
      duplicate := false;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'Signal "%" to run "%" met other signals 1000 times: try again.', send_signal.name, send_signal.run_id
    USING ERRCODE = '40001';
END
$$;

-- A run that starts waiting (its wait releases the lease) or is created waiting is news too: workers set their
-- timer for it (nextWake).
DROP TRIGGER runs_notify_work ON {{schema}}.runs;
CREATE TRIGGER runs_notify_work
  AFTER INSERT OR UPDATE OF owner ON {{schema}}.runs
  FOR EACH ROW WHEN (NEW.owner IS NULL AND NEW.status IN ('queued', 'running', 'suspended', 'waiting')
                     AND NEW.parent_run_id IS NULL)
  EXECUTE FUNCTION {{schema}}.notify_work();

-- A waiting run a signal wakes or a cancel request reaches becomes claimable: workers are told at once.
CREATE TRIGGER runs_notify_woken
  AFTER UPDATE OF woken, cancel_requested ON {{schema}}.runs
  FOR EACH ROW WHEN (NEW.status = 'waiting' AND NEW.owner IS NULL AND NEW.parent_run_id IS NULL
                     AND ((NEW.woken AND NOT OLD.woken) OR (NEW.cancel_requested AND NOT OLD.cancel_requested)))
  EXECUTE FUNCTION {{schema}}.notify_work();
