import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { eventCatalog, EVENT_TYPES, type EventType } from '#domain/events/event-schemas.ts';
import { eventIdOf, publishedEvent, repairEvent, type OutboxEntry } from '#domain/events/events.ts';
import { feedEntriesOf } from '#domain/capacity/capacity-events.ts';
import { releaseInstance } from '#domain/instances/instances.ts';
import { addOverride } from '#domain/repair/machine-edits.ts';
import type { HistoryEntry, Issue, Machine } from '#domain/core/model.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import type { ReleaseReport } from '#domain/repair/repair.ts';
import { stuckRepairAlert, watchRepair } from '#domain/repair/stuck-repairs.ts';
import { overrunValidation, recordValidationReport, withValidationStarted } from '#domain/repair/validation.ts';
import { retireMachine } from '#domain/machines/retirement.ts';
import { eventOfRecord } from '#handlers/stream.ts';
import { eventDocs, eventExamples, eventJsonSchema } from '#lib/event-schemas.ts';
import { historyItem } from '#store/aggregates/event-items.ts';
import { keys } from '#store/keys.ts';
import { aMachine, anInstance, AT, NOW } from '#test/support/fixtures.ts';

// Events as repair automation receives them: every emitter's detail satisfies its type's schema, ids are stable per
// stored entry and distinct between entries, and docs/events/ is what the schemas generate.

