import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentConfigSchema, bmcConfig } from '#agent/config/schema.ts';
import { FINDING_CLASSIFICATIONS } from '#agent/probes/findings.ts';
import { REPO_ROOT } from './support/agent-process.ts';

const doc = readFileSync(join(REPO_ROOT, 'docs/agent.md'), 'utf8');

describe('docs/agent.md', () => {
  it('shows the one table of which findings keep a machine out, as the code has it', () => {
    const table = /<!-- finding-classifications:start -->([\s\S]*?)<!-- finding-classifications:end -->/.exec(doc)![1]!;
    const rows = [...table.matchAll(/^\| `([a-z-]+)` \| ([^|]+) \|$/gm)].map(([, kind, classes]) => [kind, classes!.trim()]);
    const inCode = Object.entries(FINDING_CLASSIFICATIONS).map(([kind, c]) => [kind, c.length ? c.join(', ') : '(none)']);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(inCode));
  });

  it('names every key of the config', () => {
    const shape = agentConfigSchema.shape;
    const keys = [
      ...Object.keys(shape.agent.shape),
      ...Object.keys(shape.controller.shape),
      ...Object.keys(shape.hooks.unwrap().shape),
      ...bmcConfig.options.flatMap((o) => Object.keys(o.shape)),
      ...Object.keys(shape.machines.element.shape),
      'keys_file',
    ];
    expect(keys.filter((key) => !new RegExp(`\\b${key}\\b`).test(doc))).toEqual([]);
  });
});
