-- Cairn store schema, version 10: a run's stored payloads replaced in place, as a payload codec's key rotation
-- moves them to a new key (DurableStore.replacePayloads). Functions only: no table changes.

-- The regular expression of a string value in JSON text that a replacement may be asked to replace: one that
-- starts with a letter or digit and holds no '"' or '\' (replace_payloads admits no other), its text captured. A
-- quote preceded by a backslash is escaped, inside a string; one followed by a letter or digit opens a string (a
-- closing quote is followed by , : ] } or space); a string followed by a colon is an object key, not a value.
CREATE FUNCTION {{schema}}.payload_string_re() RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT '(?<!\\)"([A-Za-z0-9][^"\\]*)"(?!\s*:)'::text
$$;

-- Whether JSON text `doc` holds a string value that is a key of `pairs` (a JSON object). One scan of `doc` and a
-- lookup per string: linear in its length, whatever the number of pairs.
CREATE FUNCTION {{schema}}.holds_payload_string(doc text, pairs jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT EXISTS (SELECT 1 FROM regexp_matches(doc, {{schema}}.payload_string_re(), 'g') AS m
                  WHERE pairs ? m[1])
$$;

-- `doc` with each such string value that is a key of `pairs` replaced by its value; the text around them kept
-- byte for byte. Each string is looked up once, so a value equal to another key is not replaced again (as the
-- sdk's replaceStrings). regexp_split_to_array and regexp_matches find the same matches: piece n comes before
-- match n. NULL stays NULL.
CREATE FUNCTION {{schema}}.replace_payload_strings(doc text, pairs jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT string_agg(p.piece || coalesce('"' || coalesce(pairs ->> m.groups[1], m.groups[1]) || '"', ''), ''
                    ORDER BY p.n)
    FROM unnest(regexp_split_to_array(doc, {{schema}}.payload_string_re())) WITH ORDINALITY AS p(piece, n)
    LEFT JOIN regexp_matches(doc, {{schema}}.payload_string_re(), 'g') WITH ORDINALITY AS m(groups, n)
      ON m.n = p.n
$$;

-- Replaces each string value equal to olds[i] by news[i] (replace_payload_strings) wherever incarnation
-- `incarnation` (created_seq as text) of run `run_id` keeps a payload: its row's snapshot, output, error, wait
-- detail and inline journal, its journal table rows (those a checkpoint superseded too, until they are deleted),
-- its snapshot chunks, its signals (the mailbox, consumed ones kept for their key, standing decisions) and its
-- stream. Returns how many of `olds` it found where a load, the mailbox, the stream or signalPayloads shows them;
-- 0 for an unknown run or another incarnation. Raises 22023 for a string the sdk's checkReplacements refuses for
-- its characters or length (a replacing string that is also a replaced one, which it refuses too, is harmless
-- here: each string is replaced once).
--
-- Not fenced (it leaves every payload saying the same, so it never undoes a holder's write), but atomic against
-- the holder's writes: it locks the runs row FOR UPDATE, as a checkpoint or an append does first, and every
-- statement that writes a run's other rows holds that row's lock (a signal holds FOR KEY SHARE), so none lands
-- halfway through. It cannot deadlock: it holds no other runs row, and waits only for rows of this run, which no
-- one writes without the runs row it holds. VOLATILE plpgsql, so each statement reads after the lock was taken:
-- it sees the writes of a holder it waited for. snapshot_version and updated_at stay: a holder's next checkpoint
-- still sends only its new elements (the rows it keeps hold the same payloads in other strings), and retention
-- counts from the run's last write, which this is not.
CREATE FUNCTION {{schema}}.replace_payloads(run_id text, incarnation text, olds text[], news text[])
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  run record;
  pairs jsonb;
  moving jsonb;
BEGIN
  IF cardinality(olds) IS DISTINCT FROM cardinality(news) THEN
    RAISE EXCEPTION 'replace_payloads takes as many replacing strings as replaced ones.' USING ERRCODE = '22023';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(olds, news) AS p(from_text, to_text)
              WHERE p.from_text IS NULL OR p.to_text IS NULL OR length(p.from_text) < 16
                 OR p.from_text !~ '^[A-Za-z0-9][\x20-\x21\x23-\x5b\x5d-\x7e]*$'
                 OR p.to_text !~ '^[\x20-\x21\x23-\x5b\x5d-\x7e]+$') THEN
    RAISE EXCEPTION 'A replaced payload string must be printable ASCII without ''"'' or ''\'', start with a letter or digit and be at least 16 characters; a replacing one, printable ASCII without ''"'' or ''\''.'
      USING ERRCODE = '22023';
  END IF;
  pairs := jsonb_object(olds, news);

  SELECT r.created_seq, r.checkpoint_seq INTO run
    FROM {{schema}}.runs r
   WHERE r.run_id = replace_payloads.run_id AND r.created_seq::text = replace_payloads.incarnation
     FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;

  -- The pairs whose old string the run holds where a reader is shown it. The journal table's rows a checkpoint
  -- superseded are read no more: they are replaced below all the same (with every pair), but not counted.
  SELECT coalesce(jsonb_object_agg(m[1], pairs -> m[1]), '{}') INTO moving
    FROM (SELECT x.doc FROM {{schema}}.runs r,
                 unnest(ARRAY[r.snapshot, r.output, r.error, r.wait_detail, r.journal]) AS x(doc)
           WHERE r.created_seq = run.created_seq
          UNION ALL SELECT j.entry FROM {{schema}}.journal j
                     WHERE j.run_id = replace_payloads.run_id AND j.seq > coalesce(run.checkpoint_seq, -1)
          UNION ALL SELECT c.items FROM {{schema}}.snapshot_chunks c WHERE c.run_seq = run.created_seq
          UNION ALL SELECT s.payload::text FROM {{schema}}.signals s WHERE s.run_seq = run.created_seq
          UNION ALL SELECT t.part FROM {{schema}}.run_stream t WHERE t.run_seq = run.created_seq) d,
         regexp_matches(d.doc, {{schema}}.payload_string_re(), 'g') AS m
   WHERE pairs ? m[1];

  -- Only rows holding one are written: a row rewritten unchanged would still cost a new row version.
  UPDATE {{schema}}.journal j
     SET entry = {{schema}}.replace_payload_strings(j.entry, pairs)
   WHERE j.run_id = replace_payloads.run_id AND {{schema}}.holds_payload_string(j.entry, pairs);
  IF moving = '{}'::jsonb THEN
    RETURN 0;
  END IF;
  UPDATE {{schema}}.runs r
     SET snapshot = {{schema}}.replace_payload_strings(r.snapshot, moving),
         output = {{schema}}.replace_payload_strings(r.output, moving),
         error = {{schema}}.replace_payload_strings(r.error, moving),
         wait_detail = {{schema}}.replace_payload_strings(r.wait_detail, moving),
         journal = {{schema}}.replace_payload_strings(r.journal, moving)
   WHERE r.created_seq = run.created_seq
     AND EXISTS (SELECT 1 FROM unnest(ARRAY[r.snapshot, r.output, r.error, r.wait_detail, r.journal]) AS x(doc)
                  WHERE {{schema}}.holds_payload_string(x.doc, moving));
  UPDATE {{schema}}.snapshot_chunks c
     SET items = {{schema}}.replace_payload_strings(c.items, moving)
   WHERE c.run_seq = run.created_seq AND {{schema}}.holds_payload_string(c.items, moving);
  UPDATE {{schema}}.signals s
     SET payload = {{schema}}.replace_payload_strings(s.payload::text, moving)::jsonb
   WHERE s.run_seq = run.created_seq AND {{schema}}.holds_payload_string(s.payload::text, moving);
  UPDATE {{schema}}.run_stream t
     SET part = {{schema}}.replace_payload_strings(t.part, moving)
   WHERE t.run_seq = run.created_seq AND {{schema}}.holds_payload_string(t.part, moving);
  RETURN (SELECT count(*)::int FROM jsonb_object_keys(moving));
END
$$;
