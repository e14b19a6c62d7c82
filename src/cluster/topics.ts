/**
 * What the hub says on its bus: the channels, their payloads, and typed helpers to publish and
 * subscribe. Only ids, URIs and JSON-RPC messages cross: never a token, never a handler.
 */
import type { MessageBus } from './bus.js';

export type ListKind = 'tools' | 'prompts' | 'resources';

export interface TopicPayloads {
  /**
   * A registry list changed on some instance (a plugin reload, an upstream's list_changed):
   * every instance re-checks its sinks of these kinds. With `principals`, only their views
   * changed (a manifest or config edit seen by one instance).
   */
  list_changed: { kinds: ListKind[]; principals?: string[] };
  /** `mcp.resource_updated(uri)` on some instance: subscribers everywhere hear it. */
  resource_updated: { uri: string };
  /** A moonhub session was revoked (its token is refused everywhere; caches drop it). */
  revoked: { session_uuid: string };
  /** An operator reloaded a plugin on some instance (the dashboard): every instance does. */
  plugin_reload: { plugin: string };
  /**
   * A 2025 session's shared record changed (log level, subscriptions, capabilities) or, with
   * `ended`, the session ended (DELETE, eviction, revocation): every process drops its cached
   * copy (`server/shared-sessions.ts`), and with `ended` its stream and calls.
   */
  session_changed: { id: string; ended?: boolean };
}

export type TopicName = keyof TopicPayloads;

/** Per-instance and per-session channels, made from ids the hub itself chose. */
export const channels = {
  /** Messages for the stream of a 2025 session, whichever instance holds it. */
  session: (sessionId: string) => `session.${sessionId}`,
  /** The events of a resumable 2025 POST stream, for a client resuming it elsewhere. */
  stream: (streamId: string) => `stream.${streamId}`,
  /** A client's answer to a request an instance sent it, routed back to that instance. */
  answers: (instanceId: string) => `answers.${instanceId}`,
} as const;

/** The instance a channel is addressed to (`answers.<instance>`); undefined: every process. */
export function addresseeOf(channel: string): string | undefined {
  return channel.startsWith('answers.') ? channel.slice('answers.'.length) : undefined;
}

export function publishTopic<T extends TopicName>(
  bus: MessageBus,
  topic: T,
  payload: TopicPayloads[T],
): void {
  bus.publish(topic, payload);
}

/** Subscribes to a topic; payloads of the wrong shape (another version of the hub) are dropped. */
export function onTopic<T extends TopicName>(
  bus: MessageBus,
  topic: T,
  handler: (payload: TopicPayloads[T], origin: string) => void,
): () => void {
  return bus.subscribe(topic, (data, origin) => {
    if (isPayload(topic, data)) handler(data, origin);
  });
}

function isPayload<T extends TopicName>(topic: T, d: unknown): d is TopicPayloads[T] {
  if (typeof d !== 'object' || d === null) return false;
  const o = d as Record<string, unknown>;
  switch (topic) {
    case 'list_changed':
      return (
        Array.isArray(o.kinds) &&
        o.kinds.every((k) => k === 'tools' || k === 'prompts' || k === 'resources') &&
        (o.principals === undefined ||
          (Array.isArray(o.principals) && o.principals.every((p) => typeof p === 'string')))
      );
    case 'resource_updated':
      return typeof o.uri === 'string';
    case 'revoked':
      return typeof o.session_uuid === 'string';
    case 'plugin_reload':
      return typeof o.plugin === 'string' && o.plugin.length <= 256;
    case 'session_changed':
      return typeof o.id === 'string' && (o.ended === undefined || o.ended === true);
    default:
      return false;
  }
}
