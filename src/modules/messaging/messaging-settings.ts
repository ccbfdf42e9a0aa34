import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { exec, queryRows } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { HELD } from '../numbers/phone-numbers.service.js';
import type { KeywordRepliesDto, MessagingSettingsView, OptOutScope } from './messaging-settings.dto.js';
import { DEFAULT_KEYWORD_REPLIES, HELP_KEYWORDS, keywordReply, OPT_IN_KEYWORDS, OPT_OUT_KEYWORDS, optOutSeqBumpSql, type KeywordKind } from './opt-out-keywords.js';

const KINDS = Object.keys(DEFAULT_KEYWORD_REPLIES) as KeywordKind[];

/** The account's columns as stored. */
type StoredSettings = { opt_out_scope: OptOutScope; keyword_replies: Partial<Record<KeywordKind, { text: string }>> };

/** The account's opt-out scope and keyword replies (accounts.opt_out_scope, accounts.keyword_replies). */
@Injectable()
export class MessagingSettings {
  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
  ) {}

  async get(accountId: string): Promise<MessagingSettingsView> {
    const [row] = await queryRows<StoredSettings>(this.dataSource.manager, `SELECT opt_out_scope, keyword_replies FROM accounts WHERE id = $1`, [accountId]);
    return view(row);
  }

  /**
   * Sets the scope and the replies given (null: back to the default), in one statement. A scope
   * change carries the opt-outs recorded under the old one into the new (number → account: a
   * handset that opted out of any number is opted out of the account; account → number: of every
   * number the account holds), so a change never lets a message through to a handset that said STOP.
   */
  async update(accountId: string, change: { scope?: OptOutScope; replies?: KeywordRepliesDto }): Promise<MessagingSettingsView> {
    const given = KINDS.filter((k) => change.replies?.[k] !== undefined);
    const set = Object.fromEntries(given.filter((k) => change.replies![k] !== null).map((k) => [k, keywordReply(change.replies![k]!)]));
    const reset = given.filter((k) => change.replies![k] === null);
    const params = [accountId, change.scope ?? null, JSON.stringify(set), reset];
    const [first] = (await exec<UpdateRow>(this.dataSource.manager, UPDATE_SQL, params)).rows;
    if (!first.consent_changed) return view(first);
    // A consent changed while the statement waited for the account's row (or a number's): it
    // wrote nothing. Again, in a transaction that locks the account's row alone first: a keyword
    // statement reads the scope FOR SHARE of that row before it writes a consent, so none is in
    // flight once we hold it, and the statement's snapshot, taken after, sees every one committed.
    return this.uow.run(async (tx) => {
      await exec(tx, `SELECT FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
      const [again] = (await exec<UpdateRow>(tx, UPDATE_SQL, params)).rows;
      if (again.consent_changed) throw new Error(`messaging settings of ${accountId}: a consent changed under the account's row lock`);
      return view(again);
    });
  }
}

/** The update statement's one row: the settings as changed, or `consent_changed` (nothing written; run it again). */
type UpdateRow = StoredSettings & { consent_changed: boolean };

/**
 * Sets the scope and the replies ($1 the account, $2 the scope or null, $3 replies set, $4
 * replies reset), in one statement; see MessagingSettings.update. `before` locks the account row:
 * a concurrent change waits, then sees this one's scope.
 */
const UPDATE_SQL = `WITH before AS (SELECT id, opt_out_scope AS previous FROM accounts WHERE id = $1 FOR UPDATE),
       -- A scope change: the account's numbers, locked in id order (as every opt_out_seq bump
       -- takes them), at their newest opt_out_seq. A keyword statement that committed while this
       -- one waited (for the account's row, which it reads FOR SHARE, or for a number's, which it
       -- bumps) moved the seq of a number it concerns: its consent row is not in this statement's
       -- snapshot, so the carry below would miss it. Then nothing is written (consent_changed)
       -- and the statement runs again (the guard rule: decided from the locked rows).
       numbers_locked AS (
         SELECT q.id, q.opt_out_seq AS locked_seq FROM phone_numbers q JOIN before b ON q.account_id = b.id
          WHERE q.${HELD} AND b.previous <> coalesce($2::text, b.previous)
          ORDER BY q.id FOR NO KEY UPDATE OF q
       ),
       consent AS (
         SELECT EXISTS (SELECT FROM numbers_locked n WHERE n.locked_seq IS DISTINCT FROM (SELECT s.opt_out_seq FROM phone_numbers s WHERE s.id = n.id)) AS changed
       ),
       changed AS (
         UPDATE accounts a SET opt_out_scope = coalesce($2::text, a.opt_out_scope), keyword_replies = (a.keyword_replies || $3::jsonb) - $4::text[]
           FROM before, consent WHERE a.id = before.id AND NOT consent.changed
         RETURNING a.id, a.opt_out_scope, a.keyword_replies, before.previous
       ),
       carried AS (
         -- the opt-outs of the old scope, as rows of the new one (one per handset and key)
         SELECT DISTINCT ON (o.handset, k.our_number) o.account_id, k.our_number, o.handset, o.changed_by
           FROM changed c JOIN message_opt_outs o ON o.account_id = c.id AND o.opted_out
           CROSS JOIN LATERAL (
             SELECT '*' AS our_number WHERE c.previous = 'number' AND c.opt_out_scope = 'account' AND o.our_number <> '*'
             UNION ALL
             SELECT p.phone_number FROM phone_numbers p
              WHERE c.previous = 'account' AND c.opt_out_scope = 'number' AND o.our_number = '*' AND p.account_id = c.id AND p.${HELD}
           ) k
          ORDER BY o.handset, k.our_number, o.changed_at DESC
       ),
       -- the guard: only a row not already opted out changes (run whether read or not, as any data-modifying CTE)
       opted AS (
         INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by)
         SELECT account_id, our_number, handset, true, changed_by FROM carried
         ON CONFLICT (account_id, handset, our_number) DO UPDATE SET opted_out = true, changed_by = EXCLUDED.changed_by, changed_at = clock_timestamp()
          WHERE NOT message_opt_outs.opted_out
         RETURNING 1
       ),
       -- a new scope changes which opt-out counts for every number of the account: a dispatch
       -- claim waiting for one of their rows meanwhile runs again (DispatchClaims.claimStatement)
       scope_seq_bumped AS (${optOutSeqBumpSql(`SELECT n.id FROM changed c JOIN phone_numbers n ON n.account_id = c.id AND n.${HELD} WHERE c.previous <> c.opt_out_scope`)})
       SELECT (SELECT changed FROM consent) AS consent_changed, c.opt_out_scope, c.keyword_replies FROM (VALUES (1)) AS one (n) LEFT JOIN changed c ON true`;

function view(row: StoredSettings): MessagingSettingsView {
  const replies = Object.fromEntries(
    KINDS.map((k) => {
      const own = row.keyword_replies[k]?.text;
      return [k, own === undefined ? { text: DEFAULT_KEYWORD_REPLIES[k], default: true } : { text: own, default: false }];
    }),
  ) as unknown as MessagingSettingsView['keyword_replies'];
  return {
    record_type: 'messaging_settings',
    opt_out_scope: row.opt_out_scope,
    keyword_replies: replies,
    keywords: { opt_out: [...OPT_OUT_KEYWORDS], opt_in: [...OPT_IN_KEYWORDS], help: [...HELP_KEYWORDS] },
  };
}
