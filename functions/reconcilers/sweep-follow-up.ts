import * as z from 'zod/mini';
import '#config/zod-messages.ts';
import type { SweepPosition } from '#reconcilers/sweep.ts';

/**
 * A sweep that ran out of time hands the rest of the due index to a follow-up run through the site's event bus: a
 * rule on it invokes the sweep function again at once. Its own source, so repair consumers (source `fleetward`)
 * never see it.
 */
export const SWEEP_FOLLOW_UP = { source: 'fleetward.sweep', detailType: 'SweepFollowUp' } as const;

const followUpEventSchema = z.object({
  source: z.literal(SWEEP_FOLLOW_UP.source),
  'detail-type': z.literal(SWEEP_FOLLOW_UP.detailType),
  detail: z.object({ now: z.iso.datetime(), nextToken: z.string().check(z.minLength(1)) }),
});

/** The event a follow-up run is invoked with, as EventBridge delivers it. */
export const followUpEvent = (position: SweepPosition) => ({ source: SWEEP_FOLLOW_UP.source, 'detail-type': SWEEP_FOLLOW_UP.detailType, detail: position });

/** Where a run starts: a follow-up's position, or the beginning for anything else (the schedule's invocations). */
export function sweepStart(event: unknown): SweepPosition | undefined {
  const parsed = followUpEventSchema.safeParse(event);
  return parsed.success ? parsed.data.detail : undefined;
}
