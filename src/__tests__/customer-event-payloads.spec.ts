import { describe, expect, it } from '@jest/globals';
import { DECORATORS } from '@nestjs/swagger';
import { CUSTOMER_EVENT_PAYLOADS, type CustomerEventPayload } from '../customer-event-payloads.js';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CUSTOMER_EVENT_TYPES } from '../modules/webhooks/event-types.js';

// Each module declares the types it emits in its <module>.events.ts: load them all, as the app does.
const MODULES = resolve(dirname(fileURLToPath(import.meta.url)), '../modules');
const eventFiles = readdirSync(MODULES).flatMap((m) => readdirSync(join(MODULES, m)).filter((f) => f.endsWith('.events.ts')).map((f) => `../modules/${m}/${f.replace(/\.ts$/, '.js')}`));
for (const file of eventFiles) await import(file);

describe('customer event payloads (the webhooks section of the API description)', () => {
  const payloads: Record<string, CustomerEventPayload | undefined> = CUSTOMER_EVENT_PAYLOADS;

  it('loads the types of every module that emits events', () => {
    expect(eventFiles.length).toBeGreaterThanOrEqual(4);
    expect(CUSTOMER_EVENT_TYPES.length).toBe(18);
  });

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
