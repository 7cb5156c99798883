// Declarations of toolhost.js for editors and tsc; the host's own modules
// ('toolhost:agent/tooling@0.2.0' and the others) are declared in types/,
// generated from the WIT by scripts/js-types.mjs.
/// <reference path="./types/agent.d.ts" />

type Envelope = import('toolhost:agent/inbox@0.2.0').Envelope;
type HostErrorRecord = import('toolhost:agent/types@0.2.0').HostError;
type ChatResponse = import('toolhost:agent/types@0.2.0').ChatResponse;

/** The text of anything thrown: "code: message" for a host error. */
export function errorText(e: unknown): string;

/**
 * Wraps the agent's entry point as the world's run export: a string
 * returned is run's ok (undefined: "", anything else: its JSON), anything
 * thrown is run's err as errorText words it.
 */
export function agent(f: (input: string) => unknown): (input: string) => string;

/** Thrown by Inbox.stream for an error envelope. */
export class HostError extends Error {
  constructor(payload: HostErrorRecord);
  payload: HostErrorRecord;
}

/**
 * Receives envelopes; waitFor holds those for other ids. Timeouts are in
 * milliseconds: undefined or null waits until an envelope arrives, 0 does
 * not wait.
 */
export class Inbox {
  constructor(recv?: (timeoutMs: number | undefined) => Envelope | undefined | null, tryRecv?: () => Envelope | undefined | null);
  /** True once the shutdown envelope was received. */
  shutdown: boolean;
  /** How many received envelopes wait for a later recv or waitFor. */
  readonly held: number;
  /** The next envelope (held ones first), or null on a timeout. */
  recv(timeoutMs?: number | null): Envelope | null;
  /** The next envelope with id, or the shutdown envelope, or null on a timeout. */
  waitFor(id: string, timeoutMs?: number | null): Envelope | null;
  /**
   * Follows a chat-stream: onDelta gets each delta's text; returns the
   * chat-done's response, throws a HostError for an error envelope, null on
   * a timeout or shutdown.
   */
  stream(id: string, onDelta?: (text: string) => void, timeoutMs?: number | null): ChatResponse | null;
}
