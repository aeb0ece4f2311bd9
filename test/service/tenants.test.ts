import { describe, expect, it } from 'vitest';
import { iso } from '#domain/core/time.ts';
import { setTenant } from '#services/tenants.ts';
import { harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

describe('setTenant', () => {
  it('creates the tenant record, then updates it in place', async () => {
    const h = harness();
    const created = await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    expect(created).toEqual({ org: 'fixit', capabilities: { targetedInstanceCreation: true }, updatedAt: iso(h.clock.now()), version: 0 });
    expect(await h.store.getTenant('fixit')).toEqual(created);

    h.clock.advance(1_000);
    const updated = await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: false } }, ops);
    expect(updated).toMatchObject({ capabilities: { targetedInstanceCreation: false }, version: 1 });
    expect(await h.store.getTenant('fixit')).toEqual(updated);
    expect(h.logged).toContainEqual(
      expect.objectContaining({ message: 'tenant capabilities set', fields: expect.objectContaining({ org: 'fixit', actor: 'ops' }) }),
    );
  });

  it('a tenant created by someone else meanwhile is updated on the fresh record instead', async () => {
    const h = harness();
    h.store.loseCommit('tenants');
    const result = await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    expect(result.version).toBe(1);
    expect(await h.store.getTenant('fixit')).toEqual(result);
    expect(h.store.attempts.get('tenants')).toBe(2);
  });
});
