-- A paid invoice grants each bundle once
-- Written in src/modules/entitlements/invoice-grants.ts (claim); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
INSERT INTO entitlements AS e (id, account_id, invoice_id, type, quantity, period_start, period_end, fingerprint, provider, provider_event_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (account_id, invoice_id, type) DO UPDATE SET fingerprint = e.fingerprint
       RETURNING e.id, 'entitlement' AS record_type, e.type, e.quantity::text AS quantity, e.invoice_id, e.period_start, e.period_end, e.created_at, e.id = $1 AS inserted, e.fingerprint;
