import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';
import { loadSite, siteNames } from '#lib/site.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

const repoRoot = resolve(import.meta.dirname, '..', '..');
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:fleetward/agent-signing-AbCdEf';
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'fleetward-sites-'));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('every sites/*.toml', () => {
  const names = siteNames();

  it('includes the local sample and at least one real site', () => {
    expect(names).toContain('local');
    expect(names.length).toBeGreaterThan(1);
  });

  // Bundling skipped, and CDK's built-in template validation left to site-stack.test.ts: this checks that each
  // site's config loads and its stack synthesizes with cdk-nag (a nag violation would throw here).
  it.each(names.map((name) => [name, name]))(
    '%s synthesizes as Fleetward-%s',
    (name) => {
      const outdir = join(scratch, name);
      const { app, stack } = buildSiteApp({
        site: name,
        appProps: { outdir, builtinCloudFormationValidation: false, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } },
      });
      const assembly = app.synth();
      expect(stack.stackName).toBe(`Fleetward-${name}`);
      const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8'));
      const findings = report.pluginReports.flatMap((p: { violations: Array<{ ruleName: string; severity: string }> }) => p.violations);
      expect(findings.filter((f: { severity: string }) => f.severity !== 'warning')).toEqual([]);
      // The warnings there may be: the local sample has no site agent URL and no signing secret (its functions say so).
      const warnings = findings.filter((f: { severity: string }) => f.severity === 'warning').map((f: { ruleName: string }) => f.ruleName);
      const site = loadSite(name);
      expect(warnings).toEqual([
        ...(site.agentUrl ? [] : ['Annotation::fleetward:no-agent-url']),
        ...(site.signingSecretArn ? [] : ['Annotation::fleetward:no-signing-secret']),
      ]);
      expect(assembly.getStackByName(stack.stackName).template.Resources).toBeDefined();
    },
    60_000,
  );
});

describe('loading a site for the stack', () => {
  const write = (name: string, toml: string) => {
    writeFileSync(join(scratch, `${name}.toml`), toml);
    return { sitesDir: scratch };
  };
  const real = (name: string, extra = '') =>
    `[site]\nname = "${name}"\nagent_url = "https://agent.example.net"\n[auth]\nissuer = "https://idp.example.net/"\naudience = "fw"\n` +
    `[site_agent]\nsigning_secret_arn = "${SECRET_ARN}"\n${extra}`;
  const failure = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(SiteConfigError);
      return (error as Error).message;
    }
    throw new Error('expected a SiteConfigError');
  };

  it('loads a valid real site', () => {
    const site = loadSite('prod-1', write('prod-1', real('prod-1')));
    expect(site).toMatchObject({ name: 'prod-1', isLocalSample: false, agentUrl: 'https://agent.example.net', signingSecretArn: SECRET_ARN });
    expect(site.config.auth).toEqual({ issuer: 'https://idp.example.net/', audience: 'fw' });
  });

  it('asks for the site when none is given', () => {
    expect(failure(() => loadSite(undefined, { sitesDir: scratch }))).toMatch(/-c site=<name>/);
  });

  it('names the missing file', () => {
    expect(failure(() => loadSite('nowhere', { sitesDir: scratch }))).toMatch(/nowhere\.toml: no such file/);
  });

  it('rejects a site name that is not a file name', () => {
    expect(failure(() => loadSite('../etc/passwd', { sitesDir: scratch }))).toMatch(/lower-case letters, digits and dashes/);
  });

  it('names an unknown key', () => {
    const message = failure(() => loadSite('typo', write('typo', real('typo', '[heartbeat]\ntimeout_secs = 30\n'))));
    expect(message).toMatch(/typo\.toml: heartbeat\.timeout_secs: unknown key/);
  });

  it('names a bad value', () => {
    const message = failure(() => loadSite('bad', write('bad', real('bad', '[instance_create_retry]\nmax_attempts = 0\n'))));
    expect(message).toMatch(/instance_create_retry\.max_attempts/);
  });

  it('wants [site] name to match the file', () => {
    expect(failure(() => loadSite('other', write('other', real('prod-1'))))).toMatch(/set \[site\] name = "other"/);
  });

  it('requires agent_url for a real site, unless given on the command line', () => {
    const toml = `[site]\nname = "noagent"\n[auth]\nissuer = "https://idp.example.net/"\n[site_agent]\nsigning_secret_arn = "${SECRET_ARN}"\n`;
    const options = write('noagent', toml);
    expect(failure(() => loadSite('noagent', options))).toMatch(/site\.agent_url is required/);
    expect(loadSite('noagent', { ...options, agentUrl: 'https://agent.example.org' }).agentUrl).toBe('https://agent.example.org');
  });

  it('requires the signing secret of a real site, by its full ARN', () => {
    const toml = '[site]\nname = "nokeys"\nagent_url = "https://agent.example.net"\n[auth]\nissuer = "https://idp.example.net/"\n';
    expect(failure(() => loadSite('nokeys', write('nokeys', toml)))).toMatch(/nokeys\.toml: site_agent\.signing_secret_arn is required for a deployed site/);
    const partial = `${toml}[site_agent]\nsigning_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:fleetward/agent"\n`;
    expect(failure(() => loadSite('nokeys', write('nokeys', partial)))).toMatch(/site_agent\.signing_secret_arn: the full ARN of a Secrets Manager secret/);
  });

  it('requires a real issuer for a real site', () => {
    const toml = '[site]\nname = "noidp"\nagent_url = "https://agent.example.net"\n';
    expect(failure(() => loadSite('noidp', write('noidp', toml)))).toMatch(/auth\.issuer is the local runner's issuer/);
  });

  it('lets the local sample through without an agent URL', () => {
    const site = loadSite('local');
    expect(site.isLocalSample).toBe(true);
  });
});

describe('bin/cdk.ts', () => {
  // What `npx cdk synth -c site=<name>` runs: the CLI hands its context over in CDK_CONTEXT_JSON.
  const run = (context: Record<string, unknown>) =>
    spawnSync(process.execPath, ['bin/cdk.ts'], {
      cwd: repoRoot,
      env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: join(scratch, 'bin-out') },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('stops with one clear line when the site file is missing', () => {
    const result = run({ site: 'no-such-site' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toMatch(/^fleetward: sites\/no-such-site\.toml: no such file \(sites here: .*example-aws.*local.*\)$/);
  }, 60_000);
});
