/**
 * The turn a call's events take (SQL over `session`, the call's session id as text): a
 * transaction advisory lock on the session, since the call row may not exist before its first
 * event. Every run of a call's event holds it while it decides: a job's run in a transaction
 * (CarrierEventProcessor.lockCallSql) and a statement deciding call events in sets
 * (EventBatchRun.takeCallTurns). `wait: false`: the turn only if it is free now (true), else false.
 */
export function callTurnLockSql(session: string, { wait = true } = {}): string {
  return `${wait ? 'pg_advisory_xact_lock' : 'pg_try_advisory_xact_lock'}(hashtextextended('call-session:' || ${session}, 0))`;
}

/**
 * SQL boolean over carrier event row `p`: an event of call session `session` that nobody has tried
 * yet (no attempt, no error, not waiting for a handler, unprocessed) and that arrived before the
 * event (`createdAt`, `id`). A run of a call's event handles those first (CarrierEventProcessor);
 * a statement deciding in sets leaves an event that has one to that run.
 */
export function untriedEarlierEventSql(p: string, session: string, createdAt: string, id: string): string {
  return `${p}.normalized ? 'callSessionId' AND ${p}.normalized->>'callSessionId' = ${session} AND ${p}.processed_at IS NULL
          AND ${p}.attempts = 0 AND ${p}.error IS NULL AND ${p}.unhandled_since IS NULL AND (${p}.created_at, ${p}.id) < (${createdAt}, ${id})`;
}
