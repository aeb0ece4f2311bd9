import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiTypesFile, apiTypesSource } from '#client/generate.ts';

// The CLI and the dashboard are typed from client/api-types.ts; it must be what the routes generate now.

describe('client/api-types.ts', () => {
  it('is what `npm run gen:client` makes from the current route table', async () => {
    const committed = readFileSync(apiTypesFile, 'utf8');
    const generated = await apiTypesSource();
    expect(committed === generated, 'client/api-types.ts is out of date with the routes: run `npm run gen:client` and commit the result').toBe(true);
  });
});
