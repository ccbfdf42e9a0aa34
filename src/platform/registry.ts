import type { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';

/**
 * A map that refuses a second entry under one key: the rule every registry here shares (one
 * handler per job, per carrier event kind, per housekeeping task, per invariant).
 */
export class UniqueRegistry<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly what: string) {}

  register(key: K, value: V): void {
    if (this.entries.has(key)) throw new Error(`${this.what} "${String(key)}" is registered twice`);
    this.entries.set(key, value);
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Tests only: puts a value (or none) in place of the registered one; returns the undo. */
  replace(key: K, value: V | undefined): () => void {
    const had = this.entries.has(key);
    const previous = this.entries.get(key);
    if (value === undefined) this.entries.delete(key);
    else this.entries.set(key, value);
    return () => (had ? this.entries.set(key, previous as V) : this.entries.delete(key));
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries.entries();
  }

  keys(): K[] {
    return [...this.entries.keys()];
  }
}

/** One decorated method found at boot: which provider, which method, the decorator's value. */
export interface DecoratedMethod<T> {
  value: T;
  instance: object;
  method: string;
  /** `Class.method`, for boot errors. */
  name: string;
}

/**
 * Every provider method carrying `metadataKey` (set with SetMetadata on the method). Routing
 * read from decorators is what "go to definition" can follow: the handler of a kind is the
 * method that says so.
 */
export function findDecoratedMethods<T>(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  reflector: Reflector,
  metadataKey: string,
): DecoratedMethod<T>[] {
  const found: DecoratedMethod<T>[] = [];
  for (const wrapper of discovery.getProviders()) {
    const instance = wrapper.instance as object | undefined;
    if (!instance || typeof instance !== 'object') continue;
    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const value = reflector.get<T | undefined>(metadataKey, prototype[method] as () => unknown);
      if (value !== undefined) found.push({ value, instance, method, name: `${instance.constructor.name}.${method}` });
    }
  }
  return found;
}
