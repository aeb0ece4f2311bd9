import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { createStreamHandler } from '#handlers/stream.ts';
import { createRegistry, defineReconciler, roomFor, type Reconciler, type Ref } from '#reconcilers/reconciler.ts';
import { MAX_PASSES, startRun } from '#reconcilers/runner.ts';
import type { AppContext } from '#runtime/context.ts';
import { StaleWriteError } from '#store/port.ts';
import { NOW, aMachine } from '#test/support/fixtures.ts';

// The runner without DynamoDB: fake reconcilers over a fake store that only records what is committed.

function harness(options: { commit?: (change: Change) => Promise<void>; getInstance?: (id: string) => Promise<unknown> } = {}) {
  const events: string[] = [];
  const errors: Array<Record<string, unknown>> = [];
  const infos: Array<Record<string, unknown>> = [];
  const ctx = {
    store: {
      commit: async (change: Change) => {
        await options.commit?.(change);
        events.push(`commit ${change.history.map((h) => h.action).join(',')}`);
      },
      getInstance: options.getInstance ?? (async () => null),
    },
    clock: { now: () => NOW },
    log: {
      info: (message: string, fields: Record<string, unknown>) => void infos.push({ message, ...fields }),
      warn: () => undefined,
      error: (_m: string, fields: Record<string, unknown>) => void errors.push(fields),
    },
  } as unknown as AppContext;
  return { ctx, events, errors, infos };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));
const history = (action: string) => ({ machineId: 'm', at: 'now', actor: 'test', action });

/** A reconciler of `kind` that logs each load, and decides what `decide` says for the id. */
function fake(kind: string, decide: (id: string) => ReturnType<Reconciler['decide']>, events: string[], load?: (id: string) => Promise<void>): Reconciler {
  return defineReconciler({
    kind,
    watches: {},
    async load(_ctx, id: string) {
      events.push(`load ${kind}:${id}`);
      await load?.(id);
      return id;
    },
    decide,
  });
}

const ref = (entity: string, id: string): Ref => ({ entity, id });

