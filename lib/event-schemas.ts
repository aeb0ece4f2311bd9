import { z } from 'zod';
import { eventCatalog, EVENT_TYPES, type EventType } from '#domain/events/event-schemas.ts';
import { EVENT_SOURCE } from '#runtime/events.ts';

// The published contract of the events: one JSON Schema per event type (what docs/events/ holds and the CDK stack
// registers), and docs/events/README.md. `npm run gen:events` writes them; a unit test fails when they drift.

const machine = {
  machineId: 'gb200-r1-01',
  machineType: 'gb200',
  rack: 'rack-1',
  labels: { pool: 'training' },
};
const issue = { category: 'HARDWARE' as const, summary: 'ECC errors', details: 'DIMM 2' };
const at = '2026-11-23T09:30:00.000Z';
/** A tenant's release with an issue and auto-repair on: it quarantines the machine and asks for repair. */
const releasedWithIssue = {
  version: 1 as const,
  at,
  requestId: 'Xk2mFj3uIAMEbHw=',
  ...machine,
  instanceId: 'i-7f3a',
  issue,
  overrides: ['tenant-reported-issue', 'request-repair'],
};

/** A firmware wave, as its events name it. */
const maintenance = { version: 1 as const, at, maintenanceId: 'mnt-4c1e', kind: 'planned' as const, category: 'firmware' as const };
const handBackBy = '2026-12-07T09:00:00.000Z';

