-- Ids made inside a statement, in the format of src/platform/ids.ts newId(): `<prefix>_` then
-- 48 bits of milliseconds (10 Crockford base32 digits) and 80 random bits (16 digits). A
-- statement that writes a row per subscribed endpoint (customer event fan-out) cannot know how
-- many ids to bring. The 80 bits are the random bytes of a v4 UUID, skipping its version and
-- variant bits (bytes 1-6 and 10-13).
CREATE FUNCTION onceline_id(prefix text) RETURNS text LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
DECLARE
  alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
  ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  u bytea := uuid_send(gen_random_uuid());
  high bigint := 0;
  low bigint := 0;
  out text := '';
  i int;
BEGIN
  FOR i IN 0..4 LOOP high := high * 256 + get_byte(u, i); END LOOP;
  low := get_byte(u, 5);
  FOR i IN 9..12 LOOP low := low * 256 + get_byte(u, i); END LOOP;
  FOR i IN 1..8 LOOP out := substr(alphabet, (low % 32)::int + 1, 1) || out; low := low / 32; END LOOP;
  FOR i IN 1..8 LOOP out := substr(alphabet, (high % 32)::int + 1, 1) || out; high := high / 32; END LOOP;
  FOR i IN 1..10 LOOP out := substr(alphabet, (ms % 32)::int + 1, 1) || out; ms := ms / 32; END LOOP;
  RETURN prefix || '_' || out;
END $$;
