import { randomUUID } from 'node:crypto';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { exec, type Tx } from '../../platform/database/tx.js';

/**
 * How long a release run's claim on a number lasts; no other run calls the carrier for that
 * number before it ends. A run makes a lookup (a number stored without the carrier's id), the
 * release, and (Vonage, after a 420) a lookup again, each request bounded by the carrier client's
 * 10 s timeout (CARRIER_SEND_TIMEOUT_MS), so this outlasts a live run with room to spare; a run
 * that died has its number released by the next run about this long after it claimed it.
 */
export const RELEASE_LEASE_SECONDS = 120;

/** What a release run needs to call the carrier, and the token its outcome is recorded under. */
export interface ReleaseClaim {
  id: string;
  /** This run's lease: recordReleased/recordFailedAttempt record only under the number's current token. */
  token: string;
  phone_number: string;
  carrier: CarrierName;
  carrier_number_id: string | null;
  country: string | null;
}

/**
 * What a release run may do: call the carrier under its claim; leave the number to the run that
 * holds its lease until `until`; check again later (a call on the number is in progress); or
 * nothing (not releasing: released already, or never asked).
 */
export type ReleaseClaimOutcome =
  | { kind: 'claimed'; claim: ReleaseClaim }
  | { kind: 'leased'; holder: string; until: Date }
  | { kind: 'busy' }
  | { kind: 'done' };

type ClaimStatementRow = { holder: string | null; held_until: Date | null; lease_live: boolean; busy: boolean } & (ReleaseClaim | { [K in keyof ReleaseClaim]: null });

/**
 * Claims a releasing number for one carrier release, under a fresh token leased for
 * `leaseSeconds`, unless another run's lease on it is live or a call on it is in progress (no new
 * call can start: a releasing number does not route). One statement: `locked` takes the number's
 * row (a twin's claim, a release being recorded, the operator's retry: it waits for them, then
 * reads what they committed), the UPDATE claims it.
 */
export async function claimRelease(tx: Tx, numberId: string, leaseSeconds: number): Promise<ReleaseClaimOutcome> {
  const { rows } = await exec<ClaimStatementRow>(
    tx,
    // The guard: still releasing (locked's WHERE), no live lease and no call in progress (the
    // UPDATE's WHERE). The calls table is read, never written, here.
    `WITH locked AS (
       SELECT p.id AS locked_id, p.release_token AS holder, p.release_leased_until AS held_until,
              coalesce(p.release_leased_until > now(), false) AS lease_live,
              EXISTS (SELECT FROM calls c WHERE c.account_id = p.account_id AND (c.to_number = p.phone_number OR c.from_number = p.phone_number)
                                            AND c.status IN ('ringing', 'in_progress')) AS busy
         FROM phone_numbers p WHERE p.id = $1 AND p.status = 'releasing' FOR UPDATE OF p),
     claimed AS (
       UPDATE phone_numbers p SET release_token = $2, release_leased_until = now() + make_interval(secs => $3)
         FROM locked WHERE p.id = locked.locked_id AND NOT locked.lease_live AND NOT locked.busy
       RETURNING p.id, p.release_token AS token, p.phone_number, p.carrier, p.carrier_number_id, p.country)
     SELECT locked.holder, locked.held_until, locked.lease_live, locked.busy, claimed.* FROM locked LEFT JOIN claimed ON true`,
    [numberId, randomUUID(), leaseSeconds],
  );
  const row = rows[0];
  if (!row) return { kind: 'done' };
  const { holder, held_until: heldUntil, lease_live: leaseLive, busy, ...taken } = row;
  if (taken.id !== null) return { kind: 'claimed', claim: taken };
  if (leaseLive) return { kind: 'leased', holder: holder!, until: heldUntil! };
  return busy ? { kind: 'busy' } : { kind: 'done' };
}

/**
 * The carrier confirmed the release: `released`, its error cleared, its lease given back; the
 * account, for number.released. Undefined when this run no longer holds the number (its lease was
 * taken over: that run records its own outcome) or it is no longer releasing.
 */
export async function recordReleased(tx: Tx, lease: Pick<ReleaseClaim, 'id' | 'token'>): Promise<string | undefined> {
  const { rows } = await exec<{ account_id: string }>(
    tx,
    // Releasing, under this run's token: a twin run that released it too (or took its lease over) emits nothing here.
    `UPDATE phone_numbers SET status = 'released', released_at = now(), release_error = NULL, release_leased_until = NULL
      WHERE id = $1 AND status = 'releasing' AND release_token = $2 RETURNING account_id`,
    [lease.id, lease.token],
  );
  return rows[0]?.account_id;
}

/**
 * A failed attempt (nothing found, a refusal, no answer): counted with its error, and the lease
 * given back so the next run (the job's backoff, the operator's retry) claims at once. False when
 * this run no longer holds the number or it is no longer releasing.
 */
export async function recordFailedAttempt(tx: Tx, lease: Pick<ReleaseClaim, 'id' | 'token'>, error: string): Promise<boolean> {
  const { affected } = await exec(
    tx,
    // Releasing, under this run's token: a number released meanwhile keeps no error, and a run whose lease was taken over counts nothing.
    `UPDATE phone_numbers SET release_attempts = release_attempts + 1, release_error = left($3, 1000), release_leased_until = NULL
      WHERE id = $1 AND status = 'releasing' AND release_token = $2`,
    [lease.id, lease.token, error],
  );
  return affected > 0;
}
