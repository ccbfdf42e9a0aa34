-- A number's voice settings (module numbers; the ring plan's shape is SequentialRing's):
-- {"ring_plan":{"targets":[{"to","timeout_secs"}],"fallback":{"action","to"?}},"transcribe"}. NULL: calls
-- to the number are not taken (a missed call row, the caller hung up). Validated by the API before
-- it is written; a call copies the plan when it starts, so a change never moves a call in progress.
ALTER TABLE phone_numbers ADD COLUMN voice jsonb;