/** One realistic detail per event type, as a consumer receives it; checked against its schema whenever docs are made. */
export const eventExamples: { [T in EventType]: z.input<(typeof eventCatalog)[T]['detail']> } = {
  MachineQuarantined: { id: '3f1c9a5e-7b2d-5c4e-9f60-1a2b3c4d5e6f', ...releasedWithIssue },
  RepairRequested: { id: '8d0e2b4a-6c1f-5a3e-8b7d-9c0e1f2a3b4c', ...releasedWithIssue },
  RepairCompleted: {
    id: '1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d',
    version: 1,
    at,
    ...machine,
    labels: { ...machine.labels, repair_status: 'Completed' },
    instanceId: 'i-repair-0c1d',
    overrides: [],
  },
  RepairFailed: {
    id: '2b3c4d5e-6f7a-5b8c-9d0e-1f2a3b4c5d6e',
    version: 1,
    at,
    ...machine,
    labels: { ...machine.labels, repair_status: 'Failed' },
    instanceId: 'i-repair-0c1d',
    overrides: ['tenant-reported-issue'],
  },
  RepairEscalated: {
    id: '4d5e6f7a-8b9c-5d0e-a1f2-3a4b5c6d7e8f',
    version: 1,
    at,
    ...machine,
    instanceId: 'i-9e8d',
    issue: { category: 'NETWORK', summary: 'IB link flaps' },
    overrides: ['tenant-reported-issue', 'out-for-repair'],
    earlierReports: [{ at: '2026-11-02T14:05:00.000Z', issue }],
  },
  RepairStormDetected: {
    id: '5e6f7a8b-9c0d-5e1f-b2a3-4b5c6d7e8f90',
    version: 1,
    at,
    ...machine,
    instanceId: 'i-5b4c',
    issue,
    overrides: ['tenant-reported-issue'],
    repairRequestHeldBack: true,
  },
  RepairStuck: {
    id: '6f7a8b9c-0d1e-5f2a-83b4-5c6d7e8f9a0b',
    version: 1,
    at,
    ...machine,
    overrides: ['tenant-reported-issue', 'request-repair'],
    stage: 'unclaimed',
    since: '2026-11-23T08:15:00.000Z',
    waitingMinutes: 75,
  },
  ValidationPassed: {
    id: '8b9c0d1e-2f3a-5b4c-a5d6-7e8f9a0b1c2d',
    version: 1,
    at,
    ...machine,
    overrides: [],
    validationId: 'v-4e1b',
    reason: 'repair',
    suite: 'standard',
    results: [
      { test: 'dcgm-diag', passed: true },
      { test: 'nccl-allreduce', passed: true },
    ],
  },
  ValidationFailed: {
    id: '9c0d1e2f-3a4b-5c5d-b6e7-8f9a0b1c2d3e',
    version: 1,
    at,
    ...machine,
    issue: { category: 'HARDWARE', summary: 'Validation failed: nccl-allreduce', details: 'validation v-4e1b (repair, suite standard)' },
    overrides: ['validation-failed', 'request-repair'],
    validationId: 'v-4e1b',
    reason: 'repair',
    suite: 'standard',
    results: [
      { test: 'dcgm-diag', passed: true },
      { test: 'nccl-allreduce', passed: false, message: 'bus bandwidth 212 GB/s, expected at least 360' },
    ],
  },
  ValidationStuck: {
    id: '0d1e2f3a-4b5c-5d6e-87f8-9a0b1c2d3e4f',
    version: 1,
    at,
    ...machine,
    overrides: ['validation'],
    validationId: 'v-4e1b',
    reason: 'registration',
    suite: 'standard',
    askedAt: '2026-11-23T07:30:00.000Z',
    timeoutMinutes: 120,
  },
  MachineRetired: {
    id: '1e2f3a4b-5c6d-5e7f-98a9-0b1c2d3e4f5a',
    version: 1,
    at,
    ...machine,
    overrides: ['tenant-reported-issue', 'out-for-repair'],
    reason: 'GPU board end of life',
  },
  SiteAgentSilent: {
    id: '7a8b9c0d-1e2f-5a3b-94c5-6d7e8f9a0b1c',
    version: 1,
    at,
    site: 'example-aws',
    lastRosterAt: '2026-11-23T09:28:00.000Z',
    silentForSeconds: 120,
    timeoutSeconds: 90,
  },
  MaintenanceDeclared: { id: '8b9c0d1e-2f3a-5b4c-a5d6-7e8f9a0b1c2d', ...maintenance, org: 'acme', instanceIds: ['i-7f3a', 'i-7f3b'], handBackBy },
  MaintenanceHandBackDue: { id: '9c0d1e2f-3a4b-5c5d-b6e7-8f9a0b1c2d3e', ...maintenance, org: 'acme', handBackBy },
  MaintenanceEnforced: { id: '0d1e2f3a-4b5c-5d6e-87f8-9a0b1c2d3e4f', ...maintenance, org: 'acme', instanceId: 'i-7f3a', machineId: 'gb200-r1-01' },
  MaintenanceHalted: { id: '1e2f3a4b-5c6d-5e7f-98a9-0b1c2d3e4f5a', ...maintenance, failures: 1 },
  MaintenanceOverdue: { id: '2f3a4b5c-6d7e-5f8a-a9b0-1c2d3e4f5a6b', ...maintenance, machineId: 'gb200-r1-01', handedBackAt: at, windowMinutes: 240 },
  MaintenanceCompleted: { id: '3a4b5c6d-7e8f-5a9b-b0c1-2d3e4f5a6b7c', ...maintenance, returned: 15, failed: 1 },
  CapacityDelivered: {
    id: '5b6c7d8e-9f0a-5b1c-a2d3-e4f5a6b7c8d9',
    version: 1,
    at,
    entryId: '0c9d8e7f-6a5b-5c4d-b3e2-f1a0b9c8d7e6',
    org: 'acme',
    machineId: machine.machineId,
    machineType: machine.machineType,
    reason: 'repair-return',
  },
  CapacityWithdrawn: {
    id: '6c7d8e9f-0a1b-5c2d-b3e4-f5a6b7c8d9e0',
    version: 1,
    at,
    entryId: '7d8e9f0a-1b2c-5d3e-84f5-a6b7c8d9e0f1',
    org: 'acme',
    machineId: machine.machineId,
    machineType: machine.machineType,
    reason: 'maintenance',
  },
};

