/**
 * The longest tool and prompt names and resource URIs a client may call (the front door's bounds,
 * given with their config keys). A definition past them still registers, as a Botster plugin
 * expects, but no call can reach it until the key is raised: registering one is told (a warning
 * for the log and the plugin's status), so the operator learns it at load, not from a refusal.
 */

export interface CallableBounds {
  /** Characters of a tool or prompt name a call may carry, and its config key. */
  nameLength: number;
  nameKey: string;
  /** Characters of a resource URI a read may carry, and its config key. */
  uriLength: number;
  uriKey: string;
}

/** Characters of an over-long name shown in the warning (the rest is counted, not echoed). */
const SHOWN = 64;

function shown(name: string): string {
  return name.length > SHOWN ? `${name.slice(0, SHOWN)}...` : name;
}

/** The warning for a definition no call can reach, or undefined. */
export function uncallableWarning(
  kind: 'tool' | 'prompt' | 'resource',
  name: string,
  bounds: CallableBounds | undefined,
): string | undefined {
  if (bounds === undefined) return undefined;
  if (kind === 'resource') {
    // A template's expansions are at least as long as its literal part.
    const fixed = name.replace(/\{[^}]*\}/g, '');
    if (fixed.length <= bounds.uriLength) return undefined;
    return (
      `resource '${shown(name)}' cannot be read: its URI has ${fixed.length} characters, more than ` +
      `${bounds.uriKey} (${bounds.uriLength}) lets a resources/read carry; raise ${bounds.uriKey} to serve it`
    );
  }
  if (name.length <= bounds.nameLength) return undefined;
  const call = kind === 'tool' ? 'tools/call' : 'prompts/get';
  return (
    `${kind} '${shown(name)}' cannot be called: its name has ${name.length} characters, more than ` +
    `${bounds.nameKey} (${bounds.nameLength}) lets a ${call} carry; raise ${bounds.nameKey} to serve it`
  );
}
