-- Compliance replies ahead of the backlog; slots of refused messages given back (issue #42).

-- The dispatch claim moves the waiting messages of one number: behind a STOP/HELP reply given the
-- number's next slot (later by its spacing), and up into the slot of a message a STOP refused
-- (earlier by its spacing). It finds them by number and slot, among the messages not yet sent only.
CREATE INDEX messages_unsent_slot_idx ON messages (from_number, send_slot)
  WHERE direction = 'outbound' AND status IN ('queued', 'scheduled', 'sending');
