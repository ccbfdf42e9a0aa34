/**
 * The customer event types of the published contract (docs/contract.md, "Customer webhooks").
 * Webhooks keeps only the mechanism: each module that emits events declares its own types in its
 * `<module>.events.ts` (declareCustomerEventTypes, imported by its @Module file) and adds them to
 * CustomerEventTypesByModule, so `CustomerEventType` is every declared type. Endpoints subscribe
 * to these; emitters may only emit these. Adding a type is additive; stored types never change.
 */
export interface CustomerEventTypesByModule {}

export type CustomerEventType = CustomerEventTypesByModule[keyof CustomerEventTypesByModule];

/** `<resource>.<what_happened>` */
const TYPE = /^[a-z]+\.[a-z_]+$/;

const declared: CustomerEventType[] = [];

/**
 * Every declared type, sorted, whatever order the modules loaded in. One array, filled as the
 * modules load: readers hold it (validation, the API description) and read it once the app is up.
 */
export const CUSTOMER_EVENT_TYPES: readonly CustomerEventType[] = declared;

/** Declares the types one module emits; a type declared twice (two owners) is refused. */
export function declareCustomerEventTypes<const T extends readonly string[]>(types: T): T {
  for (const type of types) {
    if (!TYPE.test(type)) throw new Error(`a customer event type is <resource>.<what_happened>, not ${JSON.stringify(type)}`);
    if ((declared as string[]).includes(type)) throw new Error(`customer event type ${type} is declared twice`);
    declared.push(type as CustomerEventType);
  }
  declared.sort();
  return types;
}

/** Version of the event payload shape; stored on every outbound_events row. */
export const CUSTOMER_EVENT_VERSION = 1;

export function isCustomerEventType(value: unknown): value is CustomerEventType {
  return typeof value === 'string' && (CUSTOMER_EVENT_TYPES as readonly string[]).includes(value);
}
