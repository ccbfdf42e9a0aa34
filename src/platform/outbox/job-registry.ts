import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { JobName } from './job-catalogue.js';
import { JOB_HANDLER_METADATA, type JobHandler } from './job-handler.js';

/** Finds the @HandlesJob providers and refuses to boot unless every job has exactly one. */
@Injectable()
export class JobRegistry implements OnModuleInit {
  private readonly handlers = new Map<JobName, JobHandler<JobName>>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const found = new Map<JobName, string[]>();
    for (const wrapper of this.discovery.getProviders()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype) continue;
      const name = this.reflector.get<JobName | undefined>(JOB_HANDLER_METADATA, metatype as object as Function);
      if (!name) continue;
      found.set(name, [...(found.get(name) ?? []), (metatype as Function).name]);
      this.handlers.set(name, instance as JobHandler<JobName>);
    }
    assertOneHandlerPerJob(found);
  }

  get<N extends JobName>(name: N): JobHandler<N> {
    const handler = this.handlers.get(name);
    if (!handler) throw new Error(`no handler for job ${name}`);
    return handler as JobHandler<N>;
  }
}

export function assertOneHandlerPerJob(found: Map<string, string[]>): void {
  const problems: string[] = [];
  for (const name of Object.values(JobName)) {
    const handlers = found.get(name) ?? [];
    if (handlers.length === 0) problems.push(`job "${name}" has no handler`);
    if (handlers.length > 1) problems.push(`job "${name}" has ${handlers.length} handlers (${handlers.join(', ')})`);
  }
  for (const name of found.keys()) {
    if (!(Object.values(JobName) as string[]).includes(name)) problems.push(`handler for unknown job "${name}"`);
  }
  if (problems.length > 0) throw new Error(`job catalogue check failed: ${problems.join('; ')}`);
}
