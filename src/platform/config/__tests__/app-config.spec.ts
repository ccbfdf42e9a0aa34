import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '../app-config.js';

describe('MESSAGE_SEND_RATE_DEFAULT', () => {
  it('is unset by default (each number: its own rate, else the default for its carrier and type)', () => {
    expect(loadConfig({}).MESSAGE_SEND_RATE_DEFAULT).toBeUndefined();
    expect(loadConfig({ MESSAGE_SEND_RATE_DEFAULT: '' }).MESSAGE_SEND_RATE_DEFAULT).toBeUndefined();
  });

  it.each([['0.5', 0.5], ['0.01', 0.01], ['1', 1], ['12.25', 12.25], ['1000', 1000]])('takes %p segments per second, fractions too (as the API and the column do)', (value, rate) => {
    expect(loadConfig({ MESSAGE_SEND_RATE_DEFAULT: value }).MESSAGE_SEND_RATE_DEFAULT).toBe(rate);
  });

  it.each(['0', '-1', '0.001', '1.005', '1001', 'fast', 'Infinity', '1e400'])('refuses %p, naming the setting', (value) => {
    expect(() => loadConfig({ MESSAGE_SEND_RATE_DEFAULT: value })).toThrow(/MESSAGE_SEND_RATE_DEFAULT=/);
  });
});

describe('WEBHOOK_DELIVERIES_RETENTION_HOURS', () => {
  it('defaults to the events\' retention (720 h) and may be shorter, never longer (a delivery\'s listing joins its event)', () => {
    expect(loadConfig({})).toMatchObject({ WEBHOOK_DELIVERIES_RETENTION_HOURS: 720, CUSTOMER_EVENTS_RETENTION_HOURS: 720, MESSAGES_RETENTION_HOURS: 720 });
    expect(loadConfig({ WEBHOOK_DELIVERIES_RETENTION_HOURS: '168' }).WEBHOOK_DELIVERIES_RETENTION_HOURS).toBe(168);
    expect(() => loadConfig({ WEBHOOK_DELIVERIES_RETENTION_HOURS: '721' })).toThrow(/WEBHOOK_DELIVERIES_RETENTION_HOURS=.*CUSTOMER_EVENTS_RETENTION_HOURS = 720/);
  });
});
