// Declarations of toolhost.js for editors and tsc; the host's own modules
// ('toolhost:agent/tooling@0.3.0' and the others) are declared in types/,
// generated from the WIT by scripts/js-types.mjs. So are the key-value
// store's, which every JS agent imports (the toolchains import the whole
// world): 'wasi:keyvalue/store@0.2.0-draft2' (open, the Bucket class),
// 'wasi:keyvalue/atomics@0.2.0-draft2' (increment, the Cas class, swap)
// and 'wasi:keyvalue/batch@0.2.0-draft2' (getMany, setMany, deleteMany).
// A failed call throws an error whose payload is the error variant
// ({tag: 'no-such-store' | 'access-denied'} or {tag: 'other', val: words};
// swap's {tag: 'cas-failed', val: a fresh Cas}); values are Uint8Array;
// an s64 is a BigInt under componentize-js and a number under
// componentize-qjs. docs/keyvalue.md has a guest's code.
/// <reference path="./types/agent.d.ts" />

type Envelope = import('toolhost:agent/inbox@0.3.0').Envelope;
type HostErrorRecord = import('toolhost:agent/types@0.3.0').HostError;
type ChatResponse = import('toolhost:agent/types@0.3.0').ChatResponse;
type ChatRequest = import('toolhost:agent/types@0.3.0').ChatRequest;
type Provider = import('toolhost:agent/provider@0.3.0').Provider;
type Tooling = import('toolhost:agent/tooling@0.3.0').Tooling;
type Tool = import('toolhost:agent/types@0.3.0').Tool;
type ToolCall = import('toolhost:agent/types@0.3.0').ToolCall;
type Message = import('toolhost:agent/types@0.3.0').Message;

/** The host's reply functions (toolhost:agent/messages), or a test's own. */
interface ReplyFunctions {
  reply(id: string, content: string): void;
  replyDelta(id: string, text: string): void;
  replyError(id: string, message: string): void;
}

/** A message to this agent as serve hands it over; session null: none. */
export interface IncomingMessage {
  id: string;
  sender: string;
  session: string | null;
  content: string;
}

/**
 * Text as UTF-8 bytes, for a key-value value (componentize-qjs has no
 * TextEncoder); a lone surrogate becomes U+FFFD.
 */
export function utf8(text: string): Uint8Array;

/**
 * The text of UTF-8 bytes (a key-value value); each byte of an invalid
 * sequence becomes one U+FFFD.
 */
export function fromUtf8(bytes: Uint8Array | ArrayLike<number>): string;

/**
 * The text of anything thrown: "code: message" for a host error; for a
 * key-value store error its case, with other's words ("other: quota ...").
 */
export function errorText(e: unknown): string;

/**
 * Wraps the agent's entry point as the world's run export: a string
 * returned is run's ok (undefined: "", anything else: its JSON), anything
 * thrown is run's err as errorText words it.
 */
export function agent(f: (input: string) => unknown): (input: string) => string;

/** Thrown by Inbox.stream and Inbox.replyOf for an error envelope. */
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
  constructor(
    recv?: (timeoutMs: number | undefined) => Envelope | undefined | null,
    tryRecv?: () => Envelope | undefined | null,
    messages?: ReplyFunctions,
  );
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
  /**
   * Follows the reply to a message sent with send: onDelta gets each
   * reply-delta's text; returns the whole reply, throws a HostError for an
   * error envelope, null on a timeout or shutdown.
   */
  replyOf(id: string, onDelta?: (text: string) => void, timeoutMs?: number | null): string | null;
  /**
   * Answers messages until shutdown: handler gets each message and a Reply.
   * A reply it did not end is ended with what it returned (a string, or
   * JSON; undefined: ""), or failed with what it threw. Messages held when
   * the shutdown envelope arrives during a handler are failed ("the agent
   * is stopping"). Returns how many messages it handled.
   */
  serve(handler: (msg: IncomingMessage, reply: Reply) => unknown): number;
}

/** The reply to one message: any number of delta, then one end or fail. */
export class Reply {
  constructor(id: string, inbox: Inbox, messages?: ReplyFunctions);
  /** The message's id. */
  readonly id: string;
  readonly inbox: Inbox;
  /** True once end or fail was called. */
  done: boolean;
  /** Streams more text of the reply. */
  delta(text: string): void;
  /** Ends the reply: the whole reply is the deltas' text followed by text. */
  end(text?: string): void;
  /** Ends the reply as a failure; the sender sees message. */
  fail(message: string): void;
  /**
   * Streams a model's answer into the reply as it arrives (chatStream's
   * deltas as reply deltas) and returns the response (null on a timeout or
   * shutdown); it does not end the reply.
   */
  streamChat(provider: Provider, request: ChatRequest, timeoutMs?: number | null): ChatResponse | null;
}

/**
 * The tools of some toolings, for a model's tool calls. The constructor
 * throws "tooling NAME: code: message" for a tooling it cannot get or list.
 */
export class Toolbox {
  constructor(names: string[], get?: (name: string) => Tooling);
  /** The tools, as listTools returned them, for a chat request. */
  readonly tools: Tool[];
  /** "tool of tooling": tools hidden by an earlier tooling's of the same name. */
  readonly shadowed: string[];
  /**
   * Makes every call and answers each, in order, with a tool message (the
   * tool's text, or "error: ..."); results are waited for in inbox, up to
   * timeoutMs in all.
   */
  call(calls: ToolCall[], inbox: Inbox, timeoutMs?: number | null): Message[];
  /** Drops every handle. */
  close(): void;
}

/** Sends content to the agent `to` (in session, if given); returns the message's id. */
export function send(to: string, content: string, session?: string | null): string;

/** Answers messages with handler until shutdown, on an Inbox of its own (see Inbox.serve). */
export function serve(handler: (msg: IncomingMessage, reply: Reply) => unknown): number;
