import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

// Debian's Chromium driven by playwright-core, for the dashboard's browser tests.

export const chromiumPath = process.env.FLEETWARD_CHROMIUM ?? '/usr/bin/chromium';
const ensureScript = fileURLToPath(new URL('../../scripts/ensure-chromium.sh', import.meta.url));

/** How long installing Chromium may take on a fresh machine (apt-get update + install). */
export const installTimeoutMs = 15 * 60_000;

/** Installs Debian's Chromium with scripts/ensure-chromium.sh when it is missing; throws with the reason if it cannot. */
export function ensureChromium(): void {
  if (existsSync(chromiumPath)) return;
  if (process.env.FLEETWARD_CHROMIUM) throw new Error(`FLEETWARD_CHROMIUM=${chromiumPath} does not exist`);
  try {
    execFileSync('bash', [ensureScript], { stdio: 'inherit', timeout: installTimeoutMs });
  } catch {
    throw new Error(`Chromium is missing at ${chromiumPath} and ${ensureScript} could not install it (see its output above)`);
  }
  if (!existsSync(chromiumPath)) throw new Error(`Chromium is still missing at ${chromiumPath} after ${ensureScript}`);
}

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile; the flags keep it off the network (this machine's is closed). */
export async function launchBrowser(): Promise<TestBrowser> {
  ensureChromium();
  const userDataDir = await mkdtemp(join(tmpdir(), 'fleetward-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  return {
    context,
    newPage: () => context.newPage(),
    close: async () => {
      await context.close().catch(() => undefined);
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Polls until the page shows what `check` looks for (Playwright's own expect is not used with vitest). */
export async function until<T>(page: Page, what: string, check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) {
      const status = await page
        .getByTestId('refresh-status')
        .textContent()
        .catch(() => '?');
      const errors = await page
        .getByTestId('errors')
        .textContent()
        .catch(() => '');
      throw new Error(`the dashboard did not show ${what} within ${timeoutMs} ms (status: ${status}; errors: ${errors || 'none'})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