describe('reconciler runner', () => {
  it('reconciles each entity once per run, however often and from wherever it is asked for', async () => {
    const { ctx, events } = harness();
    const registry = createRegistry([fake('a', () => ({}), events)]);
    const run = startRun(ctx, { registry });
    await Promise.all([run.reconcile([ref('a', '1'), ref('a', '1'), ref('a', '2')]), run.reconcile([ref('a', '1')])]);
    await run.reconcile([ref('a', '2')]);
    expect(events.sort()).toEqual(['load a:1', 'load a:2']);
  });

  it('cascades to what a commit concerns and to what a decision enqueues, each entity at most once, cycles included', async () => {
    const { ctx, events } = harness();
    const parent = fake(
      'parent',
      (id) => ({ change: { machines: [{ before: null, after: aMachine({ id: 'm-shared' }) }], history: [history(`by ${id}`)] } }),
      events,
    );
    const child = {
      ...fake('child', () => ({ enqueue: [ref('parent', '1'), ref('parent', '3')] }), events),
      watches: { machine: { concerns: (_b: unknown, _a: unknown, id: string) => [id] } },
    } as Reconciler;
    const run = startRun(ctx, { registry: createRegistry([parent, child]) });
    await run.reconcile([ref('parent', '1'), ref('parent', '2')]);
    const loads = events.filter((e) => e.startsWith('load'));
    expect(loads.sort()).toEqual(['load child:m-shared', 'load parent:1', 'load parent:2', 'load parent:3']);
  });

  it("reconciles once what one decision's changes concern many times (a walk's machines all concern their type)", async () => {
    const { ctx, events } = harness();
    const machine = (id: string) => ({ machines: [{ before: null, after: aMachine({ id, machineType: 'gb200' }) }], history: [] });
    const walk = fake('walk', () => ({ separately: [machine('m1'), machine('m2')], change: machine('m3') }), events);
    const byType = {
      ...fake('by-type', () => ({}), events),
      watches: { machine: { concerns: (_b: unknown, after: { machineType: string }) => [after.machineType] } },
    } as Reconciler;
    await startRun(ctx, { registry: createRegistry([walk, byType]) }).reconcile([ref('walk', 'w')]);
    expect(events.filter((e) => e.startsWith('load'))).toEqual(['load walk:w', 'load by-type:gb200']);
  });

  it('works for the request it is asked for: its commits, those of what they lead to, and its log lines name it', async () => {
    const committed: Change[] = [];
    const { ctx, infos } = harness({ commit: async (change) => void committed.push(change) });
    const parent = fake(
      'parent',
      (id) => ({ change: { machines: [{ before: null, after: aMachine({ id: `m-${id}` }) }], history: [] }, summary: 'placed' }),
      [],
    );
    const child = {
      ...fake('child', (id) => ({ change: { machines: [{ before: null, after: aMachine({ id: `child-of-${id}` }) }], history: [] } }), []),
      watches: { machine: { concerns: (_b: unknown, _a: unknown, id: string) => (id.startsWith('m-') ? [id] : []) } },
    } as Reconciler;
    await startRun(ctx, { registry: createRegistry([parent, child]) }).reconcile([ref('parent', '1')], 'req-1');
    expect(committed.flatMap((change) => change.machines!.map((m) => [m.after.id, m.after.lastRequestId]))).toEqual([
      ['m-1', 'req-1'],
      ['child-of-m-1', 'req-1'],
    ]);
    expect(infos).toEqual([{ message: 'reconciled', correlation_id: 'req-1', entity: 'parent', id: '1', outcome: 'placed' }]);
  });

  it('runs no more than `concurrency` reconciles at once', async () => {
    const { ctx, events } = harness();
    let active = 0;
    let most = 0;
    const slow = fake(
      'slow',
      () => ({}),
      events,
      async () => {
        active += 1;
        most = Math.max(most, active);
        await tick();
        active -= 1;
      },
    );
    const run = startRun(ctx, { registry: createRegistry([slow]), concurrency: 3 });
    await run.reconcile(Array.from({ length: 10 }, (_, i) => ref('slow', String(i))));
    expect(events).toHaveLength(10);
    expect(most).toBe(3);
  });

  it('reconciles the ids of a batched kind by group: one load per batch, batches of a group one after another', async () => {
    const { ctx, events } = harness();
    let inFlight = 0;
    let overlapped = false;
    const batched = defineReconciler({
      kind: 'agg',
      watches: {},
      batch: {
        room: roomFor(3),
        groupOf: (id: string) => id.split(':')[0]!,
        load: async (_ctx, ids: string[]) => {
          events.push(`load ${[...ids].sort().join(',')}`);
          inFlight += 1;
          if (inFlight > 1) overlapped = true;
          await tick();
          inFlight -= 1;
          return ids;
        },
      },
      load: async (_ctx, id: string) => [id],
      decide: (ids: string[]) => ({ change: { history: ids.map(history) } }),
    });
    const run = startRun(ctx, { registry: createRegistry([batched]) });
    const ids = ['x:1', 'x:2', 'y:1', 'x:3', 'x:4', 'y:2'];
    await Promise.all([run.reconcile(ids.slice(0, 3).map((id) => ref('agg', id))), run.reconcile(ids.slice(3).map((id) => ref('agg', id)))]);
    expect(events.filter((e) => e.startsWith('load')).sort()).toEqual(['load x:1,x:2,x:3', 'load x:4', 'load y:1,y:2']);
    expect(events.filter((e) => e.startsWith('commit')).sort()).toEqual(['commit x:1,x:2,x:3', 'commit x:4', 'commit y:1,y:2']);
    // While the first x batch ran, the second waited; only different groups ran side by side.
    expect(events.indexOf('commit x:1,x:2,x:3')).toBeLessThan(events.indexOf('load x:4'));
    expect(overlapped).toBe(true);
    // Each id once per run: asking again joins nothing new.
    await run.reconcile([ref('agg', 'x:1')]);
    expect(events.filter((e) => e.startsWith('load'))).toHaveLength(3);
  });

  it("starts a batched kind's batches once the run's other work is done, each id in the first batch with room for it", async () => {
    const { ctx, events } = harness();
    const batched = defineReconciler({
      kind: 'agg',
      watches: { machine: { concerns: (_b: unknown, _a: unknown, id: string) => [id] } },
      batch: {
        // Room for two racks (the part before the dot) a batch, however many of their ids.
        room: () => {
          const racks = new Set<string>();
          return {
            admit(id: string) {
              const rack = id.split('.')[0]!;
              if (!racks.has(rack) && racks.size === 2) return false;
              racks.add(rack);
              return true;
            },
          };
        },
        groupOf: () => 'all',
        load: async (_ctx, ids: string[]) => (events.push(`load ${[...ids].sort().join(',')}`), ids),
      },
      load: async (_ctx, id: string) => [id],
      decide: () => ({}),
    });
    // Each walker commits machines of racks a, b and c over several passes, some time apart.
    const walker = fake(
      'walker',
      (id) => ({ change: { machines: [{ before: null, after: aMachine({ id }) }], history: [] } }),
      events,
      async () => void (await tick()),
    );
    const run = startRun(ctx, { registry: createRegistry([batched, walker]) });
    await run.reconcile(['a.1', 'b.1', 'c.1', 'a.2', 'c.2', 'b.2'].map((id) => ref('walker', id)));
    const loads = events.filter((e) => e.startsWith('load'));
    // Every walker ran before any batch; rack c found the first batch full and opened the second.
    expect(loads.slice(0, 6).every((e) => e.startsWith('load walker:'))).toBe(true);
    expect(loads.slice(6)).toEqual(['load a.1,a.2,b.1,b.2', 'load c.1,c.2']);
  });

  it('commits separate changes each on its own before the change, and the change only if none lost its race', async () => {
    let lost = false;
    const { ctx, events } = harness({
      commit: async (change) => {
        // m-2's first commit loses its race.
        if (change.machines?.[0]?.after.id === 'm-2' && !lost) {
          lost = true;
          throw new StaleWriteError('lost');
        }
      },
    });
    const single = (id: string): Change => ({ machines: [{ before: null, after: aMachine({ id }) }], history: [history(id)] });
    let passes = 0;
    const walker = fake(
      'walker',
      () => {
        passes += 1;
        return { separately: [single('m-1'), single('m-2')], change: { history: [history('settle')] }, requeueAt: passes === 1 ? NOW : undefined };
      },
      events,
    );
    const watcher = {
      ...fake('watcher', () => ({}), events),
      watches: { machine: { concerns: (_b: unknown, _a: unknown, id: string) => [id] } },
    } as Reconciler;
    const run = startRun(ctx, { registry: createRegistry([walker, watcher]) });
    // m-2 loses: m-1 stays committed (and concerns its watcher), the settle waits for the next pass, which commits all.
    await run.reconcile([ref('walker', 'w')]);
    const commits = events.filter((e) => e.startsWith('commit'));
    expect(commits).toEqual(['commit m-1', 'commit m-1', 'commit m-2', 'commit settle']);
    expect(events).toContain('load watcher:m-1');
  });

  it('reports a failure to every caller it concerns, cascades included, and to no other', async () => {
    const { ctx, events, errors } = harness();
    const flaky = fake(
      'flaky',
      () => ({}),
      events,
      async (id) => {
        if (id === 'bad') throw new Error('table gone');
      },
    );
    const leader = fake('leader', (id) => ({ enqueue: [ref('flaky', id === 'to-bad' ? 'bad' : 'fine')] }), events);
    const run = startRun(ctx, { registry: createRegistry([flaky, leader]) });
    await expect(run.reconcile([ref('flaky', 'bad')])).rejects.toThrow('table gone');
    await expect(run.reconcile([ref('flaky', 'good')])).resolves.toBeUndefined();
    await expect(run.reconcile([ref('leader', 'to-fine')])).resolves.toBeUndefined();
    const other = startRun(ctx, { registry: createRegistry([flaky, leader]) });
    await expect(other.reconcile([ref('leader', 'to-bad')])).rejects.toThrow('table gone');
    await expect(run.reconcile([ref('nobody', 'x')])).rejects.toThrow(/no reconciler of kind nobody/);
    expect(errors.map((e) => `${e.entity}:${e.id}`)).toEqual(['flaky:bad', 'flaky:bad', 'nobody:x']);
  });

  it('performs an effect only after its claim committed, then commits what settle decides', async () => {
    let rivalWins = true;
    const { ctx, events } = harness({
      commit: async (change) => {
        if (rivalWins && change.history[0]?.action === 'claim') throw new StaleWriteError('rival');
      },
    });
    const withEffect = defineReconciler({
      kind: 'effectful',
      watches: {},
      load: async (_ctx, id: string) => (events.push(`load ${id}`), id),
      decide: (id: string) => ({ change: { history: [history('claim')] }, effect: `call ${id}` }),
      effects: {
        perform: async (_ctx, effect: string) => (events.push(effect), 'answered'),
        settle: (_id: string, _effect: string, result: string) => ({ history: [history(result)] }),
      },
    });
    await startRun(ctx, { registry: createRegistry([withEffect]) }).reconcile([ref('effectful', 'x')]);
    expect(events).toEqual(['load x']);

    events.length = 0;
    rivalWins = false;
    await startRun(ctx, { registry: createRegistry([withEffect]) }).reconcile([ref('effectful', 'x')]);
    expect(events).toEqual(['load x', 'commit claim', 'call x', 'load x', 'commit answered']);
  });

  it('looks again at once while a decision asks to, and no more than MAX_PASSES times', async () => {
    const { ctx, events } = harness();
    let passes = 0;
    const settling = fake('settling', () => (++passes < 3 ? { change: { history: [history('step')] }, requeueAt: NOW } : {}), events);
    const later = fake('later', () => ({ change: { history: [history('later')] }, requeueAt: new Date(NOW.getTime() + 1) }), events);
    const restless = fake('restless', () => ({ change: { history: [history('again')] }, requeueAt: NOW }), events);
    const run = startRun(ctx, { registry: createRegistry([settling, later, restless]) });
    await run.reconcile([ref('settling', '1')]);
    await run.reconcile([ref('later', '1')]);
    await run.reconcile([ref('restless', '1')]);
    const count = (what: string) => events.filter((e) => e === what).length;
    expect([count('load settling:1'), count('load later:1'), count('load restless:1')]).toEqual([3, 1, MAX_PASSES]);
  });

  it('serves what a decision enqueues in order: each starts after the one before finished', async () => {
    const { ctx, events } = harness();
    const queue = fake('queue', () => ({ enqueue: [ref('waiter', 'first'), ref('waiter', 'second')] }), events);
    const waiter = fake(
      'waiter',
      () => ({}),
      events,
      async (id) => {
        await tick();
        events.push(`done ${id}`);
      },
    );
    await startRun(ctx, { registry: createRegistry([queue, waiter]), concurrency: 8 }).reconcile([ref('queue', 'gb200')]);
    expect(events).toEqual(['load queue:gb200', 'load waiter:first', 'done first', 'load waiter:second', 'done second']);
  });
});

