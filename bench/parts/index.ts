import type { AnyPart } from '../part.ts';
import { apiPart } from './api.ts';
import { coldstartPart } from './coldstart.ts';
import { contentionPart } from './contention.ts';
import { heartbeatPart } from './heartbeat.ts';
import { maintenancePart } from './maintenance.ts';
import { hostPart } from './host.ts';
import { metaPart } from './meta.ts';
import { monthlyCostPart } from './monthly-cost.ts';
import { partitionHeatPart } from './partition-heat.ts';
import { placementPart } from './placement.ts';
import { scalePart } from './scale.ts';
import { sweepPart } from './sweep.ts';
import { workflowsPart } from './workflows.ts';

/** Every part, in the order a run takes them: a part that reads others' results comes after them. */
export const parts: readonly AnyPart[] = [
  apiPart,
  hostPart,
  heartbeatPart,
  metaPart,
  placementPart,
  sweepPart,
  contentionPart,
  coldstartPart,
  scalePart,
  maintenancePart,
  workflowsPart,
  monthlyCostPart,
  partitionHeatPart,
];
