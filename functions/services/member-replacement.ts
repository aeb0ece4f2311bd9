import { requestMemberReplacement } from '#domain/meta-instances/member-replacement.ts';
import type { Issue, Principal } from '#domain/core/model.ts';
import { metaInstanceView } from '#domain/meta-instances/views.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { loadMembers } from '#runtime/meta-instance-snapshot.ts';
import { loadOwn } from '#services/meta-instances.ts';

/**
 * A tenant asks for one member of its meta-instance to be replaced: the request is recorded on the meta-instance (one
 * conditional write, with the member's machine's history entry) and the meta-instance reconciler does the rest.
 */
export async function replaceMember(ctx: AppContext, principal: Principal, id: string, request: { instanceId: string; issue?: Issue | undefined }) {
  const shown = await retryOnStale(async () => {
    const meta = await loadOwn(ctx, principal, id);
    const { members } = await loadMembers(ctx, meta);
    const change = requestMemberReplacement(meta, members, { ...request, actor: principal.sub, now: ctx.clock.now() });
    if (change) await ctx.store.commit(change);
    const after = change?.metaInstances?.[0]?.after ?? meta;
    return metaInstanceView(after, members);
  });
  ctx.log.info('meta-instance member replacement requested', { metaInstanceId: id, instanceId: request.instanceId });
  return shown;
}
