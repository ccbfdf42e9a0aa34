import { Injectable, UnprocessableEntityException } from '@nestjs/common';
import { IdPrefix } from '../../platform/ids.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { DispatchReplyJob } from './messaging.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { countSegments } from '../../telephony/segments.js';
import { isoTimestampSql } from '../../platform/database/cte-statement.js';
import { HELD } from '../numbers/phone-numbers.service.js';

/** Whole-message keywords (trimmed, any case) carriers and regulators expect a sender to honour. */
export const OPT_OUT_KEYWORDS = ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT'] as const;
export const OPT_IN_KEYWORDS = ['START', 'UNSTOP', 'YES'] as const;
export const HELP_KEYWORDS = ['HELP', 'INFO'] as const;

export type KeywordKind = 'opt_out' | 'opt_in' | 'help';

/** The replies an account has not set its own text for (accounts.keyword_replies). */
export const DEFAULT_KEYWORD_REPLIES: Record<KeywordKind, string> = {
  opt_out: 'You have been unsubscribed and will receive no more messages from this number. Reply START to resubscribe.',
  opt_in: 'You have been resubscribed. Reply STOP to unsubscribe.',
  help: 'Reply STOP to unsubscribe, START to resubscribe.',
};

/** A reply as accounts.keyword_replies holds it: its text, counted once when it was set. */
export function keywordReply(text: string): { text: string; segments: number; encoding: string } {
  return { text, ...countSegments(text) };
}

/** The SQL condition "an opt-out stops `account`'s messages from `fromNumber` to `toNumber`" (SQL expressions). */
export function optedOutSql(account: string, fromNumber: string, toNumber: string): string {
  // The account's scope decides which row counts: its own number's, or the account-wide one ('*').
  return `EXISTS (SELECT FROM message_opt_outs o JOIN accounts oa ON oa.id = o.account_id
                   WHERE o.account_id = ${account} AND o.handset = ${toNumber} AND o.opted_out
                     AND o.our_number = CASE oa.opt_out_scope WHEN 'account' THEN '*' ELSE ${fromNumber} END)`;
}

/**
 * The body of a data-modifying CTE that bumps `phone_numbers.opt_out_seq` of the numbers we hold
 * whose ids the query `ids` returns, written by the statement that changed their consent (see
 * migration 0021 and DispatchClaims.claimStatement). The rows are locked in id order first
 * (FOR NO KEY UPDATE, the lock the UPDATE takes), so two statements bumping the same numbers take
 * their locks in one order (no deadlock). `ids` starts from the change (usually no row), so no
 * statement scans the numbers it does not concern.
 */
export function optOutSeqBumpSql(ids: string): string {
  return `UPDATE phone_numbers p SET opt_out_seq = p.opt_out_seq + 1
            FROM (SELECT q.id FROM phone_numbers q WHERE q.id IN (${ids}) AND q.${HELD} ORDER BY q.id FOR NO KEY UPDATE) bump
           WHERE p.id = bump.id
          RETURNING p.id`;
}

/** POST /v2/messages to a handset that opted out of the sending number (or of the account). */
export function recipientOptedOut(to: string): UnprocessableEntityException {
  return new UnprocessableEntityException({
    errors: [{ code: 'recipient_opted_out', title: 'Recipient opted out', detail: `${to} replied with an opt-out keyword (STOP); it receives nothing until it replies START`, source: { pointer: '/to' } }],
  });
}

/**
 * The keywords among inbound messages just recorded, as fragments of the statement that
 * recorded them: the consent row written in that same statement, the reply queued with its
 * dispatch job, and the customer events to announce.
 */
@Injectable()
export class OptOutKeywords {
  constructor(private readonly outbox: OutboxService) {}

  /**
   * For the rows of CTE `received` (MESSAGE_COLUMNS of inbound messages this statement inserted:
   * a replayed or re-signed delivery inserted none, so it changes nothing here either). Returns a
   * CTE of (account_id, type, payload) of the message.opted_out / message.opted_in events.
   */
  applyCtes(stmt: CteStatement, received: string): string {
    const word = `upper(btrim(r.text, E' \\t\\r\\n'))`;
    const [out, into, help] = [OPT_OUT_KEYWORDS, OPT_IN_KEYWORDS, HELP_KEYWORDS].map((words) => stmt.param(words, 'text[]'));
    // FOR SHARE OF a: the scope is read from the account's row as locked, so a scope change in
    // flight (MessagingSettings.update holds the row FOR UPDATE) is waited for and its new scope
    // used; read from the snapshot instead, a STOP that waited for it (its number's row, the
    // account's for the foreign keys) would be written under the old scope, which no longer counts.
    // And a scope change that comes after waits for this statement's commit (and runs again when
    // it waited: MessagingSettings.update).
    const keywords = stmt.with(
      'opt_keyword',
      `SELECT r.id AS message_id, r.account_id, r."to" AS our_number, r."from" AS handset, r.carrier,
              CASE WHEN ${word} = ANY(${out}) THEN 'opt_out' WHEN ${word} = ANY(${into}) THEN 'opt_in' ELSE 'help' END AS keyword,
              CASE a.opt_out_scope WHEN 'account' THEN '*' ELSE r."to" END AS scope_number, a.keyword_replies
         FROM ${received} r JOIN accounts a ON a.id = r.account_id
        WHERE ${word} = ANY(${out}) OR ${word} = ANY(${into}) OR ${word} = ANY(${help})
          FOR SHARE OF a`,
    );
    // Within one batch the newest keyword counts.
    const { announced, events } = consentChangeCtes(
      stmt,
      'opt',
      `SELECT DISTINCT ON (account_id, scope_number, handset) account_id, scope_number, handset, keyword = 'opt_out' AS opted_out, message_id AS changed_by, 'keyword' AS source
         FROM ${keywords} WHERE keyword <> 'help'
        ORDER BY account_id, scope_number, handset, message_id DESC`,
    );
    this.queueReplies(stmt, keywords, announced);
    return events;
  }

