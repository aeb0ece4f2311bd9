// Writes docs/events/ (one JSON Schema per event type and README.md) from the zod schemas of the events, and
// removes files of event types that no longer exist. Run after changing functions/domain/events/event-schemas.ts:
//   npm run gen:events
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventDocs } from '#lib/event-schemas.ts';

const dir = join(import.meta.dirname, '..', 'docs', 'events');
const files = eventDocs();
mkdirSync(dir, { recursive: true });
for (const name of readdirSync(dir)) if (!files.has(name)) rmSync(join(dir, name));
for (const [name, content] of files) writeFileSync(join(dir, name), content);
console.log(`gen:events: wrote ${files.size} files to docs/events/`);
