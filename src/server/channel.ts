/**
 * A request's channel as its transport carries it (its abort signal, where messages to the
 * client go while it runs, what the dispatcher learns about how to answer it), and the
 * 2026-07-28 multi-round-trip input rounds that ride on it.
 */
import { localError, type WireError } from '../errors.js';
import { LazyAbort } from './abort.js';
import { isPlainObject } from './jsonrpc.js';
import { invalidState, type RequestStates } from './request-state.js';

/**
 * One request as its transport carries it: its abort signal, where messages to the client go
 * while it runs, and what the dispatcher learns about how to answer it.
 */
export class RequestChannel extends LazyAbort {
  /** 2026-07-28: the input round of this request, once it has one. */
  round: InputRound | undefined = undefined;
  /** The JSON-RPC error code the answer carries, for transports that map it to a status. */
  errorCode: number | undefined = undefined;
  /** A 2025 server request went out: when the call ends, unanswered ones are dropped. */
  askedClient = false;
  /**
   * The stream was cut off because the client did not read (limits.streams): the call was
   * aborted with this error, and it is the call's answer whatever the handler returned.
   */
  cutOff: WireError | undefined = undefined;

  /** Writes one serialised message on this request's stream; false when it has none. */
  send(_json: string): boolean {
    return false;
  }

  /** Lets go of the client's connection until it reconnects; false when it cannot resume. */
  pollLater(_retryMs: number): boolean {
    return false;
  }

  /** The hub is shutting down: the answer should tell the client not to reuse its connection. */
  lastOnConnection(): void {}
}

// ---- 2026-07-28 multi-round-trip input ------------------------------------------------------

/** Methods whose results may be `input_required` (SEP-2322). */
export const INPUT_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
]);

/**
 * What a request state is bound to: the method, the tool, prompt or resource it names, and the
 * principal asking (another principal's retry cannot reuse answers it never gave).
 */
export function inputBinding(
  method: string,
  params: Record<string, unknown>,
  principal: string | undefined,
): string {
  const name = String(method === 'resources/read' ? params.uri : params.name);
  return JSON.stringify([method, name, principal ?? null]);
}

/**
 * One request's input round: the answers it already has (from `inputResponses` and the signed
 * `requestState` of earlier rounds) and the questions still open. The first open question ends
 * the round on the next turn of the event loop, so questions asked together go out together.
 */
export class InputRound {
  private readonly used: Record<string, unknown> = {};
  private missing: Record<string, { method: string; params: Record<string, unknown> }> | undefined;
  private readonly waiting: ((err: Error) => void)[] = [];
  /** The `input_required` result, once the round has ended. */
  result: Record<string, unknown> | undefined = undefined;

  constructor(
    private readonly binding: string,
    private readonly known: Record<string, unknown>,
    private readonly channel: RequestChannel,
    private readonly states: RequestStates,
  ) {}

  ask(
    key: string,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const answer = Object.hasOwn(this.known, key) ? this.known[key] : undefined;
    if (answer !== undefined) {
      this.used[key] = answer;
      return Promise.resolve(answer as Record<string, unknown>);
    }
    if (this.missing === undefined) {
      this.missing = {};
      setImmediate(() => this.end());
    }
    this.missing[key] = { method, params };
    return new Promise((_, reject) => this.waiting.push(reject));
  }

  private end(): void {
    if (this.channel.aborted) return;
    this.result = {
      resultType: 'input_required',
      inputRequests: this.missing,
      requestState: this.states.seal(this.binding, this.used),
    };
    // Stop the handler where it waits; its answer is replaced by this result.
    this.channel.abort(localError('input_required'));
    const err = localError('input_required');
    for (const reject of this.waiting) reject(err);
  }
}

/**
 * Reads `inputResponses` and `requestState` of a 2026-07-28 retry into a round, or throws the
 * `input_state_invalid` error a malformed, tampered or misdirected one deserves.
 */
export function resumeRound(
  params: Record<string, unknown>,
  binding: string,
  channel: RequestChannel,
  states: RequestStates,
): InputRound {
  // No prototype: a client's answer keyed `__proto__` stays an answer.
  const known = Object.create(null) as Record<string, unknown>;
  const state = params.requestState;
  if (state !== undefined) Object.assign(known, states.open(state, binding));
  const responses = params.inputResponses;
  if (responses !== undefined) {
    if (!isPlainObject(responses)) {
      throw invalidState('inputResponses must be an object');
    }
    for (const [key, value] of Object.entries(responses)) {
      if (!isPlainObject(value)) {
        throw invalidState(
          `inputResponses.${key} must be an object (the client's result for that input request)`,
        );
      }
      known[key] = value;
    }
  }
  return new InputRound(binding, known, channel, states);
}
