import type { NestFastifyApplication } from '@nestjs/platform-fastify';

export interface AppRoute {
  method: string;
  /** Fastify's pattern, e.g. /v2/webhook_endpoints/:id */
  url: string;
}

/**
 * Every route the running application serves, read from Fastify's own route table
 * (`printRoutes({ commonPrefix: false })`: one node per line, four characters of indent per
 * level, each line a path segment and the methods it answers). Routes added later are found
 * without touching the tests that use this.
 */
export function appRoutes(app: NestFastifyApplication): AppRoute[] {
  const tree = app.getHttpAdapter().getInstance().printRoutes({ commonPrefix: false });
  const routes: AppRoute[] = [];
  const pathAtDepth: string[] = [];
  for (const line of tree.split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!node) continue;
    const depth = node[1].length / 4;
    const path = (depth === 0 ? '' : pathAtDepth[depth - 1]) + node[2];
    pathAtDepth.length = depth;
    pathAtDepth.push(path);
    for (const method of node[3]?.split(', ') ?? []) routes.push({ method, url: path });
  }
  if (routes.length === 0) throw new Error(`no routes read from Fastify's route table:\n${tree}`);
  return routes;
}

/** The names of a route's path parameters (`:id` → id). */
export function pathParams(url: string): string[] {
  return [...url.matchAll(/:(\w+)/g)].map((m) => m[1]);
}
