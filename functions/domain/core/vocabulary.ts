// The values records, the API and the published events all name. Zod-free, so a decision that uses one leaves the
// API's schemas out of its bundle.

export const maintenanceKinds = ['planned', 'emergency'] as const;
export const maintenanceCategories = ['firmware', 'hardware', 'network', 'facility', 'other'] as const;
export const maintenanceStates = ['Declared', 'InProgress', 'Halted', 'Completed', 'Cancelled'] as const;

export const validationReasons = ['repair', 'maintenance', 'registration', 'provider'] as const;

/** Where a machine is in its life (machines/lifecycle.ts derives it). */
export const lifecycles = ['commissioning', 'available', 'assigned', 'cleanup', 'quarantined', 'in-repair', 'maintenance', 'validating', 'retired'] as const;

/** An instance's health as its tenant may know it (instances/tenant-health.ts). */
export const instanceHealths = ['healthy', 'degraded', 'maintenance-required'] as const;

export const powerStates = ['on', 'off', 'cycling'] as const;
export const powerResults = ['pending', 'accepted', 'failed'] as const;

export const replacementReasons = ['tenant', 'maintenance'] as const;

export const ticketStates = ['open', 'in-repair', 'resolved', 'unresolved'] as const;
export const ticketActions = ['repaired', 'validated', 'retired', 'no-fault-found'] as const;

/** What an org's capacity-events feed says happened to a machine, and why (capacity/capacity-events.ts). */
export const capacityChanges = ['delivered', 'withdrawn'] as const;
export const capacityReasons = ['reservation', 'reservation-released', 'repair', 'repair-return', 'maintenance', 'maintenance-return', 'retired'] as const;
