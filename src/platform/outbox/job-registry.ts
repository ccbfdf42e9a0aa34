import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { DeclaredJobs, type JobDefinition } from './job-definition.js';
import { JOB_HANDLER_METADATA, type JobHandler } from './job-handler.js';

/**
 * The jobs of the modules this app is made of: each module declares its own (declareJobs) and
 * provides their handlers (@HandlesJob). Refuses to boot unless every declared job has exactly
 * one handler and every handler a declared job.
 */
@Injectable()
export class JobRegistry implements OnModuleInit {
  private readonly jobs = new Map<string, JobDefinition>();
  private readonly handlers = new Map<string, JobHandler<JobDefinition>>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const declared: JobDefinition[] = [];
    const found = new Map<string, string[]>();
    for (const { instance, metatype } of this.discovery.getProviders()) {
      if (instance instanceof DeclaredJobs) declared.push(...instance.jobs);
      if (!instance || !metatype) continue;
      const name = this.reflector.get<string | undefined>(JOB_HANDLER_METADATA, metatype as object as Function);
      if (!name) continue;
      found.set(name, [...(found.get(name) ?? []), (metatype as Function).name]);
      this.handlers.set(name, instance as JobHandler<JobDefinition>);
    }
    for (const job of assertOneHandlerPerJob(declared, found)) this.jobs.set(job.name, job);
  }

  /** The definition of the job stored as `name`. */
  spec(name: string): JobDefinition {
    const job = this.jobs.get(name);
    if (!job) throw new Error(`no job is declared as ${JSON.stringify(name)}`);
    return job;
  }

  /** Every queue a declared job goes to, in declaration order (a worker process works them all by default). */
  queues(): string[] {
    return [...new Set([...this.jobs.values()].map((job) => job.queue))];
  }

  get(name: string): JobHandler<JobDefinition> {
    const handler = this.handlers.get(name);
    if (!handler) throw new Error(`no handler for job ${name}`);
    return handler;
  }
}

/**
 * The boot check: each job declared once, with exactly one handler (`found`: handler class names
 * by job name), and no handler for a job nobody declared. Returns the declared jobs.
 */
export function assertOneHandlerPerJob(declared: readonly JobDefinition[], found: Map<string, string[]>): JobDefinition[] {
  const problems: string[] = [];
  const jobs = new Map<string, JobDefinition>();
  for (const job of declared) {
    if (jobs.has(job.name)) problems.push(`job "${job.name}" is declared twice`);
    jobs.set(job.name, job);
  }
  for (const name of jobs.keys()) {
    const handlers = found.get(name) ?? [];
    if (handlers.length === 0) problems.push(`job "${name}" has no handler`);
    if (handlers.length > 1) problems.push(`job "${name}" has ${handlers.length} handlers (${handlers.join(', ')})`);
  }
  for (const [name, handlers] of found) {
    if (!jobs.has(name)) problems.push(`handler ${handlers.join(', ')} for undeclared job "${name}"`);
  }
  if (problems.length > 0) throw new Error(`job check failed: ${problems.join('; ')}`);
  return [...jobs.values()];
}
