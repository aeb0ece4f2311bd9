/** FNV-1a of a key: a stable spread of keys over a fixed set of partitions (the same key, the same partition). */
export function keyHash(key: string): number {
  let hash = 0x811c9dc5;
  for (const char of key) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return hash;
}
