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
 * Runs `run` (the app, in this process) and, before each statement it sends that names one of
 * `tables`, runs that statement with the same values as EXPLAIN ANALYZE on a connection of the
 * test's own, in a transaction rolled back, and records the partitions its scans ran on; then the
 * statement goes on as the app sent it. The app's own statements are so read as they run, against
 * the state they run on (a statement of a transaction sees nothing that transaction wrote before
 * it: keep to paths whose watched statement comes first). The test's plan is a custom plan (its
 * values known when planning); a generic one prunes the same partitions when it starts.
 */
export async function partitionsRead<T>(url: string, tables: string[], run: () => Promise<T>): Promise<{ result: T; statements: StatementReads[] }> {
  const explainer = new pg.Client({ connectionString: url });
  await explainer.connect();
  const prototype = pg.Client.prototype as unknown as { query: (config: unknown, ...rest: unknown[]) => unknown };
  const original = prototype.query;
  const send = (sql: string, values?: unknown[]) => original.call(explainer, sql, values) as Promise<pg.QueryResult>;
  // A row lock the app holds would make the EXPLAIN wait for the app, which waits for it: fail instead.
  await send(`SET lock_timeout = '5s'`);
  const watched = new RegExp(`^\\s*(WITH|SELECT|UPDATE|INSERT|DELETE)\\b[\\s\\S]*\\b(${tables.join('|')})\\b`, 'i');
  const statements: StatementReads[] = [];
  const errors: unknown[] = [];
  let chain = Promise.resolve();
  const explain = (text: string, values: unknown[]) => {
    chain = chain.then(async () => {
      await send('BEGIN');
      try {
        const { rows } = await send(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
        const plan = rows[0]['QUERY PLAN'];
        statements.push({ text: text.replace(/\s+/g, ' ').trim(), scanned: Object.fromEntries(tables.map((table) => [table, partitionsRan(plan, table)])) });
      } catch (err) {
        errors.push(err);
      } finally {
        await send('ROLLBACK');
      }
    });
    return chain;
  };
  prototype.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
    if (this === explainer || !text || !watched.test(text)) return original.call(this, config, ...rest);
    const values = (Array.isArray(rest[0]) ? rest[0] : (config as { values?: unknown[] }).values) ?? [];
    const explained = explain(text, values);
    if (rest.some((arg) => typeof arg === 'function')) {
      void explained.then(() => original.call(this, config, ...rest));
      return undefined;
    }
    return explained.then(() => original.call(this, config, ...rest));
  };
  try {
    const result = await run();
    await chain;
    if (errors.length > 0) throw errors[0];
    return { result, statements };
  } finally {
    prototype.query = original;
    await explainer.end();
  }
}
