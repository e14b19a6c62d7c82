/**
 * Per-call context objects with fields made only when read (the call's signal, its peer, its
 * view), as own enumerable getters so that `{ ...ctx }` and `withView` still carry them.
 *
 * The getters are shared by every context of a kind and find their call's data in one hidden
 * slot. An object literal with getter closures of its own is a dictionary-mode object, and each
 * one of them kept its whole request (body, HTTP objects, channel) alive through the young
 * generation's collections until the next full one: at 25,000 calls a second, ~3-5 KB of every
 * call was promoted to the old generation and scavenges took ~15 % of the hub's thread
 * (docs/performance.md, "Session 9"). With shared getters every context has the same fast shape
 * and nothing of a finished call outlives it.
 */

/** The hidden slot (not enumerable: spreads leave it behind; descriptor copies keep it). */
const STATE = Symbol('moonhub.call-state');

type Holder<S> = { [STATE]: S };

/** Gives `obj` its hidden state. Call it before defining getters that read the state. */
export function attachState<O extends object, S>(obj: O, state: S): O {
  Object.defineProperty(obj, STATE, { value: state });
  return obj;
}

/** The state `attachState` gave `obj`. */
export function stateOf<S>(obj: object): S {
  return (obj as Holder<S>)[STATE];
}

/**
 * A descriptor for `Object.defineProperty`: an own, enumerable getter computing the field from
 * the object's state. Make one per field at module level, never per object.
 */
export function lazyField<S, T>(read: (state: S) => T): PropertyDescriptor {
  return {
    enumerable: true,
    configurable: true,
    get(this: Holder<S>): T {
      return read(this[STATE]);
    },
  };
}
