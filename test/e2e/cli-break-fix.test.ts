import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// `fleetward instance power`, `fleetward meta-instance replace` and `fleetward repair-tickets` against a local site
// (docs/api.md "Power", "Replacing a member", "Repair tickets").

describe('fleetward break-fix commands', () => {
  let site: TestSite;
  let tenant: CliRunner;

  const ok = async (args: string[]) => {
    const result = await tenant(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  beforeAll(async () => {
    site = await startTestSite();
    const admin = await site.token('provider', ['provider-admin']);
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items.length === 6);
    tenant = cliFor(site.url, await site.token('acme', ['tenant'], 'alice'));
  });
  afterAll(async () => site?.stop());

  it('instance power <id> cycle --wait waits for the site agent to accept it; a bad action is a usage error', async () => {
    const created = (await ok(['instance', 'create', '--machine-type', 'gb200', '--wait', '-o', 'json'])).json();
    const cycled = (await ok(['instance', 'power', created.id, 'cycle', '--wait', '-o', 'json'])).json();
    expect(cycled.power).toMatchObject({ action: 'cycle', state: 'on', result: 'accepted' });
    expect((await ok(['instance', 'show', created.id])).stdout).toMatch(/^power:\s+on \(last cycle accepted\)$/m);
    expect((await tenant(['instance', 'power', created.id, 'reboot'])).code).not.toBe(0);
  });

  it('meta-instance replace --wait replaces the member; the issue it reports shows under repair-tickets', async () => {
    const meta = (await ok(['meta-instance', 'create', '--machine-type', 'gb200', '--min-nodes', '2', '--wait', '-o', 'json'])).json();
    const outgoing = meta.instanceIds[0];
    const replaced = (
      await ok(['meta-instance', 'replace', meta.id, outgoing, '--issue-category', 'hardware', '--summary', 'NVLink errors', '--wait', '-o', 'json'])
    ).json();
    expect(replaced.instanceIds).toHaveLength(2);
    expect(replaced.instanceIds).not.toContain(outgoing);

    const tickets = await ok(['repair-tickets']);
    expect(tickets.stdout).toMatch(/^MACHINE\s+INSTANCE\s+ISSUE\s+STATE\s+OPENED\s+UPDATED\s+CLOSED$/m);
    expect(tickets.stdout).toContain(`${outgoing}`);
    expect(tickets.stdout).toContain('HARDWARE: NVLink errors');
    const [ticket] = (await ok(['repair-tickets', '-o', 'json'])).json().items;
    expect(ticket).toMatchObject({ instanceId: outgoing, category: 'HARDWARE', summary: 'NVLink errors' });
  });
});