  /**
   * The carrier refused or failed outbound messages because their recipient opted out at the
   * carrier (FailureReason `recipient_opted_out`), as fragments of the statement that failed
   * them (CTE `failed`: MESSAGE_COLUMNS): each recorded as an opt-out (source `carrier`) under
   * the account's scope, as a STOP would be, so later sends are refused before anything is
   * sent; a START from the handset clears it. Returns the CTE of the message.opted_out events.
   */
  carrierOptOutCtes(stmt: CteStatement, failed: string): string {
    return consentChangeCtes(
      stmt,
      'carrier_opt',
      // FOR SHARE OF a: the scope as locked, as for a keyword (applyCtes).
      `SELECT DISTINCT ON (account_id, scope_number, handset) * FROM (
         SELECT f.account_id, CASE a.opt_out_scope WHEN 'account' THEN '*' ELSE f."from" END AS scope_number,
                f."to" AS handset, true AS opted_out, f.id AS changed_by, 'carrier' AS source
           FROM ${failed} f JOIN accounts a ON a.id = f.account_id FOR SHARE OF a) c
        ORDER BY account_id, scope_number, handset, changed_by DESC`,
    ).events;
  }

  /** The reply to each HELP, and to each STOP/START that changed the consent: queued with its dispatch job (in the replies' own queue: DispatchReplyJob). */
  private queueReplies(stmt: CteStatement, keywords: string, announced: string): void {
    const defaults = stmt.param(JSON.stringify(Object.fromEntries(Object.entries(DEFAULT_KEYWORD_REPLIES).map(([k, text]) => [k, keywordReply(text)]))), 'jsonb');
    const queued = stmt.with(
      'opt_reply_queued',
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, auto_reply)
       SELECT onceline_id('${IdPrefix.Message}'), k.account_id, 'outbound', k.our_number, k.handset, reply->>'text', 'queued',
              (reply->>'segments')::int, reply->>'encoding', k.carrier, k.keyword
         FROM ${keywords} k CROSS JOIN LATERAL (SELECT coalesce(k.keyword_replies -> k.keyword, ${defaults} -> k.keyword) AS reply) r
        WHERE k.keyword = 'help' OR EXISTS (SELECT FROM ${announced} c WHERE c.changed_by = k.message_id)
       RETURNING id`,
    );
    stmt.with('opt_reply_history', `INSERT INTO message_status_history (message_id, status) SELECT id, 'queued' FROM ${queued}`);
    this.outbox.jobsFromCte(stmt, 'opt_reply_jobs', queued, DispatchReplyJob, { id: `'dispatch-' || id`, data: `jsonb_build_object('messageId', id)` });
  }
}

/**
 * A consent change, written by the statement that learnt it: `rows` (account_id, scope_number,
 * handset, opted_out, changed_by, source; one per consent row) upserted into message_opt_outs,
 * the opt_out_seq of the numbers it concerns bumped, and its events. CTE names start with `prefix`.
 */
function consentChangeCtes(stmt: CteStatement, prefix: string, rows: string): { announced: string; events: string } {
  // The guard: a row changes only when the consent does (opted_out differs), so a second STOP,
  // from the carrier or the handset, changes and announces nothing; a concurrent twin waits on
  // the row and then finds it already changed.
  const changed = stmt.with(
    `${prefix}_changed`,
    `INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by, source)
     SELECT account_id, scope_number, handset, opted_out, changed_by, source FROM (${rows}) r
     ON CONFLICT (account_id, handset, our_number) DO UPDATE
        SET opted_out = EXCLUDED.opted_out, changed_by = EXCLUDED.changed_by, source = EXCLUDED.source, changed_at = clock_timestamp()
      WHERE message_opt_outs.opted_out <> EXCLUDED.opted_out
     RETURNING account_id, our_number, handset, opted_out, changed_by, source, changed_at, (xmax = 0) AS inserted`,
  );
  // A START from a handset that never opted out is no change worth announcing or answering.
  const announced = stmt.with(`${prefix}_announced`, `SELECT * FROM ${changed} WHERE opted_out OR NOT inserted`);
  // Each consent that changed bumps opt_out_seq of the numbers it concerns (the number the
  // handset texted; every number of the account for an account-wide row), in this statement: a
  // dispatch claim that waited for one of those rows while this committed sees the bump and
  // runs again with a snapshot that sees the change (the guard rule; DispatchClaims.claimStatement).
  stmt.with(
    `${prefix}_seq_bumped`,
    optOutSeqBumpSql(
      `SELECT n.id FROM ${announced} c JOIN phone_numbers n ON n.phone_number = c.our_number AND n.account_id = c.account_id AND n.${HELD}
       UNION ALL
       SELECT n.id FROM ${announced} c JOIN phone_numbers n ON c.our_number = '*' AND n.account_id = c.account_id AND n.${HELD}`,
    ),
  );
  const events = stmt.with(
    `${prefix}_events`,
    `SELECT account_id, CASE WHEN opted_out THEN 'message.opted_out' ELSE 'message.opted_in' END AS type,
            jsonb_build_object('id', changed_by, 'record_type', 'opt_out', 'handset', handset, 'number', NULLIF(our_number, '*'),
                               'scope', CASE our_number WHEN '*' THEN 'account' ELSE 'number' END, 'opted_out', opted_out, 'source', source,
                               'changed_at', ${isoTimestampSql('changed_at')}) AS payload
       FROM ${announced}`,
  );
  return { announced, events };
}
