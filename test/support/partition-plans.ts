import pg from 'pg';

/** What one statement of the app read: its text (whitespace collapsed) and, per watched table, the partitions its scans ran on. */
export interface StatementReads {
  text: string;
  scanned: Record<string, string[]>;
}

/**
 * The partitions of `table` whose scans ran in an EXPLAIN (ANALYZE, FORMAT JSON) plan: a partition
 * pruned when the plan was made or started is not in it, one pruned while it ran (a value from an
 * initplan or from the outer side of a nested loop) is there but "never executed" (0 loops).
 */
export function partitionsRan(plan: unknown, table: string): string[] {
  const ran = new Set<string>();
  const partition = new RegExp(`^${table}_(p\\d{8}t\\d{6}|legacy)$`);
  const walk = (node: Record<string, unknown>) => {
    const relation = node['Relation Name'];
    if (typeof relation === 'string' && partition.test(relation) && String(node['Node Type']).includes('Scan') && Number(node['Actual Loops']) > 0) ran.add(relation);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  walk((plan as { Plan: Record<string, unknown> }[])[0].Plan);
  return [...ran].sort();
}

/**
 * Runs `run` (the app, in this process) and, right before each statement it sends that names one
 * of `tables`, runs that statement with the same values as EXPLAIN ANALYZE on the same connection,
 * undone at once (in the app's transaction: between SAVEPOINT and ROLLBACK TO; outside one: between
 * BEGIN and ROLLBACK), and records the partitions its scans ran on. The app's own statements are
 * so read as they run, against the state they run on, their transaction's own writes and locks
 * included. The test's plan is a custom plan (its values known when planning); a generic one
 * prunes the same partitions when it starts.
 */
export async function partitionsRead<T>(tables: string[], run: () => Promise<T>): Promise<{ result: T; statements: StatementReads[] }> {
  type Client = { query: (config: unknown, ...rest: unknown[]) => unknown; getTransactionStatus(): string | null };
  const prototype = pg.Client.prototype as unknown as Client;
  const original = prototype.query;
  const watched = new RegExp(`^\\s*(WITH|SELECT|UPDATE|INSERT|DELETE)\\b[\\s\\S]*\\b(${tables.join('|')})\\b`, 'i');
  const statements: StatementReads[] = [];
  const explained: Promise<unknown>[] = [];
  prototype.query = function (this: Client, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
    const status = this.getTransactionStatus();
    if (text && watched.test(text) && (status === 'I' || status === 'T')) {
      // The status is the connection's after its last statement: right only when none is still queued.
      const busy = this as unknown as { _queryQueue: unknown[]; _activeQuery: unknown };
      if (busy._queryQueue.length > 0 || busy._activeQuery) explained.push(Promise.reject(new Error(`partitionsRead: sent behind a statement still running: ${text}`)));
      const values = (Array.isArray(rest[0]) ? rest[0] : (config as { values?: unknown[] }).values) ?? [];
      // Queued on this connection ahead of the app's statement, which runs after them as sent.
      const send = (sql: string, params?: unknown[]) => original.call(this, sql, params) as Promise<pg.QueryResult>;
      const [open, close] = status === 'T' ? ['SAVEPOINT partitions_read', 'ROLLBACK TO SAVEPOINT partitions_read'] : ['BEGIN', 'ROLLBACK'];
      explained.push(send(open));
      const plan = send(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
      explained.push(plan.then(({ rows }) => statements.push({ text: text.replace(/\s+/g, ' ').trim(), scanned: Object.fromEntries(tables.map((table) => [table, partitionsRan(rows[0]['QUERY PLAN'], table)])) })));
      explained.push(send(close));
    }
    return original.call(this, config, ...rest);
  };
  try {
    const result = await run();
    await Promise.all(explained);
    return { result, statements };
  } finally {
    prototype.query = original;
  }
}
