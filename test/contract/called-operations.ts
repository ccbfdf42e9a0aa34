/**
 * Every carrier operation src/carriers can call, and where its URL is built: the contract tier
 * (carrier-operations.test.ts) calls each through the real client against a validating fake, and
 * proves this list complete by reading src/carriers for the paths it builds.
 */
export interface CalledOperation {
  /** `operationId METHOD /template`, as the vendored document names it. */
  operation: string;
  /** The file under src/carriers/ that builds the request. */
  source: string;
  /** The path as the source writes it, `${…}` as `{}` and without its query. */
  literal: string;
}

export const CALLED_OPERATIONS: CalledOperation[] = [
  // Sends
  { operation: 'SendMessage POST /messages', source: 'telnyx/telnyx-message-sender.ts', literal: '/messages' },
  { operation: 'CreateMessage POST /2010-04-01/Accounts/{AccountSid}/Messages.json', source: 'twilio/twilio-message-sender.ts', literal: '/2010-04-01/Accounts/{}/Messages.json' },
  { operation: 'SendMessage POST /', source: 'vonage/vonage-message-sender.ts', literal: '/v1/messages' },
  // Lookups of a send whose answer was lost (MessageSender.findSent)
  { operation: 'SearchDetailRecords GET /detail_records', source: 'telnyx/telnyx-message-sender.ts', literal: '/detail_records' },
  { operation: 'ListMessage GET /2010-04-01/Accounts/{AccountSid}/Messages.json', source: 'twilio/twilio-message-sender.ts', literal: '/2010-04-01/Accounts/{}/Messages.json' },
  { operation: 'get-records GET /v2/reports/records', source: 'vonage/vonage-message-sender.ts', literal: '/v2/reports/records' },
  // Telnyx Call Control: `/calls` dials; `/calls/{}/actions/{}` is every action of CallCommand (src/carriers/call-control.ts).
  { operation: 'DialCall POST /calls', source: 'telnyx/telnyx-call-control.ts', literal: '/calls' },
  { operation: 'AnswerCall POST /calls/{call_control_id}/actions/answer', source: 'telnyx/telnyx-call-control.ts', literal: '/calls/{}/actions/{}' },
  { operation: 'BridgeCall POST /calls/{call_control_id}/actions/bridge', source: 'telnyx/telnyx-call-control.ts', literal: '/calls/{}/actions/{}' },
  { operation: 'HangupCall POST /calls/{call_control_id}/actions/hangup', source: 'telnyx/telnyx-call-control.ts', literal: '/calls/{}/actions/{}' },
  { operation: 'StartCallRecord POST /calls/{call_control_id}/actions/record_start', source: 'telnyx/telnyx-call-control.ts', literal: '/calls/{}/actions/{}' },
  { operation: 'StartCallTranscription POST /calls/{call_control_id}/actions/transcription_start', source: 'telnyx/telnyx-call-control.ts', literal: '/calls/{}/actions/{}' },
  // Numbers: Telnyx
  { operation: 'ListAvailablePhoneNumbers GET /available_phone_numbers', source: 'telnyx/telnyx-numbers.ts', literal: '/available_phone_numbers' },
  { operation: 'ListNumberOrders GET /number_orders', source: 'telnyx/telnyx-numbers.ts', literal: '/number_orders' },
  { operation: 'CreateNumberOrder POST /number_orders', source: 'telnyx/telnyx-numbers.ts', literal: '/number_orders' },
  { operation: 'RetrieveNumberOrder GET /number_orders/{number_order_id}', source: 'telnyx/telnyx-numbers.ts', literal: '/number_orders/{}' },
  { operation: 'ListPhoneNumbers GET /phone_numbers', source: 'telnyx/telnyx-numbers.ts', literal: '/phone_numbers' },
  { operation: 'DeletePhoneNumber DELETE /phone_numbers/{id}', source: 'telnyx/telnyx-numbers.ts', literal: '/phone_numbers/{}' },
  // Numbers: Twilio (paths under `/2010-04-01/Accounts/{AccountSid}`, which twilio-numbers.ts builds once)
  { operation: 'ListAvailablePhoneNumberLocal GET /2010-04-01/Accounts/{AccountSid}/AvailablePhoneNumbers/{CountryCode}/Local.json', source: 'twilio/twilio-numbers.ts', literal: '/AvailablePhoneNumbers/{}/Local.json' },
  { operation: 'CreateIncomingPhoneNumber POST /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers.json', source: 'twilio/twilio-numbers.ts', literal: '/IncomingPhoneNumbers.json' },
  { operation: 'ListIncomingPhoneNumber GET /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers.json', source: 'twilio/twilio-numbers.ts', literal: '/IncomingPhoneNumbers.json' },
  { operation: 'DeleteIncomingPhoneNumber DELETE /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers/{Sid}.json', source: 'twilio/twilio-numbers.ts', literal: '/IncomingPhoneNumbers/{}.json' },
  // Numbers: Vonage
  { operation: 'getAvailableNumbers GET /number/search', source: 'vonage/vonage-numbers.ts', literal: '/number/search' },
  { operation: 'buyANumber POST /number/buy', source: 'vonage/vonage-numbers.ts', literal: '/number/buy' },
  { operation: 'updateANumber POST /number/update', source: 'vonage/vonage-numbers.ts', literal: '/number/update' },
  { operation: 'cancelANumber POST /number/cancel', source: 'vonage/vonage-numbers.ts', literal: '/number/cancel' },
  { operation: 'getOwnedNumbers GET /account/numbers', source: 'vonage/vonage-numbers.ts', literal: '/account/numbers' },
];

/** Path prefixes a client builds once and puts before the literals above (not operations themselves). */
export const BASE_LITERALS: { source: string; literal: string }[] = [
  { source: 'twilio/twilio-numbers.ts', literal: '/2010-04-01/Accounts/{}' },
  // ListMessage's next_page_uri is a path from the API's root: the sender checks that prefix before following it.
  { source: 'twilio/twilio-message-sender.ts', literal: '/2010-04-01/' },
];

/** Twilio Voice: the app answers Twilio's callbacks with TwiML and calls no Twilio Voice operation (no Calls API request). */
export const NOT_CALLED = ['Twilio Calls API (CreateCall, UpdateCall): TwiML answers only'];
