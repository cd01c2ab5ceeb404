-- Cairn store schema, version 7: a checkpoint's receipt says whether the run's mailbox holds unconsumed signals,
-- and a checkpoint with unlessMail is refused while it does.

-- Whether the mailbox of incarnation `run_seq` holds a signal above `after`. VOLATILE (and plpgsql, never
-- inlined) on purpose, as wait_woken: called by a checkpoint after it locked the run's row, it reads with a
-- snapshot taken then, so it sees a signal whose transaction held that lock (send_signal's FOR KEY SHARE) and
-- committed while the checkpoint waited for it. The checkpoint's own snapshot, taken before, would miss it: a
-- completing checkpoint with unlessMail would end the run and leave the signal unread.
CREATE FUNCTION {{schema}}.mail_above(run_seq bigint, after bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM {{schema}}.signals s
                  WHERE s.run_seq = mail_above.run_seq AND s.seq > mail_above.after);
END
$$;
