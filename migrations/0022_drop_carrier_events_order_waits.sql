-- order_waits counted the times a call's event gave its turn away to an earlier untried event of
-- its call (a new outbox job a few ms later). Since issue #27 a run takes the call's lock and
-- handles the earlier events first, in its own transaction: nothing writes the column any more.
ALTER TABLE carrier_events DROP COLUMN order_waits;
