// What a probe finds, before it becomes an alert in the heartbeat (docs/api.md "Health alerts"). Which findings keep a
// machine out of allocation is decided in ONE place, the table below, and docs/agent.md shows the same table.

import type { AgentAlertBody } from '#site/agent-contract.ts';

export type FindingKind =
  | 'gpu-missing'
  | 'gpu-lost'
  | 'gpu-driver-unreachable'
  | 'ecc-uncorrectable'
  | 'retired-pages-pending'
  | 'retired-pages'
  | 'row-remap-failure'
  | 'row-remap-pending'
  | 'xid-critical'
  | 'xid'
  | 'dcgm-failure'
  | 'dcgm-warning'
  | 'sel-critical'
  | 'sel-warning'
  | 'sensor-critical'
  | 'sensor-warning'
  | 'probe-failed';

export interface Finding {
  kind: FindingKind;
  /** What it is about, unique within the kind on one machine: a GPU's bus id, a sensor's name, an SEL record id. */
  subject: string;
  message: string;
}

type Classification = AgentAlertBody['classifications'][number];

/**
 * The one table: a finding's kind to the classifications its alert carries. PreventAllocations quarantines the
 * machine (the controller's hardware-health override); the others are reported and left to people.
 */
export const FINDING_CLASSIFICATIONS: Readonly<Record<FindingKind, readonly Classification[]>> = {
  'gpu-missing': ['PreventAllocations'],
  'gpu-lost': ['PreventAllocations'],
  'gpu-driver-unreachable': ['PreventAllocations'],
  'ecc-uncorrectable': ['PreventAllocations'],
  'retired-pages-pending': ['PreventAllocations'],
  'retired-pages': [],
  'row-remap-failure': ['PreventAllocations'],
  'row-remap-pending': ['PreventAllocations'],
  'xid-critical': ['PreventAllocations'],
  xid: [],
  'dcgm-failure': ['PreventAllocations'],
  'dcgm-warning': [],
  'sel-critical': ['PreventAllocations'],
  'sel-warning': [],
  'sensor-critical': ['PreventAllocations'],
  'sensor-warning': [],
  // A probe that cannot run says nothing about the hardware: reported, not acted on.
  'probe-failed': ['SuppressExternalAlerting'],
};

/**
 * XIDs that mean the GPU needs a reset or a repair before it takes work again (NVIDIA's XID catalogue: double-bit
 * ECC 48, row remapping 63/64, NVLink 74, fallen off the bus 79, uncontained ECC 94/95, GSP 119/120...). Others (13
 * graphics engine exception, 31 MMU fault, 43 reset channel) are most often the application's and are only reported.
 */
export const CRITICAL_XIDS: ReadonlySet<number> = new Set([48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 136, 140, 143]);

const ALERT_ID_MAX = 128;

/** The alert a finding becomes; `probe` names where it came from, so two probes' findings never share an id. */
export function alertOf(probe: string, finding: Finding): AgentAlertBody {
  const id = `${probe}:${finding.kind}:${finding.subject}`.slice(0, ALERT_ID_MAX);
  return { id, message: finding.message.slice(0, 4096), classifications: [...FINDING_CLASSIFICATIONS[finding.kind]] };
}
