import type { AnyPart } from '../part.ts';
import { apiPart } from './api.ts';
import { coldstartPart } from './coldstart.ts';
import { contentionPart } from './contention.ts';
import { heartbeatPart } from './heartbeat.ts';
import { maintenancePart } from './maintenance.ts';
import { hostPart } from './host.ts';
import { metaPart } from './meta.ts';
import { migrationPart } from './migration.ts';
import { monthlyCostPart } from './monthly-cost.ts';
import { partitionHeatPart } from './partition-heat.ts';
import { placementPart } from './placement.ts';
import { reservationPart } from './reservation.ts';
import { scalePart } from './scale.ts';
import { scaleBurstPart } from './scale-burst.ts';
import { summaryPart } from './summary.ts';
import { sweepPart } from './sweep.ts';
import { workflowsPart } from './workflows.ts';

/** Every part, in the order a run takes them: a part that reads others' results comes after them. */
export const parts: readonly AnyPart[] = [
  apiPart,
  hostPart,
  heartbeatPart,
  metaPart,
  placementPart,
  reservationPart,
  sweepPart,
  contentionPart,
  coldstartPart,
  scalePart,
  scaleBurstPart,
  summaryPart,
  maintenancePart,
  migrationPart,
  workflowsPart,
  monthlyCostPart,
  partitionHeatPart,
];
