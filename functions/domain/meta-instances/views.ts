import { isLive, type Member } from '#domain/meta-instances/meta-instances.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import { instanceHealth } from '#domain/instances/tenant-health.ts';
import { powerView } from '#domain/instances/power.ts';
import { instanceResponse, metaInstanceResponse, viewOf } from '#domain/core/responses.ts';

// Records as the API shows them. Apart from the domain rules, so that only the API's bundle builds the response
// schemas at its cold start: the stream and the sweep use those rules and never answer a request.

/**
 * The instance as the API shows it (API.md "Instance"): what the response schema lists, nothing else, with its health
 * judged on `machine` (null when not read: an instance just placed, or one no longer on a machine).
 */
export const instanceView = (instance: Instance, machine: Machine | null) =>
  viewOf(instanceResponse, { ...instance, ...instanceHealth(instance, machine), power: instance.power && powerView(instance.power) });

/**
 * The meta-instance as the API shows it (API.md "MetaInstance"), with the instances it holds now and how many of
 * them are Ready: its status says where placement stands, not whether the members are up.
 */
export const metaInstanceView = (meta: MetaInstance, members: Member[]) => {
  const live = members.filter(isLive);
  return viewOf(metaInstanceResponse, {
    ...meta,
    instanceIds: live.map((m) => m.instance.id),
    readyMembers: live.filter((m) => m.instance.status === 'Ready').length,
  });
};