/**
 * The JSON Schema of an event as EventBridge delivers it, its detail inside the envelope: draft 4, the format the
 * schema registry takes besides OpenAPI 3, with the registry's `x-amazon-events-*` keys naming source and type.
 */
export function eventJsonSchema(type: EventType): Record<string, unknown> {
  const entry = eventCatalog[type];
  const envelope = z
    .looseObject({
      version: z.string(),
      id: z.string().describe("EventBridge's id of this PutEvents entry: a redelivery gets a new one, so dedupe on detail.id"),
      'detail-type': z.literal(type),
      source: z.literal(EVENT_SOURCE),
      account: z.string(),
      time: z.string(),
      region: z.string(),
      resources: z.array(z.string()),
      detail: entry.detail.describe(`Version ${entry.version} of the ${type} detail`),
    })
    .meta({ title: type, description: entry.description, 'x-amazon-events-source': EVENT_SOURCE, 'x-amazon-events-detail-type': type });
  return z.toJSONSchema(envelope, { target: 'draft-04', io: 'output' }) as Record<string, unknown>;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

function readme(): string {
  return [
    '# Fleetward events',
    '',
    '<!-- Generated by `npm run gen:events` from functions/domain/events/event-schemas.ts and lib/event-schemas.ts: do not edit. -->',
    '',
    `Fleetward tells repair automation what happens to machines through EventBridge: the site's bus \`fleetward-<site>\`, source ` +
      `\`${EVENT_SOURCE}\`, one detail type per event below. Each event's JSON Schema (draft 4, the whole event with its detail) ` +
      `is in this folder, and the CDK stack registers it in the schema registry \`fleetward-<site>\` as \`${EVENT_SOURCE}@<type>\`.`,
    '',
    '## Delivery is at least once: dedupe on `detail.id`',
    '',
    "An event is committed in the same transaction as the change it reports and published afterwards from the table's stream. " +
      'A stream record that is retried, duplicated or reordered publishes its event again **with the same `detail.id`**, which ' +
      "is derived from the stored event, never random; the delivery itself is recorded once. EventBridge's own envelope `id` is " +
      "new for every publication, so consumers must dedupe on `detail.id`, not on the envelope's `id`.",
    '',
    "`detail.version` is the version of that event type's detail schema; a change of shape comes with a new version. Every detail has `id`, `version` " +
      "and `at` (when it happened). Every event about a machine also has `machineId`, `machineType`, `rack`, `overrides` (the sources of the machine's " +
      'health overrides after the change) and `labels`, and, when known, `requestId` (the API request that caused it), `instanceId` and `issue`.',
    '',
    '| Type | Version | When |',
    '| --- | --- | --- |',
    ...EVENT_TYPES.map((type) => `| [${type}](${type}.json) | ${eventCatalog[type].version} | ${eventCatalog[type].description} |`),
    '',
    ...EVENT_TYPES.flatMap((type) => [
      `## ${type}`,
      '',
      `${eventCatalog[type].description} Schema: [${type}.json](${type}.json).`,
      '',
      'Example detail:',
      '',
      '```json',
      json(eventExamples[type]).trimEnd(),
      '```',
      '',
    ]),
  ].join('\n');
}

/** Every file of docs/events/, by name, as `npm run gen:events` writes it. Throws when an example breaks its schema. */
export function eventDocs(): Map<string, string> {
  const files = new Map<string, string>();
  for (const type of EVENT_TYPES) {
    const checked = eventCatalog[type].detail.safeParse(eventExamples[type]);
    if (!checked.success) throw new Error(`the example ${type} detail does not satisfy its schema: ${checked.error.message}`);
    files.set(`${type}.json`, json(eventJsonSchema(type)));
  }
  files.set('README.md', readme());
  return files;
}
