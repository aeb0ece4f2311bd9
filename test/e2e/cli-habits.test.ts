import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { API_FUNCTION_TIMEOUT_SECONDS } from '#lib/function-timeouts.ts';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// Habits operators bring from kubectl and carbide-admin-cli: `-f/--format json|yaml|table` (with `-o` kept),
// shell completion, and `machine watch` following a machine's history live.

const WATCH_INTERVAL_S = 0.2;
const HISTORY_ROUTE = 'GET /admin/machines/{id}/history';
/** One poll of the watch: its interval, then a request the API function answers within its timeout. */
const POLL_WITHIN_MS = WATCH_INTERVAL_S * 1000 + API_FUNCTION_TIMEOUT_SECONDS * 1000;
/** The watch's start (the CLI's own start, bounded by `eventually`'s default), then the seven polls it waits for. */
const WATCH_TEST_WITHIN_MS = 10_000 + 7 * POLL_WITHIN_MS;

describe('fleetward CLI habits', () => {
  let site: TestSite;
  let admin: CliRunner;
  let machineId: string;

  const ok = async (args: string[]) => {
    const result = await admin(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  /** What bash completes for `words` (the last one is being typed), with the script `fleetward completion bash` printed. */
  const complete = (script: string, words: string[]): string[] => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's own array expansion
    const bash = 'eval "$SCRIPT"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fleetward; printf "%s\\n" "${COMPREPLY[@]}"';
    const out = execFileSync('bash', ['-c', bash, 'bash', 'fleetward', ...words], {
      env: { PATH: process.env.PATH ?? '', SCRIPT: script },
      encoding: 'utf8',
    });
    return out.split('\n').filter(Boolean);
  };

  beforeAll(async () => {
    site = await startTestSite();
    admin = cliFor(site.url, await site.token('provider', ['provider-admin'], 'ops'));
    const fleet = await site.eventually(async () => {
      const { items } = (await site.call('GET', '/admin/machines?allocatable=true', { token: await site.token('provider', ['provider-admin'], 'ops') })).body;
      return items.length === 6 ? (items as Array<{ id: string; machineType: string }>) : undefined;
    });
    machineId = fleet.find((m) => m.machineType === 'h100')!.id;
  });
  afterAll(async () => site?.stop());

  it('--format yaml, json and table; -o stays an alias; an unknown or conflicting format is a usage error', async () => {
    const [yaml, json, alias, table] = await Promise.all([
      ok(['machine', 'show', machineId, '--format', 'yaml']),
      ok(['-f', 'json', 'machine', 'show', machineId]),
      ok(['machine', 'show', machineId, '-o', 'json']),
      ok(['machine', 'show', machineId, '-f', 'table']),
    ]);
    // The same machine in each format; only its heartbeat moves between the runs.
    const steady = ({ lastHeartbeatAt: _moving, ...machine }: Record<string, unknown>) => machine;
    expect(parseYaml(yaml.stdout)).toMatchObject({ id: machineId, machineType: 'h100', healthOverrides: [] });
    expect(steady(json.json())).toEqual(steady(parseYaml(yaml.stdout)));
    expect(steady(alias.json())).toEqual(steady(json.json()));
    expect(table.stdout).toMatch(new RegExp(`^id:\\s+${machineId}$`, 'm'));

    const list = await ok(['machine', 'list', '-f', 'yaml', '--machine-type', 'h100']);
    expect((parseYaml(list.stdout) as { items: Array<{ machineType: string }> }).items.map((m) => m.machineType)).toEqual(['h100', 'h100']);

    const [unknown, conflicting] = await Promise.all([admin(['machine', 'list', '-f', 'xml']), admin(['machine', 'list', '-f', 'yaml', '-o', 'json'])]);
    expect(unknown.code, shown(['-f', 'xml'], unknown)).toBe(2);
    expect(unknown.stderr).toMatch(/Allowed choices are table, json, yaml/);
    expect(conflicting.code, shown(['-f', 'yaml', '-o', 'json'], conflicting)).toBe(2);
    expect(conflicting.stderr).toMatch(/cannot be used with/);
  });

  it('with --format yaml a problem is a YAML document on stderr', async () => {
    const result = await admin(['machine', 'show', 'no-such-machine', '-f', 'yaml']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(parseYaml(result.stderr)).toMatchObject({ status: 404, code: 'not-found' });
  });

  it("a tenant's machine list refuses the provider's filters before asking the API (usage, exit 2)", async () => {
    const result = await admin(['machine', 'list', '--org', 'acme', '--state', 'Ready']);
    expect(result.code, shown(['machine', 'list', '--org', 'acme', '--state', 'Ready'], result)).toBe(2);
    expect(result.stderr).toMatch(/--health-override only/);
  });

  it('completion bash completes commands, subcommands, aliases, flags and flag values; zsh runs the same through bashcompinit', async () => {
    const bash = (await ok(['completion', 'bash'])).stdout;
    expect(complete(bash, [''])).toEqual(expect.arrayContaining(['machine', 'instance', 'meta-instance', 'safety', 'repairs', 'completion']));
    expect(complete(bash, ['ma'])).toEqual(['machine', 'maintenance']);
    expect(complete(bash, ['machine', 'w'])).toEqual(['watch']);
    expect(complete(bash, ['machine', 'health-report', ''])).toEqual(['show', 'add', 'remove']);
    expect(complete(bash, ['--url', 'http://x', 'machine', 'list', '--st'])).toEqual(['--state']);
    expect(complete(bash, ['machine', 'list', '--state', ''])).toEqual(['Ready', 'Assigned', 'Cleanup']);
    expect(complete(bash, ['instance', 'list', '--org', 'acme', '--status', 'Re'])).toEqual(['Ready', 'Repairing']);
    expect(complete(bash, ['-o', 'json', 'safety', '-f', 'y'])).toEqual(['yaml']);
    expect(complete(bash, ['machine', 'watch', 'm-1', '--'])).toEqual(expect.arrayContaining(['--interval', '--tail', '--format', '--help']));
    expect(complete(bash, ['completion', ''])).toEqual(['bash', 'zsh']);
    // A value nobody can guess (an org, a URL): nothing rather than a subcommand.
    expect(complete(bash, ['instance', 'list', '--org', ''])).toEqual([]);

    const zsh = (await ok(['completion', 'zsh'])).stdout;
    expect(zsh).toMatch(/^autoload -U \+X bashcompinit && bashcompinit$/m);
    expect(zsh).toContain(bash);
    expect((await admin(['completion', 'fish'])).code).toBe(2);
  });

  it('machine watch prints the latest entries, then each new one once, oldest first, until Ctrl-C (exit 0)', { timeout: WATCH_TEST_WITHIN_MS }, async () => {
    const watch = admin.start(['machine', 'watch', machineId, '--interval', String(WATCH_INTERVAL_S), '-f', 'json']);
    let stdout = '';
    let stderr = '';
    watch.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    watch.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => watch.on('close', resolve));
    const entries = () =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { at: string; action: string; changes?: unknown });
    try {
      // The machine's registration is already there: printed at start.
      await site.eventually(async () => entries().some((e) => e.action === 'machine-registered'));
      const before = entries().length;

      await ok(['machine', 'health-override', 'add', machineId, '--template', 'degraded', '--message', 'fan noise']);
      // The poll in flight may predate the change; the next one sees it.
      await site.eventually(async () => entries().some((e) => e.action === 'health-override-added'), 2 * POLL_WITHIN_MS);
      await ok(['machine', 'health-override', 'remove', machineId, 'degraded']);
      await site.eventually(async () => entries().some((e) => e.action === 'health-override-removed'), 2 * POLL_WITHIN_MS);
      // A few more polls with nothing new print nothing. A quiet poll is one request, and the watch sends the next
      // only after printing what the last one found: once three more are served, the two before the last printed.
      const polled = () => site.counters().apiRequests[HISTORY_ROUTE] ?? 0;
      const further = polled() + 3;
      await site.eventually(async () => polled() >= further, 3 * POLL_WITHIN_MS);

      const seen = entries();
      // Nothing else writes this machine's history (liveness changes write none): exactly the two, each once.
      expect(seen.slice(before).map((e) => e.action)).toEqual(['health-override-added', 'health-override-removed']);
      const times = seen.map((e) => e.at);
      expect(times).toEqual([...times].sort());
      expect(new Set(stdout.split('\n').filter(Boolean)).size).toBe(seen.length);
    } finally {
      watch.kill('SIGINT');
    }
    expect(await exited, `stderr: ${stderr}`).toBe(0);
  });

  it('machine watch in table and yaml formats: one line, or one YAML document, per entry', async () => {
    const [table, yaml] = ['table', 'yaml'].map((format) => {
      const watch = admin.start(['machine', 'watch', machineId, '--interval', '0.2', '--tail', '2', '-f', format]);
      let stdout = '';
      watch.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      return { watch, stdout: () => stdout, exited: new Promise<number | null>((resolve) => watch.on('close', resolve)) };
    });
    try {
      await site.eventually(async () => table!.stdout().split('\n').filter(Boolean).length === 2 && parseAllDocuments(yaml!.stdout()).length === 2);
      const [older, newer] = parseAllDocuments(yaml!.stdout()).map((doc) => doc.toJS() as { at: string; actor: string; action: string });
      expect(older!.at <= newer!.at).toBe(true);
      const lines = table!.stdout().trimEnd().split('\n');
      expect(lines[0]).toMatch(new RegExp(`^${older!.at}  ${older!.actor}  ${older!.action}  `));
      expect(lines[1]).toMatch(new RegExp(`^${newer!.at}  ${newer!.actor}  ${newer!.action}  `));
    } finally {
      table!.watch.kill('SIGINT');
      yaml!.watch.kill('SIGINT');
    }
    expect(await table!.exited).toBe(0);
    expect(await yaml!.exited).toBe(0);
  });

  it('machine watch of an unknown machine exits non-zero with the 404', async () => {
    const result = await admin(['machine', 'watch', 'no-such-machine', '--interval', '0.2']);
    expect(result.code, shown(['machine', 'watch', 'no-such-machine'], result)).toBe(1);
    expect(result.stderr).toMatch(/404 not-found/);
  });
});
