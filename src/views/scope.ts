/**
 * What a session may see (LUA_API §2.1), as a pure function of the config: the target's lists
 * are a ceiling, the agent's lists (its config entry and its manifest) narrow them; lists that
 * are all present are intersected, absent lists restrict nothing, an empty list allows nothing.
 * Plugins and built-ins (owners `builtin:<name>`) are scoped by separate lists.
 */
import type { OwnerFilter } from '../registry/types.js';
import type { AgentConfig, HubConfig, TargetConfig } from '../config/config.js';

const BUILTIN_PREFIX = 'builtin:';

/** An agent manifest file's content. */
export interface Manifest {
  plugins?: string[];
  builtins?: string[];
}

/** Who a view is for: the agent and target of a session (or of an OAuth token). */
export interface ScopeSubject {
  agent?: string | undefined;
  target?: string | undefined;
}

/** The resolved allow-lists; `undefined` means no restriction. */
export interface Scope {
  plugins: ReadonlySet<string> | undefined;
  builtins: ReadonlySet<string> | undefined;
}

export const NOTHING: Scope = { plugins: new Set(), builtins: new Set() };
export const EVERYTHING: Scope = { plugins: undefined, builtins: undefined };

function intersect(lists: (readonly string[] | undefined)[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (const list of lists) {
    if (list === undefined) continue;
    out = out === undefined ? new Set(list) : new Set(list.filter((x) => out!.has(x)));
  }
  return out;
}

/**
 * The scope of a subject. A name the config does not define, while the config defines that kind
 * at all, sees nothing: a typo must not widen access. A subject without an agent or target is
 * limited by the parts it has.
 */
export function resolveScope(
  config: Pick<HubConfig, 'targets' | 'agents'>,
  subject: ScopeSubject,
  manifestOf: (agent: string) => Manifest | undefined,
): Scope {
  let target: TargetConfig | undefined;
  if (subject.target !== undefined && config.targets !== undefined) {
    target = Object.hasOwn(config.targets, subject.target)
      ? config.targets[subject.target]
      : undefined;
    if (target === undefined) return NOTHING;
  }
  let agent: AgentConfig | undefined;
  let manifest: Manifest | undefined;
  if (subject.agent !== undefined && config.agents !== undefined) {
    agent = Object.hasOwn(config.agents, subject.agent) ? config.agents[subject.agent] : undefined;
    if (agent === undefined) return NOTHING;
    if (agent.manifest !== undefined) {
      manifest = manifestOf(subject.agent);
      // A manifest that could never be read hides everything rather than nothing.
      if (manifest === undefined) return NOTHING;
    }
  }
  return {
    plugins: intersect([target?.plugins, agent?.plugins, manifest?.plugins]),
    builtins: intersect([target?.builtins, agent?.builtins, manifest?.builtins]),
  };
}

/** The owner predicate of a scope; undefined when it restricts nothing. */
export function filterOf(scope: Scope): OwnerFilter {
  const { plugins, builtins } = scope;
  if (plugins === undefined && builtins === undefined) return undefined;
  return (owner: string) =>
    owner.startsWith(BUILTIN_PREFIX)
      ? builtins === undefined || builtins.has(owner.slice(BUILTIN_PREFIX.length))
      : plugins === undefined || plugins.has(owner);
}
