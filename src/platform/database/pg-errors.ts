/** What a Postgres (or pg driver) error means for whoever ran the statement. */

const sqlState = (err: unknown): string => (err as { code?: string } | undefined)?.code ?? '';

/** Postgres unreachable or shutting down: the caller should retry. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '53300', '08006', '08001', '08003'].includes(e.code ?? '')) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(e.message ?? '');
}

/** A serialization failure or deadlock: the transaction rolled back and may simply run again. */
export function isSerializationConflict(err: unknown): boolean {
  return ['40001', '40P01'].includes(sqlState(err));
}

/** A unique index refused the row (SQLSTATE 23505): another row holds that key. */
export function isUniqueViolation(err: unknown): boolean {
  return sqlState(err) === '23505';
}

/** A foreign key refused the row (SQLSTATE 23503): what it refers to does not exist. */
export function isForeignKeyViolation(err: unknown): boolean {
  return sqlState(err) === '23503';
}

/**
 * Postgres refused a value that no retry can store: SQLSTATE class 22 (data exception: a \u0000
 * in JSON text, a lone surrogate, a number or date out of range) or class 54 (program limit
 * exceeded: a key too long for its index, JSON nested past the stack depth limit). The input is
 * at fault, not the database: the caller gets a 4xx, and a batch it shared is written without it.
 */
export function isDataError(err: unknown): boolean {
  return unstorableReason(err) !== undefined;
}

const BAD_TEXT = 'text the database cannot hold: a NUL character (\\u0000) or an unpaired UTF-16 surrogate';

const BAD_TIME = 'a date or time out of range (or not valid)';

/** SQLSTATE → what the caller sent wrong, in words fit for a response (never the database's own text). */
const UNSTORABLE_REASONS: [prefix: string, reason: string][] = [
  ['22P05', BAD_TEXT],
  ['22021', BAD_TEXT],
  // Invalid text for its type: as the JSON of a verified body, an escaped unpaired surrogate.
  ['22P02', 'a value the database cannot read as its type (in JSON text: an unpaired UTF-16 surrogate escape)'],
  ['22003', 'a number out of range'],
  ['22007', BAD_TIME],
  ['22008', BAD_TIME],
  ['22009', BAD_TIME],
  ['22001', 'a text value too long'],
  ['54000', 'a value too long to store (an id or key past its length limit)'],
  ['54001', 'JSON nested too deeply to store'],
  ['22', 'a value that cannot be stored'],
  ['54', 'a value too large to store'],
];

/** Why Postgres refused a value (see isDataError), in the caller's terms; undefined for any other error. */
export function unstorableReason(err: unknown): string | undefined {
  const code = sqlState(err);
  if (code.length !== 5) return undefined;
  return UNSTORABLE_REASONS.find(([prefix]) => code.startsWith(prefix))?.[1];
}

/** An error's message as stored on a row (error, note, last_error columns): at most 2,000 characters. */
export function storedMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 2000);
}

/**
 * Runs a write whose statement may lose a lock conflict to a concurrent one (a deadlock, a
 * serialization failure: nothing of it committed) again, up to `attempts` times in all.
 */
export async function retryingLockConflicts<T>(write: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!isSerializationConflict(err) || attempt >= attempts) throw err;
    }
  }
}
