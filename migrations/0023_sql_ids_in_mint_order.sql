-- onceline_id() in mint order on one connection: within one millisecond (or if the clock steps
-- back) the next id is the last one's 80 random bits plus one (ULID's monotonic mode), as
-- src/platform/ids.ts newId() does in the app. Two customer events written by one transaction in
-- one millisecond (`call.answered`, then `call.completed`) listed in random order before. The last
-- id of the connection is kept in the session setting onceline.id_last ("ms:high:low"); connections
-- do not order against each other (nor do processes in the app). Setting it makes the function
-- PARALLEL UNSAFE (a parallel worker may not set parameters).
CREATE OR REPLACE FUNCTION onceline_id(prefix text) RETURNS text LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
  alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
  max_half constant bigint := 1099511627775; -- 2^40 - 1
  ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  last text := current_setting('onceline.id_last', true);
  last_ms bigint;
  u bytea;
  high bigint := 0;
  low bigint := 0;
  out text := '';
  i int;
BEGIN
  IF last IS NOT NULL AND last <> '' THEN last_ms := split_part(last, ':', 1)::bigint; END IF;
  IF last_ms IS NOT NULL AND ms <= last_ms THEN
    ms := last_ms;
    high := split_part(last, ':', 2)::bigint;
    low := split_part(last, ':', 3)::bigint;
    IF low < max_half THEN low := low + 1;
    ELSIF high < max_half THEN high := high + 1; low := 0;
    ELSE ms := ms + 1; high := 0; low := 0;
    END IF;
  ELSE
    -- The 80 bits are the random bytes of a v4 UUID, skipping its version and variant bits.
    u := uuid_send(gen_random_uuid());
    FOR i IN 0..4 LOOP high := high * 256 + get_byte(u, i); END LOOP;
    low := get_byte(u, 5);
    FOR i IN 9..12 LOOP low := low * 256 + get_byte(u, i); END LOOP;
  END IF;
  PERFORM set_config('onceline.id_last', ms || ':' || high || ':' || low, false);
  FOR i IN 1..8 LOOP out := substr(alphabet, (low % 32)::int + 1, 1) || out; low := low / 32; END LOOP;
  FOR i IN 1..8 LOOP out := substr(alphabet, (high % 32)::int + 1, 1) || out; high := high / 32; END LOOP;
  FOR i IN 1..10 LOOP out := substr(alphabet, (ms % 32)::int + 1, 1) || out; ms := ms / 32; END LOOP;
  RETURN prefix || '_' || out;
END $$;
