// The repair pipeline: the counts at each stage, then a table per stage (quarantined, waiting for a repair tenant,
// in repair, out for repair, stuck repairs, completed and failed in the last 24 h). It reads only the machines that
// carry the pipeline's overrides, the stuck repairs (GET /admin/repairs?stuck=true, shared as `stuck`), and the
// history of the machines that may have a repair outcome.
import { byId, createTable, h, machineLink, place, tileList, time } from '../dom.js';
import { duration, issueOf, latestOutcome, outcomeCandidates, override, pipeline, PIPELINE_SOURCES, RECENT_MS, since, SOURCES } from '../fleet.js';
import { issueCell } from '../machine-parts.js';

/** @import { Machine } from '../fleet.js' */
/** @typedef {NonNullable<ReturnType<typeof latestOutcome>>} Outcome */
/** @typedef {Machine['healthOverrides'][number]['issue']} Issue */
// Each table's row holds what the row shows, "… ago" included, so the row changes only when its text does.
/** @typedef {{ id: string, issue: Issue, at?: string, ago: string, by: string, heldBack: boolean }} QuarantinedRow */
/** @typedef {{ id: string, issue: Issue, ago: string, stuck: boolean, at?: string, state: string }} WaitingRow */
/** @typedef {{ id: string, issue: Issue, repairStatus?: string, stuck: boolean, eta?: string, instanceId?: string, at?: string, ago: string }} InRepairRow */
/** @typedef {{ id: string, why: string, issue: Issue, at?: string, by: string }} OutForRepairRow */
/** @typedef {{ id: string, stage: string, waiting: string, since: string }} StuckRow */
/** @typedef {{ id: string, outcome: string, at: string, ago: string, repairStatus?: string, issue: Issue }} OutcomeRow */

/** When, and how long ago. */
const whenAgo = (/** @type {{ at?: string, ago: string }} */ row) => h('span', null, time(row.at), h('span', { class: 'muted' }, ` (${row.ago} ago)`));
const stuckFlag = (/** @type {{ stuck: boolean }} */ row) => (row.stuck ? h('span', { class: 'badge bad' }, 'stuck') : null);
const byMachine = (/** @type {{ id: string }} */ row) => row.id;

/**
 * A table of the pipeline, a row per machine.
 * @template {{ id: string }} T
 * @param {string} testid @param {string[]} columns @param {(row: T) => unknown[]} cells
 */
const stageTable = (testid, columns, cells) => createTable({ columns, key: byMachine, cells, testid: `pipeline-${testid}`, rowTestid: 'pipeline-row' });

