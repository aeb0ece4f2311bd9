import { search as jmespath } from '@aws-lambda-powertools/jmespath';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { search } from '#lib/jmespath-fields.ts';

// The bundles' stand-in for Powertools' JMESPath engine (lib/jmespath-fields.ts) must give what the engine gives for
// every field path, on whatever payload: the idempotency record's key and payload hash are computed from it.
const plainField = fc.constantFrom('scope', 'request', 'body', 'a', 'b_2', 'length');
// Names every object inherits, which the engine reads by property lookup too. Not first in a path: the engine caches
// parsed expressions by their text in a plain object, and fails on these as a whole expression.
const field = fc.oneof(plainField, fc.constantFrom('constructor', 'toString'));
const path = fc.tuple(plainField, fc.array(field, { maxLength: 2 })).map(([first, rest]) => [first, ...rest].join('.'));
const payload = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, 0, 1, '', 'x', true, false),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(field, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('jmespath-fields', () => {
  it('agrees with the JMESPath engine on field paths over any JSON', () => {
    fc.assert(
      fc.property(path, payload, (expression, data) => {
        expect(search(expression, data)).toEqual(jmespath(expression, data as never));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses any other expression rather than evaluate it wrongly', () => {
    for (const expression of ['scope[0]', 'scope.*', 'length(scope)', '"scope"', 'a || b', '']) {
      expect(() => search(expression, { scope: [1] }), expression).toThrow(/field paths only/);
    }
  });
});
