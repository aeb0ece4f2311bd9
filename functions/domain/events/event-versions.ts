// The version of each event type's detail (event-schemas.ts holds the details' shapes). Apart from the schemas so
// that the functions emitting events do not build them at every cold start: they need the versions only.

export const EVENT_VERSIONS = {
  MachineQuarantined: 1,
  RepairRequested: 1,
  RepairCompleted: 1,
  RepairFailed: 1,
  RepairEscalated: 1,
  RepairStormDetected: 1,
  RepairStuck: 1,
  SiteAgentSilent: 1,
  MaintenanceDeclared: 1,
  MaintenanceHandBackDue: 1,
  MaintenanceEnforced: 1,
  MaintenanceHalted: 1,
  MaintenanceOverdue: 1,
  MaintenanceCompleted: 1,
  ValidationPassed: 1,
  ValidationFailed: 1,
  ValidationStuck: 1,
  MachineRetired: 1,
  CapacityDelivered: 1,
  CapacityWithdrawn: 1,
} as const;

export type EventType = keyof typeof EVENT_VERSIONS;
export type MaintenanceEventType = Extract<EventType, `Maintenance${string}`>;
export type CapacityEventType = Extract<EventType, `Capacity${string}`>;
export type MachineEventType = Exclude<EventType, 'SiteAgentSilent' | MaintenanceEventType | CapacityEventType>;
