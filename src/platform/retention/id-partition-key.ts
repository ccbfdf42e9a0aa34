/**
 * SQL naming the partition key of a lookup by one of our ids (`id`: SQL text of the id): the
 * `column` (created_at) within the id's window, onceline_id_window_start/end (migration 0040).
 * Our ids begin with the millisecond they were minted, and a time-partitioned table's rows have
 * created_at equal to it (within milliseconds for rows stored before it was partitioned), so the
 * lookup prunes to the one partition (near a boundary, two) that can hold the row instead of
 * probing every partition's index (docs/scaling.md measured 113 µs → 269 µs with 8 partitions).
 */
export function createdAtOfId(id: string, column = 'created_at'): string {
  return `${column} BETWEEN onceline_id_window_start(${id}) AND onceline_id_window_end(${id})`;
}

/**
 * createdAtOfId for a row whose `column` is its transaction's now() and whose id was minted later
 * in that transaction (usage_records: created_at defaults to now(), the id is onceline_id() of the
 * INSERT): the column is at most the id's time, and earlier by at most the transaction's age, so
 * the window reaches `before` (an SQL interval) back from the id's time and 5 minutes after it
 * (onceline_id_window_start/end: clock steps, ids minted in JS just before the transaction began).
 * A row outside it (a transaction older than `before`) is not found through this window: the
 * caller looks again without it.
 */
export function createdAtUpToId(id: string, before: string, column = 'created_at'): string {
  return `${column} BETWEEN onceline_id_window_start(${id}) - interval '${before}' AND onceline_id_window_end(${id})`;
}

/** createdAtOfId for a lookup by any of several ids (`ids`: SQL text[]): the span of their windows. */
export function createdAtOfIds(ids: string, column = 'created_at'): string {
  return `${column} BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest(${ids}) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest(${ids}) AS x)`;
}

/**
 * SQL naming the partition key of a table partitioned by an id column's time (messages,
 * message_status_history, outbound_events, webhook_deliveries, webhook_delivery_attempts:
 * `PARTITION BY RANGE (onceline_id_key(column))`, migrations 0044-0047) for a lookup by one id
 * (`id`: SQL text of it): exact, as the key is computed from the id itself, so the lookup is
 * pruned to the one partition that holds it when its plan starts. `column`: the key's column
 * (the message's id for its history, the event's for its deliveries).
 */
export function idKeyOf(id: string, column = 'id'): string {
  return `onceline_id_key(${column}) = onceline_id_key_of(${id})`;
}
