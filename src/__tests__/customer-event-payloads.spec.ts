import { describe, expect, it } from '@jest/globals';
import { DECORATORS } from '@nestjs/swagger';
import { CUSTOMER_EVENT_PAYLOADS, type CustomerEventPayload } from '../customer-event-payloads.js';
import { CUSTOMER_EVENT_TYPES } from '../modules/webhooks/event-types.js';

describe('customer event payloads (the webhooks section of the API description)', () => {
  const payloads: Record<string, CustomerEventPayload | undefined> = CUSTOMER_EVENT_PAYLOADS;

  it.each([...CUSTOMER_EVENT_TYPES])('%s has a payload schema: a class whose fields are documented', (type) => {
    const payload = payloads[type];
    expect(payload).toBeDefined();
    const documented = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, payload!.data.prototype) as string[] | undefined;
    expect(documented).toEqual(expect.arrayContaining([':id']));
    expect(payload!.when).not.toBe('');
  });

  it('describes no type that is not a customer event type', () => {
    expect(Object.keys(payloads).filter((t) => !(CUSTOMER_EVENT_TYPES as readonly string[]).includes(t))).toEqual([]);
  });
});
