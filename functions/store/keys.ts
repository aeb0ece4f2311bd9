import { auditKeys } from '#store/aggregates/audit-items.ts';
import { eventKeys } from '#store/aggregates/event-items.ts';
import { instanceKey } from '#store/aggregates/instance-items.ts';
import { machineKey } from '#store/aggregates/machine-items.ts';
import { maintenanceKeys } from '#store/aggregates/maintenance-items.ts';
import { metaInstanceKey } from '#store/aggregates/meta-instance-items.ts';
import { quotaUsageKeys } from '#store/aggregates/quota-usage-items.ts';
import { reservationKeys } from '#store/aggregates/reservation-items.ts';
import { rosterKeys } from '#store/aggregates/roster-items.ts';
import { siteKeys } from '#store/aggregates/site-items.ts';
import { summaryKeys } from '#store/aggregates/summary-items.ts';

/** Every record kind's table keys, for code that names items outside their aggregate: the stream's filters, migrations, tests. */
export const keys = {
  machine: machineKey,
  instance: instanceKey,
  metaInstance: metaInstanceKey,
  ...siteKeys,
  ...rosterKeys,
  ...maintenanceKeys,
  ...reservationKeys,
  ...summaryKeys,
  ...eventKeys,
  ...auditKeys,
  ...quotaUsageKeys,
};
