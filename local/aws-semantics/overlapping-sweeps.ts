import { randomFor, type AwsSemanticsConfig } from '#local/aws-semantics/config.ts';

/**
 * The share of schedule firings that start a second sweep alongside the first. In AWS the schedule and the follow-up
 * rule invoke the function asynchronously, and an async invocation can arrive twice (at-least-once delivery, or a
 * retry of one that failed) while the first still runs.
 */
export const TWICE_SHARE = 0.25;

/** The timer's `overlap` for the `overlapping-sweeps` mode: ticks never wait for each other, and some come in pairs. */
export function overlappingInvocations(config: AwsSemanticsConfig, share = TWICE_SHARE): { twice: () => boolean } {
  const random = randomFor(config, 'overlapping-sweeps');
  return { twice: () => random() < share };
}
