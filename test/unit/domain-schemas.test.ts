import { describe, expect, it } from 'vitest';
import { createInstanceBody, issueSchema, listInstancesQuery, listQuery, releaseInstanceBody } from '#domain/core/schemas.ts';

describe('issueSchema', () => {
  it.each([
    ['HARDWARE', 'HARDWARE'],
    ['hardware', 'HARDWARE'],
    ['Network', 'NETWORK'],
    ['pErFoRmAnCe', 'PERFORMANCE'],
    ['other', 'OTHER'],
  ])('category %s is stored as %s', (category, stored) => {
    expect(issueSchema.parse({ category, summary: 's' })).toEqual({ category: stored, summary: 's' });
  });

  it.each([
    { name: 'unknown category', issue: { category: 'software', summary: 's' } },
    { name: 'category not a string', issue: { category: 1, summary: 's' } },
    { name: 'empty summary', issue: { category: 'OTHER', summary: '' } },
    { name: 'summary of 1025 chars', issue: { category: 'OTHER', summary: 'x'.repeat(1025) } },
    { name: 'missing summary', issue: { category: 'OTHER' } },
    { name: 'details of 8193 chars', issue: { category: 'OTHER', summary: 's', details: 'x'.repeat(8193) } },
    { name: 'unknown field', issue: { category: 'OTHER', summary: 's', severity: 'high' } },
  ])('refuses $name', ({ issue }) => {
    expect(issueSchema.safeParse(issue).success).toBe(false);
  });

  it.each([
    { name: 'summary of 1 char', issue: { category: 'OTHER', summary: 'x' } },
    { name: 'summary of 1024 chars', issue: { category: 'OTHER', summary: 'x'.repeat(1024) } },
    { name: 'details of 8192 chars', issue: { category: 'OTHER', summary: 's', details: 'x'.repeat(8192) } },
    { name: 'empty details', issue: { category: 'OTHER', summary: 's', details: '' } },
  ])('accepts $name', ({ issue }) => {
    expect(issueSchema.parse(issue)).toEqual(issue);
  });

  it('is what a release body carries', () => {
    expect(releaseInstanceBody.parse({ machineHealthIssue: { category: 'network', summary: 'link flaps' } })).toEqual({
      machineHealthIssue: { category: 'NETWORK', summary: 'link flaps' },
    });
    expect(releaseInstanceBody.safeParse({ machineHealthIssue: { category: 'nope', summary: 'x' } }).success).toBe(false);
  });
});

describe('createInstanceBody', () => {
  it.each([
    { name: 'machineType only', body: { machineType: 'gb200' }, ok: true },
    { name: 'machineId only', body: { machineId: 'm-1' }, ok: true },
    { name: 'machineType with name and labels', body: { machineType: 'gb200', name: 'train-1', labels: { team: 'ml' } }, ok: true },
    { name: 'both', body: { machineType: 'gb200', machineId: 'm-1' }, ok: false },
    { name: 'neither', body: {}, ok: false },
    { name: 'neither, only a name', body: { name: 'train-1' }, ok: false },
    { name: 'unknown field', body: { machineType: 'gb200', zone: 'a' }, ok: false },
  ])('$name → ok: $ok', ({ body, ok }) => {
    expect(createInstanceBody.safeParse(body).success).toBe(ok);
  });

  it('names the field for "exactly one of"', () => {
    const result = createInstanceBody.safeParse({ machineType: 'gb200', machineId: 'm-1' });
    expect(result.success).toBe(false);
    expect(result.error!.issues).toEqual([expect.objectContaining({ path: ['machineType'], message: 'give exactly one of machineType or machineId' })]);
  });
});

describe('list query limit', () => {
  it.each([listQuery, listInstancesQuery].map((schema, i) => ({ schema, name: ['listQuery', 'listInstancesQuery'][i] })))(
    '$name: default 50, bounds 1..500',
    ({ schema }) => {
      expect(schema.parse({}).limit).toBe(50);
      for (const [input, limit] of [
        ['1', 1],
        ['500', 500],
        ['37', 37],
        [200, 200],
      ] as const)
        expect(schema.parse({ limit: input }).limit).toBe(limit);
      for (const input of ['0', '501', '-1', '2.5', 'ten', '', '0x10', '1e2', ' 5', '+5', '5 ', '12345678901234567890'])
        expect(schema.safeParse({ limit: input }).success, `limit=${input}`).toBe(false);
    },
  );

  it('listInstancesQuery takes a known status and a nextToken', () => {
    expect(listInstancesQuery.parse({ status: 'Ready', nextToken: 'abc' })).toEqual({ limit: 50, status: 'Ready', nextToken: 'abc' });
    expect(listInstancesQuery.safeParse({ status: 'Running' }).success).toBe(false);
    expect(listQuery.safeParse({ status: 'Ready' }).success).toBe(false);
  });
});
