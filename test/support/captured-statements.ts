import pg from 'pg';

/** Every SQL text this process sends to PostgreSQL while `run` runs (the app runs in this process), whitespace collapsed. */
export async function captured<T>(run: () => Promise<T>): Promise<{ result: T; texts: string[] }> {
  const texts: string[] = [];
  const prototype = pg.Client.prototype as unknown as { query: (config: unknown, ...rest: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
    if (text) texts.push(text.replace(/\s+/g, ' ').trim());
    return original.call(this, config, ...rest);
  };
  try {
    return { result: await run(), texts };
  } finally {
    prototype.query = original;
  }
}
