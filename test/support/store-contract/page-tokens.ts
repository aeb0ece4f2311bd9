import { beforeAll, describe, expect, it } from 'vitest';
import type { HistoryEntry } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import type { ContractKit } from './kit.ts';

// Page tokens are opaque to callers and checked strictly by the store: each listing's token is bound to its index,
// partition and order, and a forged, truncated or foreign one is refused before it reaches DynamoDB.
export function pageTokensContract(kit: ContractKit): void {
  const { at, instance, create, register, rejectionOf } = kit;

  describe('page tokens', () => {
    const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
    const parts = (token: string) => JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Record<string, unknown>;
    type Merged = { scope: string; cursors: Array<string | null> };
    /** An instance listing's token (one cursor per listing shard) with `edit` applied to the key of each shard it stands in. */
    const reissued = (token: string, key: (k: Record<string, unknown>) => unknown) => {
      const merged = parts(token) as Merged;
      const inner = (cursor: string | null) => {
        if (cursor === null || cursor === 'done') return cursor;
        const { listing, key: k } = parts(cursor) as { listing: string; key: Record<string, unknown> };
        return b64({ listing, key: key(k) });
      };
      return b64({ ...merged, cursors: merged.cursors.map(inner) });
    };
    const restructured = (token: string, edit: (merged: Merged) => unknown) => b64(edit(parts(token) as Merged));
    let tokens: { orgA: string; orgB: string; history: string; machines: string };

    beforeAll(async () => {
      const created = (org: string, n: number) => create(instance(`pt-${org}-${n}`, { org, status: 'Ready', createdAt: iso(at(n * 1_000)) }));
      await kit.store.commit({ instances: [0, 1, 2].flatMap((n) => [created('pt-a', n), created('pt-b', n)]), history: [] });
      const entry = (machineId: string, ms: number): HistoryEntry => ({ machineId, at: iso(at(ms)), actor: 'ops', action: `a${ms}` });
      await kit.store.commit({ history: [entry('pt-m1', 1), entry('pt-m1', 2), entry('pt-m2', 1), entry('pt-m2', 2)] });
      await register('pt-machine-1');
      await register('pt-machine-2');
      const first = async (page: Promise<{ nextToken?: string | undefined }>) => (await page).nextToken!;
      tokens = {
        orgA: await first(kit.store.listInstances('pt-a', { limit: 1 })),
        orgB: await first(kit.store.listInstances('pt-b', { limit: 1 })),
        history: await first(kit.store.listHistory('pt-m1', { limit: 1 })),
        machines: await first(kit.store.listMachines({ limit: 1 })),
      };
    });

    async function refusal(promise: Promise<unknown>) {
      const thrown = await rejectionOf(promise);
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token', errors: [{ path: 'query.nextToken', message: expect.any(String) }] });
    }

    it('continue the listing that issued them', async () => {
      const second = await kit.store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgA });
      expect(second.items.map((i) => i.id)).toEqual(['pt-pt-a-1']);
      const history = await kit.store.listHistory('pt-m1', { limit: 5, nextToken: tokens.history });
      expect(history.items.map((h) => h.action)).toEqual(['a1']);
    });

    it.each([
      { name: 'not base64 JSON', token: 'not-a-token!' },
      { name: 'punctuation', token: '!!!***' },
      { name: 'a number', token: b64('42') },
      { name: 'an array', token: b64('[1,2]') },
      { name: 'null', token: b64('null') },
      { name: 'a string', token: b64('"pk"') },
      { name: 'truncated JSON', token: b64('{"pk":"MACHINE#') },
      { name: 'a bare key, as tokens used to be', token: b64({ pk: 'INSTANCE#pt-pt-a-1', sk: '#INSTANCE' }) },
      { name: 'an out-of-range number', token: b64('{"pk":12345678901234567890}') },
      { name: 'a number beyond double range', token: b64('{"pk":1e400}') },
    ])('garbage is a 422 invalid-page-token: $name', async ({ token }) => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: token }));
      await refusal(kit.store.listHistory('pt-m1', { limit: 1, nextToken: token }));
      await refusal(kit.store.listMachines({ limit: 1, nextToken: token }));
    });

    it('a truncated token is refused', async () => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgA.slice(0, -4) }));
    });

    it("another org's token is refused, never answered with that org's items", async () => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgB }));
      await refusal(kit.store.listMetaInstances('pt-a', { limit: 1, nextToken: tokens.orgB }));
    });

    it("another listing's token is refused: another route, another machine's history, another filter", async () => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: tokens.machines }));
      await refusal(kit.store.listMachines({ limit: 1, nextToken: tokens.orgA }));
      await refusal(kit.store.machinesAwaitingRepair({ limit: 1, nextToken: tokens.machines }));
      await refusal(kit.store.listMetaInstances(null, { limit: 1, nextToken: tokens.machines }));
      await refusal(kit.store.listMetaInstances(null, { limit: 1, nextToken: tokens.orgA }));
      await refusal(kit.store.listHistory('pt-m2', { limit: 1, nextToken: tokens.history }));
      await refusal(kit.store.listInstances('pt-a', { limit: 1, status: 'Ready', nextToken: tokens.orgA }));
    });

    it.each([
      { name: 'a key value that is a huge number', key: (k: Record<string, unknown>) => ({ ...k, sk: 2 ** 64 }) },
      { name: 'a key value that is an object', key: (k: Record<string, unknown>) => ({ ...k, sk: { S: '#INSTANCE' } }) },
      { name: 'a key value that is empty', key: (k: Record<string, unknown>) => ({ ...k, sk: '' }) },
      { name: 'a key value over 1024 bytes', key: (k: Record<string, unknown>) => ({ ...k, orgSk: 'x'.repeat(1025) }) },
      { name: 'an extra attribute', key: (k: Record<string, unknown>) => ({ ...k, kind: 'MACHINE' }) },
      { name: 'a missing attribute', key: ({ orgSk: _dropped, ...k }: Record<string, unknown>) => k },
      { name: "another org's partition", key: (k: Record<string, unknown>) => ({ ...k, orgPk: String(k.orgPk).replace('#pt-a#', '#pt-b#') }) },
      { name: 'a key that is a list', key: (k: Record<string, unknown>) => Object.values(k) },
    ])('a tampered key in a genuine token is refused: $name', async ({ key }) => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: reissued(tokens.orgA, key) }));
    });

    it.each([
      { name: 'a cursor fewer', edit: (m: Merged) => ({ ...m, cursors: m.cursors.slice(1) }) },
      { name: 'a cursor that is a number', edit: (m: Merged) => ({ ...m, cursors: m.cursors.map((c) => (c === null ? 7 : c)) }) },
      { name: 'a cursor that is empty', edit: (m: Merged) => ({ ...m, cursors: m.cursors.map((c) => (c === null ? '' : c)) }) },
      { name: 'no scope', edit: ({ cursors }: Merged) => ({ cursors }) },
      { name: 'the scope of another org', edit: (m: Merged) => ({ ...m, scope: m.scope.replace('pt-a', 'pt-b') }) },
      {
        name: "a shard's cursor in another shard's place",
        edit: (m: Merged) => {
          const from = m.cursors.findIndex((c) => c !== null && c !== 'done');
          return { ...m, cursors: m.cursors.map((c, shard) => (shard === (from + 1) % m.cursors.length ? m.cursors[from] : c)) };
        },
      },
    ])('a genuine token rebuilt is refused: $name', async ({ edit }) => {
      await refusal(kit.store.listInstances('pt-a', { limit: 1, nextToken: restructured(tokens.orgA, edit) }));
    });
  });
}
