// Types of vendor/uplot.esm.js, which is uPlot's ESM build served from node_modules (lib/dashboard-vendor.ts).
declare const uPlot: typeof import('uplot');
export default uPlot;