describe('stream handler', () => {
  const instanceRecord = (id: string, sequence: string): DynamoDBRecord => ({
    eventName: 'MODIFY',
    eventSource: 'aws:dynamodb',
    dynamodb: { Keys: { pk: { S: `INSTANCE#${id}` }, sk: { S: '#INSTANCE' } }, SequenceNumber: sequence },
  });

  it('reports exactly the records whose reconcile failed, and reconciles a twice-named entity once', async () => {
    const reads: string[] = [];
    const { ctx } = harness({
      getInstance: async (id) => {
        reads.push(id);
        if (id === 'bad') throw new Error('throttled');
        return null;
      },
    });
    const handler = createStreamHandler(ctx);
    const result = await handler({ Records: [instanceRecord('good', '1'), instanceRecord('bad', '2'), instanceRecord('good', '3')] });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: '2' }]);
    expect(reads.sort()).toEqual(['bad', 'good']);
  });

  it('settles an effect first on the snapshot its claim left, and on a fresh load once that settle loses its race', async () => {
    let commits = 0;
    const { ctx, events } = harness({
      commit: async () => {
        commits += 1;
        // The first settle (the second commit) meets a rival's write.
        if (commits === 2) throw new StaleWriteError('rival');
      },
    });
    const loads: Array<{ hint: unknown }> = [];
    const reconciler = defineReconciler({
      kind: 'e',
      watches: {},
      async load(_ctx: AppContext, id: string, related?: unknown) {
        loads.push({ hint: related });
        return { id, state: 'loaded' };
      },
      relatedOf: () => ({ machines: ['m-related'] }),
      advance: (snapshot: { id: string; state: string }) => ({ ...snapshot, state: 'claimed' }),
      decide: (snapshot: { id: string; state: string }) => ({ change: { history: [history(`claim-${snapshot.state}`)] }, effect: 'call' }),
      effects: {
        perform: async () => 'answer',
        settle: (snapshot: { id: string; state: string }) => ({ history: [history(`settle-${snapshot.state}`)] }),
      },
    });
    await startRun(ctx, { registry: createRegistry([reconciler]) }).reconcile([{ entity: 'e', id: '1', related: { instances: ['i-hint'] } }]);
    // The first load gets the concern's hint; the reload after the lost settle what the snapshot names.
    expect(loads).toEqual([{ hint: { instances: ['i-hint'] } }, { hint: { machines: ['m-related'] } }]);
    expect(events).toEqual(['commit claim-loaded', 'commit settle-loaded']);
  });

  it('looks again at once after a lost race only when the decision asks to (retryIfLost), not after a commit', async () => {
    let fail = true;
    const { ctx, events } = harness({
      commit: async () => {
        if (fail) {
          fail = false;
          throw new StaleWriteError('rival');
        }
      },
    });
    const registry = createRegistry([fake('s', () => ({ change: { history: [history('sum')] }, retryIfLost: true }), events)]);
    await startRun(ctx, { registry }).reconcile([ref('s', '1')]);
    expect(events).toEqual(['load s:1', 'load s:1', 'commit sum']);
  });
});
