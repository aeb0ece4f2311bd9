import { describe, expect, it } from 'vitest';
import { historyItem, eventDeliveryItem, outboxEntryOf } from '#store/aggregates/event-items.ts';
import { instanceItem } from '#store/aggregates/instance-items.ts';
import { metaInstanceItem } from '#store/aggregates/meta-instance-items.ts';
import { publishedEvent } from '#domain/events/events.ts';
import { anInstance, aMetaInstance, AT } from '#test/support/fixtures.ts';
import { outboxFaults, violationsOf } from '#test/support/site-invariants.ts';

const config = { meta_instance: { max_replacements_in_flight: 2 } } as Parameters<typeof violationsOf>[1];
const rules = (items: Record<string, unknown>[]) => violationsOf(items, config).map((v) => v.rule);

describe('the safety rules the e2e sites are watched for', () => {
  it('a machine held by two live instances breaks them; a terminated holder does not', () => {
    const a = instanceItem(anInstance({ id: 'i-a', machineId: 'm-1', status: 'Ready' }), undefined);
    const b = instanceItem(anInstance({ id: 'i-b', machineId: 'm-1', status: 'Provisioning' }), undefined);
    const gone = instanceItem(anInstance({ id: 'i-c', machineId: 'm-1', status: 'Terminated' }), undefined);
    expect(rules([a, gone])).toEqual([]);
    expect(rules([a, b])).toEqual(['machine-held-twice']);
  });

  it('a meta-instance with more live members than minNodes breaks them', () => {
    const meta = metaInstanceItem(aMetaInstance({ id: 'meta-1', minNodes: 1 }), undefined);
    const member = (id: string, status: 'Ready' | 'Terminating') =>
      instanceItem(anInstance({ id, machineId: `m-${id}`, metaInstanceId: 'meta-1', status }), undefined);
    expect(rules([meta, member('i-1', 'Ready'), member('i-2', 'Terminating')])).toEqual([]);
    expect(rules([meta, member('i-1', 'Ready'), member('i-2', 'Ready')])).toEqual(['meta-instance-over-min-nodes']);
  });

  it('more replacements provisioning than the cap breaks them', () => {
    const replacement = (id: string) => instanceItem(anInstance({ id, machineId: `m-${id}`, replacement: true, status: 'Provisioning' }), undefined);
    expect(rules([replacement('i-1'), replacement('i-2')])).toEqual([]);
    expect(rules([replacement('i-1'), replacement('i-2'), replacement('i-3')])).toEqual(['replacements-over-cap']);
  });
});

describe('outbox delivery, once per id', () => {
  const entry = historyItem(
    { machineId: 'm-1', at: AT, actor: 'ops', action: 'repair-requested', message: 'repair', event: { type: 'RepairRequested', detail: { machineId: 'm-1' } } },
    'u1',
  );
  const outbox = outboxEntryOf(entry)!;
  const event = publishedEvent(outbox);
  const marker = eventDeliveryItem(String(event.detail.id), { machineId: 'm-1', at: AT, actor: 'event-bus', action: 'event-delivered', message: event.type });

  it('an entry delivered and marked is fine, even delivered twice alike, whatever the order of its keys', () => {
    expect(outboxFaults([entry, marker], [event, event])).toEqual([]);
    const reversed = { ...event, detail: Object.fromEntries(Object.entries(event.detail).reverse()) };
    expect(outboxFaults([entry, marker], [event, reversed])).toEqual([]);
  });
  it('an entry never published, or never marked, is a fault', () => {
    expect(outboxFaults([entry, marker], [])).toHaveLength(1);
    expect(outboxFaults([entry], [event])).toHaveLength(1);
  });
  it('one id delivered with two contents is a fault', () => {
    const other = { ...event, detail: { ...event.detail, machineId: 'm-2' } };
    expect(outboxFaults([entry, marker], [event, other])).toHaveLength(1);
  });
});