const issue: Issue = { category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' };
const assigned = (overrides: Partial<Machine> = {}) =>
  aMachine({ state: 'Assigned', instanceId: 'i-1', assignedAt: AT, labels: { pool: 'training' }, ...overrides });
const withRepairRequest = (labels: Record<string, string>) =>
  assigned({ labels, healthOverrides: [buildOverride('m-1', { template: 'request-repair', issue }, 'acme-user', AT)] });
const report = (overrides: Partial<ReleaseReport> = {}): ReleaseReport => ({
  actor: 'acme-user',
  isRepairTenant: false,
  issue,
  policy: { kind: 'request' },
  ...overrides,
});

function released(machine: Machine, r: ReleaseReport): HistoryEntry[] {
  const decision = releaseInstance(anInstance({ status: 'Ready' }), machine, r, NOW);
  if (decision.kind !== 'release') throw new Error('expected a release');
  return decision.change.history;
}

const validating = withValidationStarted(aMachine(), { id: 'v-1', reason: 'repair', suite: 'standard', actor: 'repair-bot', at: AT }).machine;
const asked: Machine = { ...validating, validation: { ...validating.validation!, askedAt: AT, reportDueBy: AT } };
const passedTest = { test: 'dcgm-diag', passed: true };
const failedTest = { test: 'nccl-all-reduce', passed: false, message: 'bus bandwidth low' };

/** Every way the domain emits an event, each with the entries its change commits. */
function emitted(): Array<[string, HistoryEntry[]]> {
  const stuck = withRepairRequest({});
  const watch = watchRepair(stuck, new Date(Date.parse(AT) + 48 * 3_600_000), { claimMs: 3_600_000, repairMs: 86_400_000 })!;
  return [
    ['release with auto-repair', released(assigned(), report())],
    ['release that escalates', released(assigned(), report({ policy: { kind: 'escalate', earlierReports: [{ at: AT, issue }] } }))],
    ['release that trips the storm breaker', released(assigned(), report({ policy: { kind: 'hold-back', trips: true } }))],
    ['repair completed', released(withRepairRequest({ repair_status: 'Completed' }), report({ isRepairTenant: true, issue: undefined }))],
    ['repair completed with a new issue', released(withRepairRequest({ repair_status: 'Completed' }), report({ isRepairTenant: true }))],
    ['repair failed', released(withRepairRequest({ repair_status: 'Failed' }), report({ isRepairTenant: true, issue: undefined }))],
    ['admin repair request', addOverride(aMachine(), { template: 'request-repair', message: 'manual' }, 'admin', NOW).change.history],
    ['stuck repair', stuckRepairAlert(stuck, watch, AT).history],
    ['caused by an API request', [repairEvent('RepairRequested', aMachine(), { actor: 'admin', requestId: 'req-1' }, AT)]],
    ['validation passed', recordValidationReport(validating, { validationId: 'v-1', passed: true, results: [passedTest] }, { kind: 'off' }, NOW).history],
    ['validation failed', recordValidationReport(validating, { validationId: 'v-1', passed: false, results: [failedTest] }, { kind: 'request' }, NOW).history],
    ['validation overdue', overrunValidation(asked, new Date(Date.parse(AT) + 3_600_000), { timeoutMs: 60_000 })!.history],
    ['machine retired', retireMachine(aMachine(), 'end of life', 'admin', NOW)!.history],
    [
      'capacity delivered and withdrawn',
      feedEntriesOf(
        [
          {
            machineId: 'm-1',
            machineType: 'gb200',
            nodeVersion: 3,
            moves: [
              { org: 'acme', change: 'withdrawn', reason: 'reservation-released' },
              { org: 'globex', change: 'delivered', reason: 'reservation' },
            ],
          },
        ],
        new Map(),
        AT,
      ).events,
    ],
  ];
}

const outbox = (entry: HistoryEntry, unique: string): OutboxEntry => ({
  key: `${keys.history(entry.machineId, entry.at, unique).pk}/${keys.history(entry.machineId, entry.at, unique).sk}`,
  entry: entry as OutboxEntry['entry'],
});

describe('emitted events', () => {
  it.each(emitted())('satisfy their schema once published: %s', (_name, history) => {
    const events = history.filter((h) => h.event);
    expect(events.length).toBeGreaterThan(0);
    for (const [i, entry] of events.entries()) {
      const published = publishedEvent(outbox(entry, `u${i}`));
      const schema = eventCatalog[published.type as EventType]?.detail;
      expect(schema, `${published.type} has no schema`).toBeDefined();
      const parsed = schema.safeParse(published.detail);
      expect(parsed.error?.issues, published.type).toBeUndefined();
      expect(published.detail).toMatchObject({
        id: expect.any(String),
        version: eventCatalog[published.type as EventType].version,
        machineId: entry.machineId,
      });
    }
  });

  it('cover every machine event type, and carry the request id when one is known', () => {
    const all = emitted().flatMap(([, history]) => history.filter((h) => h.event));
    const machineEvents = EVENT_TYPES.filter((type) => type !== 'SiteAgentSilent' && !type.startsWith('Maintenance'));
    expect(new Set(all.map((h) => h.event!.type))).toEqual(new Set(machineEvents));
    expect(all.filter((h) => h.event!.detail.requestId).map((h) => h.event!.detail.requestId)).toEqual(['req-1']);
  });

  it('are refused by their schema with a field no schema declares, a wrong version or no id', () => {
    const [entry] = released(assigned(), report()).filter((h) => h.event);
    const detail = publishedEvent(outbox(entry!, 'u')).detail;
    const schema = eventCatalog.MachineQuarantined.detail;
    expect(schema.safeParse(detail).success).toBe(true);
    expect(schema.safeParse({ ...detail, surprise: 1 }).success).toBe(false);
    expect(schema.safeParse({ ...detail, version: 2 }).success).toBe(false);
    const { id: _id, ...withoutId } = detail;
    expect(schema.safeParse(withoutId).success).toBe(false);
  });
});

describe('event ids', () => {
  const entry = repairEvent('RepairRequested', aMachine(), { actor: 'admin' }, AT);
  const record = (unique: string): DynamoDBRecord => {
    const item = historyItem(entry, unique);
    return {
      eventName: 'INSERT',
      dynamodb: { Keys: marshall({ pk: item.pk, sk: item.sk }) as never, NewImage: marshall(item, { removeUndefinedValues: true }) as never },
    };
  };

  it('are the same for the same stored entry, however often its record is read', () => {
    const first = eventOfRecord(record('ab12cd34'))!;
    const again = eventOfRecord(structuredClone(record('ab12cd34')))!;
    expect(publishedEvent(first)).toEqual(publishedEvent(again));
    expect(publishedEvent(first).detail.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('differ between two occurrences, even of the same type on the same machine at the same time', () => {
    const ids = ['ab12cd34', 'ab12cd35', 'ffffffff'].map((unique) => publishedEvent(eventOfRecord(record(unique))!).detail.id);
    expect(new Set(ids).size).toBe(3);
    expect(eventIdOf('MACHINE#m-1/HISTORY#x#1')).not.toBe(eventIdOf('MACHINE#m-2/HISTORY#x#1'));
  });
});

describe('published schemas (docs/events)', () => {
  const dir = join(import.meta.dirname, '..', '..', 'docs', 'events');

  it('are what `npm run gen:events` generates from the zod schemas', () => {
    const generated = eventDocs();
    expect(readdirSync(dir).sort(), 'docs/events/ has other files than the generator writes: run `npm run gen:events`').toEqual([...generated.keys()].sort());
    for (const [name, content] of generated) {
      expect(readFileSync(join(dir, name), 'utf8') === content, `docs/events/${name} is out of date: run \`npm run gen:events\``).toBe(true);
    }
  });

  it('describe each event in its EventBridge envelope, in JSON Schema draft 4, and fit the schema registry', () => {
    for (const type of EVENT_TYPES) {
      const schema = eventJsonSchema(type) as any;
      expect(schema.$schema).toBe('http://json-schema.org/draft-04/schema#');
      expect(schema['x-amazon-events-detail-type']).toBe(type);
      expect(schema.properties['detail-type'].enum).toEqual([type]);
      expect(schema.properties.detail.required).toEqual(expect.arrayContaining(['id', 'version', 'at']));
      expect(schema.properties.detail.properties.version.enum).toEqual([eventCatalog[type].version]);
      // The registry's limits: content up to 100,000 characters, description up to 256.
      expect(JSON.stringify(schema).length).toBeLessThan(100_000);
      expect(eventCatalog[type].description.length).toBeLessThanOrEqual(256);
    }
  });

  it('list every event with an example detail that satisfies its schema, and tell consumers to dedupe on id', () => {
    const readme = eventDocs().get('README.md')!;
    expect(readme).toMatch(/dedupe on `detail\.id`/);
    for (const type of EVENT_TYPES) {
      expect(readme).toContain(`## ${type}`);
      expect(readme).toContain(JSON.stringify(eventExamples[type], null, 2));
      expect(eventCatalog[type].detail.safeParse(eventExamples[type]).success, type).toBe(true);
    }
  });
});
