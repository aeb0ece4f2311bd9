import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Browser files the dashboard takes from npm packages, by their path under the dashboard's root: the local runner
 * serves them from node_modules and the deployment copies them next to web/'s own files, so both serve one version,
 * the one package-lock.json pins.
 */
export const dashboardVendorFiles: Readonly<Record<string, string>> = {
  'vendor/uplot.esm.js': require.resolve('uplot/dist/uPlot.esm.js'),
  'vendor/uPlot.min.css': require.resolve('uplot/dist/uPlot.min.css'),
};
