import type { Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { ensureChromium, installTimeoutMs, launchBrowser, type TestBrowser } from '#test/support/browser.ts';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { actors, waitForFleet, type Actors } from '#test/support/repair-steps.ts';

/** A test site with its actors and its fleet up, and a page in Chromium to open its dashboard in. */
export interface DashboardSite {
  site: TestSite;
  who: Actors;
  browser: TestBrowser;
  page: Page;
  /** The uncaught errors of `page`, in the order it threw them. */
  pageErrors: string[];
  stop(): Promise<void>;
}

/** How long starting one may take: installing Chromium on a fresh machine, then the site and its fleet. */
export const dashboardSiteTimeoutMs = installTimeoutMs + 60_000;

/**
 * Starts a site configured by `toml`, waits until `machines` of its machines are allocatable, and opens a page in
 * Chromium. Chromium is installed first, when missing, so a slow install does not eat into the site's waits. What
 * started is stopped again when a later step fails.
 */
export async function startDashboardSite(toml: string, machines: number): Promise<DashboardSite> {
  ensureChromium();
  const site = await startTestSite({ config: testConfig(toml) });
  try {
    const who = await actors(site);
    await waitForFleet(site, who.admin, machines);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      const stop = async () => {
        await browser.close();
        await site.stop();
      };
      return { site, who, browser, page, pageErrors, stop };
    } catch (error) {
      await browser.close();
      throw error;
    }
  } catch (error) {
    await site.stop();
    throw error;
  }
}

/**
 * The suite's dashboard site, started before its tests and stopped after them: call it in a `describe`, then read
 * the site from the function it returns, inside a test.
 */
export function useDashboardSite(toml: string, machines: number): () => DashboardSite {
  let dashboard: DashboardSite | undefined;
  beforeAll(async () => {
    dashboard = await startDashboardSite(toml, machines);
  }, dashboardSiteTimeoutMs);
  afterAll(() => dashboard?.stop());
  return () => {
    if (!dashboard) throw new Error('the dashboard site did not start');
    return dashboard;
  };
}
