import { describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { declareJobs, defineJob } from '../job-definition.js';
import { HandlesJob, type JobHandler } from '../job-handler.js';
import { assertOneHandlerPerJob, JobRegistry } from '../job-registry.js';

const spec = { mode: 'transactional', lane: 'bulk', attempts: 1, backoffMs: 1 } as const;
const Tick = defineJob<{ n: number }>({ ...spec, name: 'tick', queue: 'clock' });
const Tock = defineJob<{ n: number }>({ ...spec, name: 'tock', queue: 'clock' });
const Ring = defineJob<{ n: number }>({ ...spec, name: 'ring', queue: 'bell' });

@Injectable() @HandlesJob(Tick) class TickHandler implements JobHandler<typeof Tick> { async handle() {} }
@Injectable() @HandlesJob(Tock) class TockHandler implements JobHandler<typeof Tock> { async handle() {} }
@Injectable() @HandlesJob(Tock) class SecondTockHandler implements JobHandler<typeof Tock> { async handle() {} }
@Injectable() @HandlesJob(Ring) class RingHandler implements JobHandler<typeof Ring> { async handle() {} }

/** Two feature-like modules, each declaring its own jobs beside their handlers, and the registry. */
@Module({ providers: [declareJobs(Tick, Tock), TickHandler, TockHandler] })
class ClockModule {}

async function boot(...modules: (new () => unknown)[]): Promise<JobRegistry> {
  const ref = await Test.createTestingModule({ imports: [DiscoveryModule, ...modules], providers: [JobRegistry] }).compile();
  await ref.init();
  return ref.get(JobRegistry);
}

describe('jobs are declared by the module that owns them, each with exactly one handler', () => {
  it('boots with every declared job handled once, and knows each job and queue', async () => {
    @Module({ providers: [declareJobs(Ring), RingHandler] })
    class BellModule {}
    const registry = await boot(ClockModule, BellModule);
    expect(registry.spec('tock')).toBe(Tock);
    expect(registry.get('ring')).toBeInstanceOf(RingHandler);
    expect(registry.queues()).toEqual(['clock', 'bell']);
    expect(() => registry.spec('gone')).toThrow(/no job is declared as "gone"/);
  });

  it('refuses to boot when a job has two handlers, naming both', async () => {
    @Module({ providers: [SecondTockHandler] })
    class Intruder {}
    await expect(boot(ClockModule, Intruder)).rejects.toThrow(/job "tock" has 2 handlers \(TockHandler, SecondTockHandler\)/);
  });

  it('refuses to boot when a declared job has no handler', async () => {
    @Module({ providers: [declareJobs(Ring)] })
    class Unhandled {}
    await expect(boot(ClockModule, Unhandled)).rejects.toThrow(/job "ring" has no handler/);
  });

  it('refuses to boot when a handler runs a job no module declared', async () => {
    @Module({ providers: [RingHandler] })
    class Undeclared {}
    await expect(boot(ClockModule, Undeclared)).rejects.toThrow(/handler RingHandler for undeclared job "ring"/);
  });

  it('refuses a job declared twice (two modules claiming one stored name)', () => {
    expect(() => assertOneHandlerPerJob([Tick, Tick], new Map([['tick', ['TickHandler']]]))).toThrow(/job "tick" is declared twice/);
  });

  it('keeps stored names plain: lowercase words and dashes', () => {
    expect(() => defineJob({ ...spec, name: "x'; DROP", queue: 'q' })).toThrow(/lowercase words/);
    expect(() => defineJob({ ...spec, name: 'ok', queue: 'Bad Queue' })).toThrow(/lowercase words/);
  });
});
