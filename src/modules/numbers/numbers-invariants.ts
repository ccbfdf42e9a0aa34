import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Invariants, violations } from '../../platform/verify/invariants.js';

/**
 * Numbers' promises, as checks over committed rows: a number we released is released at its
 * carrier. A release that failed (the carrier's lookup found no such number of ours, a refusal)
 * leaves the number releasing with its error, and verify names it until it is released.
 */
@Injectable()
export class NumbersInvariants implements OnModuleInit {
  constructor(private readonly invariants: Invariants) {}

  onModuleInit(): void {
    this.invariants.register(
      'numbers.release_failing',
      'no releasing number has a failed release at its carrier (phone number ids: see release_error; numbers:release-retry ID once the cause is fixed)',
      (snapshot, limit) => violations(snapshot, `SELECT id FROM phone_numbers WHERE status = 'releasing' AND release_error IS NOT NULL`, [], limit),
    );
  }
}
