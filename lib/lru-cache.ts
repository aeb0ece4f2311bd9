/**
 * Stands in for `mnemonist/lru-cache` in the Lambda bundles (an esbuild alias set by fleetward-function.ts). Its one
 * user there is the AWS SDK's endpoint discovery cache (@aws-sdk/endpoint-cache), which every DynamoDB client builds
 * and reads only when endpoint discovery is on (never, for DynamoDB's own endpoints); mnemonist's cache and its
 * iterator helpers are ≈ 7 KB of every bundle. This is the same least-recently-used cache on a Map (whose order is
 * insertion order), with the methods the SDK calls: `get` and `set` make a key the most recent, `peek` and `has`
 * do not, and a `set` of a new key into a full cache evicts the least recent one.
 */
export default class LRUCache<K, V> {
  readonly capacity: number;
  readonly #entries = new Map<K, V>();

  constructor(capacity: number) {
    if (typeof capacity !== 'number' || capacity <= 0) throw new Error('mnemonist/lru-cache: capacity should be positive number.');
    this.capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    this.#entries.clear();
  }

  set(key: K, value: V): this {
    if (!this.#entries.delete(key) && this.#entries.size >= this.capacity) {
      this.#entries.delete(this.#entries.keys().next().value as K);
    }
    this.#entries.set(key, value);
    return this;
  }

  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  peek(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }
}
