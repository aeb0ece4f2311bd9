import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { checkRouteOverrides, parseSiteConfig, SiteConfigError, siteConfigSchema, type SiteConfig } from '#config/site-config.ts';
import { apiRouteSpecs, routeKeyOf } from './api-routes.ts';

/** The repository's `sites/` folder: one TOML file per site. */
export const defaultSitesDir = resolve(import.meta.dirname, '..', 'sites');

/**
 * The sample site the local runner uses. It is allowed to synthesize without a site agent URL or a real token
 * issuer, so that the stack can be inspected (and deployed to LocalStack) straight from the repository.
 */
export const LOCAL_SAMPLE_SITE = 'local';

/** The issuer the local runner signs its own tokens with; a real site must name its identity provider instead. */
const localIssuer = siteConfigSchema.shape.auth.parse({}).issuer;

export interface LoadedSite {
  /** The site name: the file name, `sites/<name>.toml`, and `[site] name` inside it. */
  name: string;
  file: string;
  config: SiteConfig;
  /** The local sample (sites/local.toml): relaxed checks, see `LOCAL_SAMPLE_SITE`. */
  isLocalSample: boolean;
  /** The site agent URL the functions call, or undefined only for the local sample without one. */
  agentUrl: string | undefined;
  /** The Secrets Manager secret of the keys the agent calls are signed with; undefined only for the local sample. */
  signingSecretArn: string | undefined;
}

export interface LoadSiteOptions {
  sitesDir?: string;
  /** `-c agentUrl=...`: overrides `[site] agent_url` (e.g. a LocalStack deployment reaching a simulator). */
  agentUrl?: string | undefined;
}

export function siteNames(sitesDir = defaultSitesDir): string[] {
  return readdirSync(sitesDir)
    .filter((file) => file.endsWith('.toml'))
    .map((file) => file.slice(0, -'.toml'.length))
    .sort();
}

/**
 * Reads and validates `sites/<name>.toml` for the CDK app. Every problem is a SiteConfigError whose message
 * says what to fix, so `cdk synth` stops with one clear line instead of a stack trace.
 */
export function loadSite(name: string | undefined, options: LoadSiteOptions = {}): LoadedSite {
  const sitesDir = options.sitesDir ?? defaultSitesDir;
  const where = relative(process.cwd(), sitesDir) || '.';
  if (!name) {
    const known = existsSync(sitesDir) ? siteNames(sitesDir) : [];
    throw new SiteConfigError(`no site given: run \`npx cdk synth -c site=<name>\` (reads ${where}/<name>.toml; sites here: ${known.join(', ') || 'none'})`);
  }
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) {
    throw new SiteConfigError(`site "${name}": a site name is lower-case letters, digits and dashes`);
  }
  const file = join(sitesDir, `${name}.toml`);
  const shown = join(where, `${name}.toml`);
  if (!existsSync(file)) {
    throw new SiteConfigError(`${shown}: no such file (sites here: ${siteNames(sitesDir).join(', ') || 'none'})`);
  }
  const config = parseSiteConfig(readFileSync(file, 'utf8'), shown);
  checkRouteOverrides(config, apiRouteSpecs().map(routeKeyOf), shown);
  if (config.site.name !== name) {
    throw new SiteConfigError(
      `${shown}: [site] name is "${config.site.name}" but the file is ${name}.toml; set ` +
        `[site] name = "${name}" so the stack and the running functions agree on the site`,
    );
  }
  const isLocalSample = name === LOCAL_SAMPLE_SITE;
  const agentUrl = options.agentUrl ?? config.site.agent_url;
  if (options.agentUrl !== undefined && !URL.canParse(options.agentUrl)) {
    throw new SiteConfigError(`-c agentUrl=${options.agentUrl}: not a URL`);
  }
  if (!isLocalSample) {
    if (!agentUrl) {
      throw new SiteConfigError(`${shown}: site.agent_url is required for a deployed site (the URL of this site's agent, e.g. https://agent.example.net)`);
    }
    if (config.auth.issuer === localIssuer) {
      throw new SiteConfigError(
        `${shown}: auth.issuer is the local runner's issuer (${localIssuer}); set [auth] issuer to your identity provider's issuer URL`,
      );
    }
    if (!config.auth.issuer.startsWith('https://')) {
      throw new SiteConfigError(`${shown}: auth.issuer must be an https:// URL (API Gateway's JWT authorizer fetches its OpenID configuration)`);
    }
    if (!config.site_agent.signing_secret_arn) {
      throw new SiteConfigError(
        `${shown}: site_agent.signing_secret_arn is required for a deployed site ` +
          '(the Secrets Manager secret of the keys its calls to the agent are signed with; see docs/deploy.md)',
      );
    }
  }
  return { name, file, config, isLocalSample, agentUrl, signingSecretArn: config.site_agent.signing_secret_arn };
}
