-- POST /v2/messages: the message accepted unless the handset opted out
-- Written in src/modules/messaging/messages.service.ts (insertOutbound); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, send_at)
       SELECT $1, $2, 'outbound', $3, $4, $5, $6, $7, $8, $9, $10 WHERE NOT EXISTS (SELECT FROM message_opt_outs o JOIN accounts oa ON oa.id = o.account_id
                   WHERE o.account_id = $2::text AND o.handset = $4::text AND o.opted_out
                     AND o.our_number = CASE oa.opt_out_scope WHEN 'account' THEN '*' ELSE $3::text END)
       RETURNING id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at,
  CASE status WHEN 'scheduled' THEN coalesce(send_slot, send_at) WHEN 'queued' THEN coalesce(send_slot, (SELECT greatest(p.next_send_at, p.send_paused_until, now()) FROM phone_numbers p WHERE p.phone_number = from_number AND p.status IN ('ordering', 'active', 'releasing'))) END AS expected_send_at,
  created_at, updated_at, account_id;
