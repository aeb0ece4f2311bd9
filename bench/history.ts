// `npm run bench:history -- summary.create_contention.p99_ms`: one figure across every run stored in bench/results/,
// oldest first: the run's date, its commit, the figure, and its goal and ratio where the report gives it one.

import { figureOf } from './figure-history.ts';
import { storedReports } from './results.ts';

const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: npm run bench:history -- <dotted path of a figure>, e.g. summary.create_contention.p99_ms\n');
  process.exit(2);
}
const show = (value: unknown) => (typeof value === 'object' ? JSON.stringify(value) : String(value));
const reports = storedReports();
let found = 0;
for (const { report } of reports) {
  const row = figureOf(report, path);
  if (!row) continue;
  found++;
  const judged = Object.entries(row.judged).map(([key, value]) => `${key} ${show(value)}`);
  const when = `${row.date.slice(0, 16).replace('T', ' ')}Z`;
  process.stdout.write(`${when}  ${row.commit}  ${show(row.value)}${judged.length > 0 ? `  (${judged.join(', ')})` : ''}\n`);
}
process.stderr.write(`${path}: in ${found} of ${reports.length} stored runs\n`);
