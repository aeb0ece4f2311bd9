import type { Classification, HealthOverride, Issue, Machine } from '#domain/core/model.ts';
import { unprocessable } from '#domain/core/rejection.ts';

// Health override templates (API.md "Templates"). Each writes its own source, so adding one never silently
// replaces another; adding a template whose source is present replaces just that entry.

export const SOURCES = {
  tenantReportedIssue: 'tenant-reported-issue',
  repairRequest: 'repair-request',
  onlineRepair: 'request-online-repair',
  outForRepair: 'out-for-repair',
  /** The site agent's health alerts (domain/repair/agent-alerts.ts): owned by the agent, never added from a template. */
  hardwareHealth: 'hardware-health',
} as const;

interface Template {
  source: string;
  alertId: string;
  mode: 'merge' | 'replace';
  classifications: Classification[];
  defaultMessage: string;
}

const templates: Record<string, Template> = {
  'tenant-reported-issue': {
    source: SOURCES.tenantReportedIssue,
    alertId: 'TenantReportedIssue',
    mode: 'merge',
    classifications: ['PreventAllocations', 'SuppressExternalAlerting'],
    defaultMessage: 'Tenant reported an issue with this machine',
  },
  'request-repair': {
    source: SOURCES.repairRequest,
    alertId: 'RequestRepair',
    mode: 'merge',
    classifications: ['PreventAllocations', 'SuppressExternalAlerting'],
    defaultMessage: 'Repair requested',
  },
  'request-online-repair': {
    source: SOURCES.onlineRepair,
    alertId: 'RequestOnlineRepair',
    mode: 'merge',
    classifications: ['PreventInstanceDeletion'],
    defaultMessage: 'Online repair in progress',
  },
  'out-for-repair': {
    source: SOURCES.outForRepair,
    alertId: 'OutForRepair',
    mode: 'merge',
    classifications: ['PreventAllocations', 'SuppressExternalAlerting'],
    defaultMessage: 'Out for manual repair',
  },
  degraded: {
    source: 'degraded',
    alertId: 'Degraded',
    mode: 'merge',
    classifications: ['PreventAllocations'],
    defaultMessage: 'Machine degraded',
  },
  'internal-maintenance': {
    source: 'internal-maintenance',
    alertId: 'InternalMaintenance',
    mode: 'merge',
    classifications: ['PreventAllocations', 'SuppressExternalAlerting'],
    defaultMessage: 'Internal maintenance',
  },
  'mark-healthy': {
    source: 'mark-healthy',
    alertId: 'MarkHealthy',
    mode: 'replace',
    classifications: [],
    defaultMessage: 'Marked healthy by an operator',
  },
};

export const templateNames = Object.keys(templates);

/** `RequestRepair` → `request-repair`: the docs' PascalCase names are accepted too. */
export function templateByName(name: string): Template & { name: string } {
  const kebab = name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
  const template = templates[kebab];
  if (!template) {
    throw unprocessable('unknown-template', `unknown health override template "${name}"; known: ${templateNames.join(', ')}`);
  }
  return { ...template, name: kebab };
}

export interface OverrideRequest {
  template: string;
  message?: string | undefined;
  mode?: 'merge' | 'replace' | undefined;
  issue?: Issue | undefined;
  tenantMessage?: string | undefined;
}

export function buildOverride(machineId: string, request: OverrideRequest, createdBy: string, at: string): HealthOverride {
  const template = templateByName(request.template);
  const message = request.message ?? request.issue?.summary ?? template.defaultMessage;
  return {
    source: template.source,
    mode: request.mode ?? template.mode,
    alerts:
      template.classifications.length === 0
        ? []
        : [
            {
              id: template.alertId,
              target: machineId,
              message,
              ...(request.tenantMessage ? { tenantMessage: request.tenantMessage } : {}),
              classifications: template.classifications,
            },
          ],
    ...(request.issue ? { issue: request.issue } : {}),
    createdBy,
    createdAt: at,
  };
}

export const hasOverride = (machine: Machine, source: string): boolean => machine.healthOverrides.some((o) => o.source === source);

/** Adding an override whose source is present replaces that entry only. */
export const withOverride = (overrides: HealthOverride[], override: HealthOverride): HealthOverride[] => [
  ...overrides.filter((o) => o.source !== override.source),
  override,
];

export const withoutOverride = (overrides: HealthOverride[], source: string): HealthOverride[] => overrides.filter((o) => o.source !== source);
