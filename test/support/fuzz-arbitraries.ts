import fc from 'fast-check';
import { indexes } from '#store/table.ts';

// What test/e2e/fuzz-input.test.ts builds its defects from: values no route should accept, edits of a valid JSON
// body, and page tokens that look like a listing's but that no listing issued.

const b64 = (text: string) => Buffer.from(text).toString('base64url');

// ---- generators of values nobody should accept -------------------------------------------------------------------

export const prototypeKeys = ['__proto__', 'constructor', 'prototype'];
/** Strange strings up to `max` characters; URLs stay under API Gateway's ~10 KB request line (and Node's header limit). */
export const oddStrings = (max: number) =>
  fc.oneof(
    fc.string(),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j lookup, on purpose
    fc.constantFrom('', ' ', '\u0000', '%00', '../..', '${jndi:x}', "' OR 1=1 --", '<script>', 'NaN', '-0', '1e400', '12345678901234567890'),
    fc.nat({ max }).map((n) => 'x'.repeat(n)),
  );
export const inUrl = oddStrings(4_000);
export const wrongValuesUpTo = (maxString: number): fc.Arbitrary<unknown> =>
  fc.oneof(
    oddStrings(maxString),
    fc.integer(),
    fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0.1, -1),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...prototypeKeys)), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  );
export const wrongValues = wrongValuesUpTo(200_000);
export const surplusKeys = fc.oneof(fc.constantFrom(...prototypeKeys, 'surplus', 'toString', 'hasOwnProperty'), fc.string({ minLength: 1, maxLength: 20 }));

/** An own property even for `__proto__`, as JSON.parse makes it (plain assignment would set the prototype). */
export const withOwn = (target: Record<string, unknown>, key: string, value: unknown) => {
  Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
  return target;
};

export type Json = unknown;
/** Every path into a JSON value (objects and arrays), the root included. */
export const pathsOf = (value: Json, prefix: Array<string | number> = []): Array<Array<string | number>> => [
  prefix,
  ...(value && typeof value === 'object' ? Object.entries(value).flatMap(([k, v]) => pathsOf(v, [...prefix, Array.isArray(value) ? Number(k) : k])) : []),
];
export const clone = (value: Json): Json => JSON.parse(JSON.stringify(value));

export type BodyEdit =
  | { kind: 'set'; path: Array<string | number>; value: unknown }
  | { kind: 'delete'; path: Array<string | number> }
  | { kind: 'add'; path: Array<string | number>; key: string; value: unknown };

export function applyEdit(body: Json, edit: BodyEdit): Json {
  if (edit.path.length === 0 && edit.kind === 'set') return edit.value;
  const copy = clone(body);
  const parentPath = edit.kind === 'add' ? edit.path : edit.path.slice(0, -1);
  // An earlier edit may have replaced a node on the way: then this edit has nothing to change.
  const node = parentPath.reduce<any>((at, step) => (at && typeof at === 'object' ? at[step] : undefined), copy);
  if (!node || typeof node !== 'object') return copy;
  if (edit.kind === 'add') withOwn(node as Record<string, unknown>, edit.key, edit.value);
  else if (edit.kind === 'delete') delete node[edit.path.at(-1)!];
  else node[edit.path.at(-1)!] = edit.value;
  return copy;
}

export const bodyEdits = (example: Json): fc.Arbitrary<BodyEdit> => {
  const paths = pathsOf(example);
  const objects = paths.filter((p) => {
    const node = p.reduce<any>((n, s) => n?.[s], example);
    return node && typeof node === 'object' && !Array.isArray(node);
  });
  return fc.oneof(
    fc.record({ kind: fc.constant('set' as const), path: fc.constantFrom(...paths), value: wrongValues }),
    fc.record({ kind: fc.constant('delete' as const), path: fc.constantFrom(...paths.filter((p) => p.length > 0)) }),
    fc.record({ kind: fc.constant('add' as const), path: fc.constantFrom(...objects), key: surplusKeys, value: wrongValues }),
  );
};

// ---- page tokens no listing issues ------------------------------------------------------------------------------

/** The token's own listing with a key no listing issues: only the strict key check can refuse these. */
export function tamperedKey(token: string): fc.Arbitrary<string> {
  const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  if ('cursors' in decoded) return tamperedMerged(decoded);
  if ('scope' in decoded) return tamperedSequence(decoded);
  const { listing, key } = decoded as { listing: string; key: Record<string, unknown> };
  const names = Object.keys(key);
  const partition = Object.values(indexes).find((index) => names.includes(index.pk))!.pk;
  const notAKeyValue = fc.oneof(fc.constantFrom<unknown>('', 2 ** 64, 1e308, -0, true, null, { S: 'x' }, ['x'], 'x'.repeat(1025)), fc.integer());
  const edits = fc.oneof(
    fc.tuple(fc.constantFrom(...names), notAKeyValue).map(([name, value]) => ({ ...key, [name]: value })),
    fc.constantFrom(...names).map((name) => Object.fromEntries(Object.entries(key).filter(([n]) => n !== name))),
    fc
      .tuple(
        surplusKeys.filter((k) => !names.includes(k)),
        fc.string(),
      )
      .map(([name, value]) => withOwn({ ...key }, name, value)),
    // Another partition of the same index (another org's, say).
    fc.constantFrom('-elsewhere', '#globex', 'X').map((suffix) => ({ ...key, [partition]: `${String(key[partition])}${suffix}` })),
  );
  return edits.map((k) => b64(JSON.stringify({ listing, key: k })));
}

/**
 * A token of a listing read partition by partition (GET /admin/machines, rack by rack): its inner token tampered as
 * any other, or its partition no partition name at all.
 */
function tamperedSequence({ scope, partition, token: inner }: { scope: string; partition: string; token: string | null }): fc.Arbitrary<string> {
  const sequence = (p: unknown, t: unknown) => b64(JSON.stringify({ scope, partition: p, token: t }));
  const badPartition = fc.constantFrom<unknown>('', 2 ** 64, null, { S: 'x' }, ['x'], 'x'.repeat(1025)).map((p) => sequence(p, inner));
  return inner === null
    ? badPartition
    : fc.oneof(
        badPartition,
        tamperedKey(inner).map((t) => sequence(partition, t)),
      );
}

/**
 * A token of a listing merged from partitions (GET .../instance, its org's listing shards side by side): a shard's
 * inner token tampered as any other or moved to another shard's place, or the cursors or the scope not the listing's.
 */
function tamperedMerged({ scope, cursors }: { scope: string; cursors: Array<string | null> }): fc.Arbitrary<string> {
  const merged = (s: unknown, c: unknown) => b64(JSON.stringify({ scope: s, cursors: c }));
  const replaced = (at: number, cursor: string) => cursors.map((c, i) => (i === at ? cursor : c));
  const begun = cursors.flatMap((cursor, at) => (cursor !== null && cursor !== 'done' ? [at] : []));
  return fc.oneof(
    fc.constantFrom<unknown>('', `${scope}x`, null, 7).map((s) => merged(s, cursors)),
    fc
      .constantFrom<unknown>(
        cursors.slice(1),
        [...cursors, null],
        cursors.map(() => 7),
        'x',
      )
      .map((c) => merged(scope, c)),
    fc.constantFrom(...begun).chain((at) =>
      fc.oneof(
        tamperedKey(cursors[at]!).map((t) => merged(scope, replaced(at, t))),
        fc.constant(merged(scope, replaced((at + 1) % cursors.length, cursors[at]!))),
      ),
    ),
  );
}
