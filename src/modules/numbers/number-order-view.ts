import { queryRows, type Tx } from '../../platform/database/tx.js';
import type { NumberOrderView } from './number-order.dto.js';

/** An order with its numbers, as the API shows it; the account's own only. */
export async function readOrderView(tx: Tx, accountId: string, orderId: string): Promise<NumberOrderView | undefined> {
  const [row] = await queryRows(
    tx,
    `SELECT o.id, 'phone_number_order' AS record_type, o.carrier, o.status,
            coalesce((SELECT jsonb_agg(jsonb_build_object('id', p.id, 'phone_number', p.phone_number, 'status', p.status) ORDER BY p.phone_number)
                        FROM phone_numbers p WHERE p.order_id = o.id), '[]'::jsonb) AS phone_numbers,
            o.error, o.created_at, o.completed_at
       FROM number_orders o WHERE o.id = $1 AND o.account_id = $2`,
    [orderId, accountId],
  );
  return row;
}
