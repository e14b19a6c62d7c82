/**
 * The listeners a direct call (direct-call.ts) hands to node:http's request and response and to
 * its timers. They are shared by all calls, so a call makes no closure per listener: an emitter
 * calls them with itself as `this`, tagged with its call under `CALL`.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';

/**
 * What the listeners call on a direct call: the part of `DirectCall` they see, named here so
 * this module does not import direct-call.ts (which imports it).
 */
export interface ListenedCall {
  onResponse(res: IncomingMessage): void;
  onRequestError(req: ClientRequest, err: Error): void;
  onBodyData(chunk: Buffer): void;
  onBodyEnd(res: IncomingMessage): void;
  lostStream(why: string): void;
  onEvents(chunk: string): void;
  onStreamEnd(): void;
  timedOut(): void;
  resume(): void;
}

export const CALL = Symbol('moonhub direct call');
export type Tagged<T> = T & { [CALL]?: ListenedCall };
const callOf = (emitter: object): ListenedCall => (emitter as Tagged<object>)[CALL]!;

export function onPostResponse(this: ClientRequest, res: IncomingMessage): void {
  callOf(this).onResponse(res);
}
export function onPostError(this: ClientRequest, err: Error): void {
  callOf(this).onRequestError(this, err);
}
export function onBodyData(this: IncomingMessage, chunk: Buffer): void {
  callOf(this).onBodyData(chunk);
}
export function onBodyEnd(this: IncomingMessage): void {
  callOf(this).onBodyEnd(this);
}
export function onResponseError(this: IncomingMessage, err: Error): void {
  callOf(this).lostStream(err.message);
}
export function onStreamData(this: IncomingMessage, chunk: string): void {
  callOf(this).onEvents(chunk);
}
export function onStreamEnd(this: IncomingMessage): void {
  callOf(this).onStreamEnd();
}
export function onCutOff(this: IncomingMessage): void {
  callOf(this).lostStream('the response was cut off');
}

export function onTimer(call: ListenedCall): void {
  call.timedOut();
}

export function resumeLater(call: ListenedCall): void {
  call.resume();
}
