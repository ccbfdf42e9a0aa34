import module from 'node:module';

/** What Node adds to node:module from 22.1 (enable) and 22.10 (flush); the @types/node we build against is 20's. */
interface CompileCacheApi {
  enableCompileCache?: () => unknown;
  flushCompileCache?: () => void;
}
const api = module as unknown as CompileCacheApi;

/**
 * Keeps V8's compiled code of the modules loaded from here on in Node's compile cache (a folder in
 * the temp dir; NODE_COMPILE_CACHE names another, NODE_DISABLE_COMPILE_CACHE=1 turns it off): the
 * next start of a role reads its bundle's code instead of compiling it again, 10-17 % of a
 * start's CPU (bench/boot.mjs). Node 20 has no compile cache: nothing happens there. A cache
 * that cannot be used (a read-only temp dir) is reported by Node's return value, not thrown.
 */
export function cacheCompiledCode(): void {
  api.enableCompileCache?.();
}

/**
 * Writes the cache now instead of at exit: a role ends by SIGKILL as often as by a clean stop
 * (crashes, the chaos tests, an orchestrator out of patience), and then would never write it.
 */
export function saveCompiledCode(): void {
  api.flushCompileCache?.();
}
