// toolhost.js: helpers for agents written in JavaScript against
// toolhost:agent@0.2.0, for componentize-qjs and componentize-js alike (both
// bundle a relative import of this file into the component).
//
//   import { agent, Inbox, errorText } from './toolhost.js';
//   export const run = agent((input) => { ... return 'output'; });
//
// agent() makes whatever escapes the function run's err as text: a host
// error as "code: message", an Error as its message, anything else as JSON
// (componentize-js otherwise turns a thrown non-string into a trap whose
// only clue is "expected a string, received [object]"). Inbox keeps the
// envelopes that arrive for other ids while an agent waits for one.
import { recv as hostRecv, tryRecv as hostTryRecv } from 'toolhost:agent/inbox@0.2.0';

// errorText is the text of anything thrown: "code: message" for a host
// error (a ComponentError whose payload is the host-error record, or that
// record itself), the message of an Error, a string as it is, JSON (else
// String) for the rest.
export function errorText(e) {
  const p = e && typeof e === 'object' && 'payload' in e ? e.payload : e;
  if (p && typeof p === 'object' && typeof p.code === 'string' && typeof p.message === 'string') {
    return `${p.code}: ${p.message}`;
  }
  if (typeof p === 'string') return p;
  if (e instanceof Error) return e.message || String(e);
  try {
    const j = JSON.stringify(p);
    if (j !== undefined) return j;
  } catch (_) {
    // a cycle, a BigInt: String below
  }
  return String(p);
}

// agent wraps the agent's entry point as the world's run export: what f
// returns is run's ok (a string as it is, undefined as "", anything else
// as JSON); what it throws is run's err, as errorText words it.
export function agent(f) {
  return function run(input) {
    let out;
    try {
      out = f(input);
    } catch (e) {
      throw errorText(e);
    }
    if (typeof out === 'string') return out;
    if (out === undefined) return '';
    return JSON.stringify(out);
  };
}

// HostError is thrown by Inbox.stream for an error envelope; errorText
// (and so agent) words it "code: message".
export class HostError extends Error {
  constructor(payload) {
    super(`${payload.code}: ${payload.message}`);
    this.name = 'HostError';
    this.payload = payload;
  }
}

const isShutdown = (env) => env.event.tag === 'shutdown';

// Inbox receives envelopes for the agent: waitFor(id) returns the next one
// with that id and keeps those for other ids, in arrival order, for the
// next recv or waitFor. A shutdown envelope ends every wait: it is
// returned (its event's tag is "shutdown") and inbox.shutdown is true from
// then on. Timeouts are in milliseconds; undefined or null waits until an
// envelope arrives, 0 does not wait.
export class Inbox {
  #held = [];
  #recv;
  #tryRecv;

  // recv and tryRecv default to the host's; tests may pass their own.
  constructor(recv = hostRecv, tryRecv = hostTryRecv) {
    this.#recv = recv;
    this.#tryRecv = tryRecv;
    this.shutdown = false;
  }

  // held is how many received envelopes wait for a later recv or waitFor.
  get held() {
    return this.#held.length;
  }

  #take(timeoutMs) {
    const env = timeoutMs === 0 ? this.#tryRecv() : this.#recv(timeoutMs == null ? undefined : Math.max(1, Math.ceil(timeoutMs)));
    if (env == null) return null; // none: undefined (componentize-js) or null (componentize-qjs)
    if (isShutdown(env)) this.shutdown = true;
    return env;
  }

  // recv is the next envelope (held ones first), or null when none came
  // within timeoutMs.
  recv(timeoutMs) {
    if (this.#held.length > 0) return this.#held.shift();
    return this.#take(timeoutMs);
  }

  // waitFor is the next envelope with id (or the shutdown envelope), or
  // null when none came within timeoutMs; envelopes for other ids are
  // held.
  waitFor(id, timeoutMs) {
    const i = this.#held.findIndex((env) => env.id === id || isShutdown(env));
    if (i >= 0) return this.#held.splice(i, 1)[0];
    const end = timeoutMs == null ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      const left = end === Infinity ? undefined : Math.max(0, end - Date.now());
      const env = this.#take(left);
      if (env === null) return null;
      if (env.id === id || isShutdown(env)) return env;
      this.#held.push(env);
    }
  }

  // stream follows a chat-stream: onDelta gets each chat-delta's text; it
  // returns the chat-done's response, throws a HostError for an error
  // envelope, and returns null on a timeout (timeoutMs bounds the whole
  // stream) or shutdown.
  stream(id, onDelta = () => {}, timeoutMs) {
    const end = timeoutMs == null ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      const env = this.waitFor(id, end === Infinity ? undefined : Math.max(0, end - Date.now()));
      if (env === null || isShutdown(env)) return null;
      switch (env.event.tag) {
        case 'chat-delta':
          onDelta(env.event.val);
          break;
        case 'chat-done':
          return env.event.val;
        case 'error':
          throw new HostError(env.event.val);
        default:
          throw new Error(`stream ${id}: unexpected ${env.event.tag} envelope`);
      }
    }
  }
}
