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

/** Postgres refused a value (SQLSTATE class 22: a \u0000 in JSON text, a lone surrogate). */
export function isDataError(err: unknown): boolean {
  return sqlState(err).startsWith('22');
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
