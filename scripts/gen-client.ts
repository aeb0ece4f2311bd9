import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { apiTypesFile, apiTypesSource } from '#client/generate.ts';

// `npm run gen:client`: regenerates the API types the CLI and the dashboard are typed with (client/api-types.ts).

writeFileSync(apiTypesFile, await apiTypesSource());
console.log(`wrote ${relative(process.cwd(), apiTypesFile)}`);
