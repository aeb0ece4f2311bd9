/**
 * Whether two JSON values are equal, whatever the order of their objects' keys: an item read back from the table need
 * not list its map's keys in the order they were written, and a needless rewrite of it would be a change nobody made.
 */
export const sameValue = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