/** @param {import('../poll.js').PanelContext} context */
export function createPipeline({ api, store }) {
  const stages = h('div', { class: 'stages', 'aria-label': 'Machines at each stage' });
  const showStages = tileList(stages, 'span', 'stage');
  const quarantined = stageTable('quarantined', ['Machine', 'Issue', 'Reported', 'By', 'Note'], (/** @type {QuarantinedRow} */ row) => [
    machineLink(row.id),
    issueCell(row.issue),
    whenAgo(row),
    row.by,
    row.heldBack ? h('span', { class: 'badge warn' }, 'repair request held back by the storm breaker') : '',
  ]);
  const waiting = stageTable('waiting', ['Machine', 'Issue', 'Waiting for', 'Requested', 'State'], (/** @type {WaitingRow} */ row) => [
    machineLink(row.id),
    issueCell(row.issue),
    h('span', null, row.ago, ' ', stuckFlag(row)),
    time(row.at),
    row.state,
  ]);
  const inRepair = stageTable('in-repair', ['Machine', 'Issue', 'repair_status', 'repair_eta', 'Instance', 'Requested'], (/** @type {InRepairRow} */ row) => [
    machineLink(row.id),
    issueCell(row.issue),
    h('span', null, row.repairStatus ?? h('span', { class: 'muted' }, 'not set'), ' ', stuckFlag(row)),
    row.eta ?? '',
    h('code', null, row.instanceId),
    whenAgo(row),
  ]);
  const outForRepair = stageTable('out-for-repair', ['Machine', 'Why', 'Issue', 'Since', 'By'], (/** @type {OutForRepairRow} */ row) => [
    machineLink(row.id),
    h('span', null, /^Escalated/.test(row.why) ? h('span', { class: 'badge bad' }, 'escalated') : null, ' ', row.why),
    issueCell(row.issue),
    time(row.at),
    row.by,
  ]);
  const stuckTable = stageTable('stuck', ['Machine', 'Stage', 'Waiting', 'Since'], (/** @type {StuckRow} */ row) => [
    machineLink(row.id),
    row.stage,
    row.waiting,
    time(row.since),
  ]);
  const outcomes = stageTable('outcomes', ['Machine', 'Outcome', 'When', 'repair_status', 'Issue repaired'], (/** @type {OutcomeRow} */ row) => [
    machineLink(row.id),
    h('span', { class: `badge ${row.outcome === 'Completed' ? 'good' : 'bad'}` }, row.outcome),
    whenAgo(row),
    row.repairStatus ?? '',
    row.issue ? issueCell(row.issue) : '',
  ]);
  const body = byId('pipeline-body');

  /** Machines with a pipeline override (three filtered listings), not the whole fleet. @type {Machine[] | undefined} */
  let machines;
  /** Repair outcomes found in machine histories, by machine id, with the machine version they were read at. */
  /** @type {Map<string, { version: number, outcome: Outcome | null }>} */
  const outcomesById = new Map();

  /** One listing per override the pipeline shows (the repair-request one reads its own index). */
  async function loadMachines() {
    const listing = (/** @type {string} */ healthOverride) => api.list('/admin/machines', { params: { query: { healthOverride } } }, { limit: 500 });
    const lists = await Promise.all(PIPELINE_SOURCES.map(listing));
    return [...new Map(lists.flat().map((m) => [m.id, m])).values()];
  }

  /**
   * Reads the history of machines that may have a recent repair outcome, once per machine version; and of machines
   * that just left the pipeline (a completed repair leaves no override behind), once.
   */
  async function loadOutcomes(/** @type {Machine[]} */ now, /** @type {Machine[]} */ left) {
    const stale = [...outcomeCandidates(now).filter((m) => outcomesById.get(m.id)?.version !== m.version), ...left];
    // A few at a time: after a storm there may be many.
    for (let i = 0; i < stale.length; i += 8) {
      await Promise.all(
        stale.slice(i, i + 8).map(async (m) => {
          const history = await api.list('/admin/machines/{id}/history', { params: { path: { id: m.id } } }, { limit: 50, maxPages: 1 });
          outcomesById.set(m.id, { version: m.version, outcome: latestOutcome(history) });
        }),
      );
    }
  }

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const [listed, stuck] = await Promise.all([
        attempt(loadMachines),
        attempt(() => api.optional(() => api.list('/admin/repairs', { params: { query: { stuck: 'true' } } }))),
      ]);
      if (stuck !== undefined) store.set('stuck', stuck);
      if (listed === undefined) return;
      const left = (machines ?? []).filter((m) => !listed.some((now) => now.id === m.id));
      machines = listed;
      await attempt(() => loadOutcomes(listed, left));
    },

    /** @param {number} now */
    render(now) {
      if (!machines) return;
      const p = pipeline(machines);
      const heldBack = new Set(store.get('safety')?.repairStorm?.heldBack ?? []);
      const stuck = store.get('stuck');
      const stuckIds = new Set((stuck ?? []).map((s) => s.machineId));
      const recent = [...outcomesById.values()]
        .map((o) => o.outcome)
        .filter((o) => o !== null)
        .filter((o) => now - Date.parse(o.at) <= RECENT_MS)
        .sort((a, b) => b.at.localeCompare(a.at));
      const requested = (/** @type {Machine} */ m) => override(m, SOURCES.repairRequest)?.createdAt;

      showStages([
        { testid: 'quarantined-count', label: 'quarantined', value: p.quarantined.length },
        { testid: 'waiting-count', label: 'waiting for a repair tenant', value: p.waiting.length },
        { testid: 'in-repair-count', label: 'in repair', value: p.inRepair.length },
        { testid: 'out-for-repair-count', label: 'out for repair', value: p.outForRepair.length },
        { testid: 'outcomes-count', label: 'completed or failed, last 24 h', value: recent.length },
      ]);
      quarantined.show(
        p.quarantined.map((m) => {
          const o = override(m, SOURCES.reported);
          return { id: m.id, issue: o?.issue, at: o?.createdAt, ago: since(o?.createdAt, now), by: o?.createdBy ?? '', heldBack: heldBack.has(m.id) };
        }),
        { caption: 'Quarantined: reported by a tenant, no repair requested', empty: 'No machine is quarantined without a repair request.' },
      );
      waiting.show(
        p.waiting.map((m) => ({ id: m.id, issue: issueOf(m), ago: since(requested(m), now), stuck: stuckIds.has(m.id), at: requested(m), state: m.state })),
        { caption: 'Waiting for a repair tenant: repair requested, not claimed yet', empty: 'No repair request is waiting.' },
      );
      inRepair.show(
        p.inRepair.map((m) => ({
          id: m.id,
          issue: issueOf(m),
          repairStatus: m.labels.repair_status,
          stuck: stuckIds.has(m.id),
          eta: m.labels.repair_eta,
          instanceId: m.instanceId,
          at: requested(m),
          ago: since(requested(m), now),
        })),
        { caption: 'In repair: claimed by a repair tenant', empty: 'No machine is in repair.' },
      );
      outForRepair.show(
        p.outForRepair.map((m) => {
          const o = override(m, SOURCES.outForRepair);
          return { id: m.id, why: o?.alerts?.[0]?.message ?? '', issue: issueOf(m), at: o?.createdAt, by: o?.createdBy ?? '' };
        }),
        { caption: 'Out for repair: taken out by a provider or escalated', empty: 'No machine is out for repair.' },
      );
      if (stuck) {
        stuckTable.show(
          stuck.map((s) => ({ id: s.machineId, stage: s.stage, waiting: duration((s.waitingMinutes ?? 0) * 60_000), since: s.since })),
          { caption: 'Stuck repairs: past their service-level time', empty: 'No repair is stuck.' },
        );
      }
      outcomes.show(
        recent.map((o) => ({ id: o.machineId, outcome: o.outcome, at: o.at, ago: since(o.at, now), repairStatus: o.repairStatus, issue: o.issue })),
        { caption: 'Completed and failed in the last 24 h', empty: 'No repair finished in the last 24 hours.' },
      );
      // The stuck-repairs table only where the API has the route.
      place(body, [stages, quarantined.el, waiting.el, inRepair.el, outForRepair.el, ...(stuck ? [stuckTable.el] : []), outcomes.el]);
    },
  };
}
