-- Cairn store schema, version 8: attempts that ended before their run could go on are counted, and decisions
-- on held calls are checked against the run's wait where they are accepted.

-- Attempts in a row that ended in an error before the run went on (RunRecord.stalls): set by the status update
-- that ends such an attempt, reset by every checkpoint. A constant default: adding it rewrites no row.
ALTER TABLE {{schema}}.runs ADD COLUMN stalls integer NOT NULL DEFAULT 0;

-- Puts a decision on a held call (a `cairn.approval` signal: { callId, approved, argsHash?, by?, reason? }) in a
-- run's mailbox, by the rules of the sdk's decisions.ts, checked against the run's wait in the step that keeps
-- it, inside the caller's transaction. The decision on a call and arguments is kept under the key
-- 'cairn.approval:' || sha256(callId) || ':' || argsHash, whoever sent it and whatever key they gave:
-- 1. One is kept already: that one is answered (`duplicate`, with it as `decision`), whatever the run's status.
--    A rejection naming no arguments is about those the call waits with, or, when it no longer waits, is
--    answered the call's latest decision.
-- 2. Otherwise the run must not have ended (55000, DETAIL the status), must wait for a decision on the call, and
--    an approval must name the hash it waits with: else 22023 with HINT 'cairn.decision' and DETAIL the JSON
--    { reason: 'not waiting' | 'other arguments', status, argsHash }, and nothing is kept.
-- 3. It is kept with the hash the call waits with, and wakes the run.
-- Errors as send_signal's. The row lock (FOR KEY SHARE) orders it with the checkpoints that change the wait: a
-- checkpoint that stops waiting for the call either commits first (then this refuses) or sees this decision.
CREATE FUNCTION {{schema}}.send_decision(
  run_id text, payload jsonb, OUT seq bigint, OUT duplicate boolean, OUT decision jsonb
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  run record;
  call_id text;
  waited text;
  args_hash text;
  key text;
BEGIN
  IF jsonb_typeof(send_decision.payload) IS DISTINCT FROM 'object'
     OR jsonb_typeof(send_decision.payload -> 'callId') IS DISTINCT FROM 'string'
     OR send_decision.payload ->> 'callId' = ''
     OR jsonb_typeof(send_decision.payload -> 'approved') IS DISTINCT FROM 'boolean'
     OR (jsonb_typeof(send_decision.payload -> 'argsHash') IS DISTINCT FROM 'string'
         AND (send_decision.payload -> 'approved') = 'true'::jsonb) THEN
    RAISE EXCEPTION 'A "cairn.approval" signal must carry a decision: { callId, approved, argsHash (to approve), by?, reason? }.'
      USING ERRCODE = '22023';
  END IF;
  call_id := send_decision.payload ->> 'callId';
  SELECT r.created_seq, r.status, r.root_run_id, r.wait_detail INTO run
    FROM {{schema}}.runs r WHERE r.run_id = send_decision.run_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Run "%" not found.', send_decision.run_id USING ERRCODE = 'P0002';
  END IF;
  IF run.root_run_id IS NOT NULL THEN
    RAISE EXCEPTION 'Run "%" is a child run: signal its root run "%".', send_decision.run_id, run.root_run_id
      USING ERRCODE = '22023', DETAIL = run.root_run_id;
  END IF;
  IF run.status = 'waiting' AND run.wait_detail IS NOT NULL THEN
    SELECT a ->> 'argsHash' INTO waited
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(run.wait_detail::jsonb -> 'approvals') = 'array'
                                     THEN run.wait_detail::jsonb -> 'approvals' ELSE '[]'::jsonb END) a
     WHERE a ->> 'callId' = call_id AND jsonb_typeof(a -> 'argsHash') = 'string'
     LIMIT 1;
  END IF;
  args_hash := coalesce(CASE WHEN jsonb_typeof(send_decision.payload -> 'argsHash') = 'string'
                             THEN send_decision.payload ->> 'argsHash' END, waited);
  key := 'cairn.approval:' || encode(sha256(convert_to(call_id, 'UTF8')), 'hex') || ':' || coalesce(args_hash, '');

  FOR attempt IN 1..1000 LOOP
    IF args_hash IS NOT NULL THEN
      SELECT s.seq, s.payload INTO send_decision.seq, send_decision.decision FROM {{schema}}.signals s
       WHERE s.run_seq = run.created_seq AND s.idempotency_key = key;
    ELSE
      SELECT s.seq, s.payload INTO send_decision.seq, send_decision.decision FROM {{schema}}.signals s
       WHERE s.run_seq = run.created_seq AND s.name = 'cairn.approval' AND s.idempotency_key IS NOT NULL
         AND s.payload ->> 'callId' = call_id
       ORDER BY s.seq DESC LIMIT 1;
    END IF;
    IF FOUND THEN
      duplicate := true;
      RETURN;
    END IF;
    IF run.status IN ('completed', 'failed', 'cancelled', 'dead_lettered') THEN
      RAISE EXCEPTION 'Run "%" already ended %: it takes no more signals.', send_decision.run_id, run.status
        USING ERRCODE = '55000', DETAIL = run.status;
    END IF;
    IF waited IS NULL OR args_hash <> waited THEN
      RAISE EXCEPTION 'Run "%" does not wait for a decision on call "%" with these arguments.', send_decision.run_id, call_id
        USING ERRCODE = '22023', HINT = 'cairn.decision',
              DETAIL = jsonb_build_object(
                'reason', CASE WHEN waited IS NULL THEN 'not waiting' ELSE 'other arguments' END,
                'status', run.status, 'argsHash', waited)::text;
    END IF;
    decision := jsonb_strip_nulls(jsonb_build_object(
      'callId', call_id,
      'approved', send_decision.payload -> 'approved',
      'argsHash', waited,
      'by', CASE WHEN jsonb_typeof(send_decision.payload -> 'by') = 'string' THEN send_decision.payload -> 'by' END,
      'reason', CASE WHEN jsonb_typeof(send_decision.payload -> 'reason') = 'string'
                     THEN send_decision.payload -> 'reason' END));
    -- Consumed signals without a key are deleted: the cursor (which no checkpoint moves while this lock is held)
    -- keeps the next seq above them.
    SELECT greatest(coalesce(max(s.seq), 0), (SELECT r.signals_consumed FROM {{schema}}.runs r
                                              WHERE r.created_seq = run.created_seq)) + 1
      INTO send_decision.seq
      FROM {{schema}}.signals s WHERE s.run_seq = run.created_seq;
    INSERT INTO {{schema}}.signals (run_seq, seq, name, payload, idempotency_key)
    VALUES (run.created_seq, send_decision.seq, 'cairn.approval', decision, key)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
      UPDATE {{schema}}.runs r SET woken = true
       WHERE r.created_seq = run.created_seq AND NOT r.woken AND r.status = 'waiting'
         AND 'cairn.approval' = ANY (r.wait_signals);
      duplicate := false;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'A decision to run "%" met other signals 1000 times: try again.', send_decision.run_id
    USING ERRCODE = '40001';
END
$$;

-- send_signal as in version 6, but a decision (`cairn.approval`) goes through send_decision's rules, whatever
-- key its sender gave: one that is refused keeps nothing, so no key is burnt by a decision that was wrong.
CREATE OR REPLACE FUNCTION {{schema}}.send_signal(
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

  IF send_signal.name = 'cairn.approval' THEN
    SELECT d.seq, d.duplicate INTO send_signal.seq, send_signal.duplicate
      FROM {{schema}}.send_decision(send_signal.run_id, payload) d;
    RETURN;
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
