/** The carriers we speak to, by the name every table, route and setting uses for them. */
export type CarrierName = 'telnyx' | 'twilio' | 'vonage';

/** Every carrier a number can be on (the numbers API's enum, the database's CHECK constraints). */
export const CARRIER_NAMES = ['telnyx', 'twilio', 'vonage'] as const satisfies readonly CarrierName[];
