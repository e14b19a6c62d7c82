/**
 * Botster's `params._meta.botster`: the caller's context sent upstream with a proxied tool call,
 * so a Botster-aware upstream knows which agent session (and worktree) it works for. The fields
 * and the rule (non-empty strings only) are Botster's; `forward_context = false` turns it off.
 */
import type { CallContext } from '../registry/types.js';

export const BOTSTER_CONTEXT_KEYS = [
  'session_uuid',
  'agent_name',
  'session_name',
  'branch_name',
  'repo',
  'workspace_id',
  'worktree_path',
] as const;

/** The `botster` member of `_meta` for a call made in `ctx`, or undefined when it has none. */
export function botsterMeta(ctx: CallContext): Record<string, string> | undefined {
  let meta: Record<string, string> | undefined;
  for (const key of BOTSTER_CONTEXT_KEYS) {
    // Identity comes from the caller the hub knows; the rest from fields a Lua caller passed.
    const value =
      key === 'session_uuid'
        ? ctx.session_uuid
        : key === 'agent_name'
          ? ctx.agent_name
          : ctx.fields?.[key];
    if (typeof value === 'string' && value !== '') (meta ??= {})[key] = value;
  }
  return meta;
}
