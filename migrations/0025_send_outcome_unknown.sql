-- An ambiguous send is resolved, never blindly resent (issue #41).

-- outcome_unknown_since: a send of this message may have reached the carrier without our learning
-- its answer (the request was written and then the connection reset, a 502/504/500, our timeout, or
-- a run whose lease ended without giving it back: a worker killed between the carrier's accept and
-- its answer). Set by a guarded statement when that is learnt (NULL: every attempt so far was
-- refused or never written); cleared only by the statements that settle it: the carrier's answer or
-- a receipt or lookup naming the message (sent), or the decision to send again once the carrier has
-- shown nothing for SEND_OUTCOME_WINDOW_SECONDS. In the database, so a successor of a killed worker
-- knows a previous attempt may have reached the carrier.
ALTER TABLE messages ADD COLUMN outcome_unknown_since timestamptz;

-- detail: why a history row was written beside its status, where the status alone does not say it
-- (`outcome_unknown: …`, `found_by_receipt`, `found_by_lookup`, `answered_late`,
-- `resent_after_nothing_found`). NULL for the ordinary moves.
ALTER TABLE message_status_history ADD COLUMN detail text;
