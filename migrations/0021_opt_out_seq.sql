-- The dispatch claim against a STOP that commits while it waits for the number's row (issue #30).

-- opt_out_seq: bumped by every opt-out/opt-in change that concerns the number (a keyword that
-- changed a handset's consent for this number, or for its whole account; an opt-out scope change
-- of its account), in the statement that made the change. The dispatch claim reads it from its
-- snapshot and from the row it locks (the newest version after any wait): when they differ, a
-- consent change committed while the claim waited, which its snapshot cannot see, so the claim
-- takes nothing and runs again. A column of its own: a slot update by another claim changes the
-- row (and its xmin) but not this.
ALTER TABLE phone_numbers ADD COLUMN opt_out_seq bigint NOT NULL DEFAULT 0;
