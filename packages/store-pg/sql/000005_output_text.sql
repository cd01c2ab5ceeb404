-- Cairn store schema, version 5: a run's output and error are kept as the JSON text they were written as.
-- jsonb orders an object's keys (shortest first) and respaces them, so a child run's output, read back by a
-- resumed parent and handed to the next model, came back in other bytes than the model saw the first time:
-- a provider's prompt cache missed. Rows written before keep the text their jsonb gives: valid JSON, as read.
ALTER TABLE {{schema}}.runs
  ALTER COLUMN output TYPE text USING output::text,
  ALTER COLUMN error TYPE text USING error::text;
