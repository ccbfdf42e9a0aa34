-- Sender pacing (issue #30): each sending number sends at most its rate, in message segments per
-- second (carriers count segments), so a carrier is never pushed into 429.

-- send_rate_per_second: the number's own rate; NULL takes the default for its carrier and type
-- (src/modules/numbers/send-rates.ts). next_send_at: the end of the last slot handed out (a
-- slot is claimed by one guarded UPDATE of this row: greatest(next_send_at, send_paused_until,
-- now) + segments / rate). send_paused_until: a carrier's 429 Retry-After; no slot starts before it.
-- sends_paced_until: where the sends actually claimed so far end when spaced at the rate (GCRA's
-- theoretical arrival time): a send is claimed only while it reaches at most SEND_BURST_SECONDS
-- ahead, so slots that fall due together (late jobs) still never go out as a burst.
ALTER TABLE phone_numbers
  ADD COLUMN send_rate_per_second numeric CHECK (send_rate_per_second >= 0.01 AND send_rate_per_second <= 1000),
  ADD COLUMN next_send_at timestamptz,
  ADD COLUMN send_paused_until timestamptz,
  ADD COLUMN sends_paced_until timestamptz;

-- The slot a waiting message was given: its dispatch job runs then (the outbox row's run_at). NULL
-- until its first dispatch run (or after a 429 gave it back). Kept once sent: when it went out.
ALTER TABLE messages ADD COLUMN send_slot timestamptz;
