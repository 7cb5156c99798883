// toolhost.js: helpers for agents written in JavaScript against
// toolhost:agent@0.3.0, for componentize-qjs and componentize-js alike (both
// bundle a relative import of this file into the component).
//
//   import { agent, Inbox, errorText } from './toolhost.js';
//   export const run = agent((input) => { ... return 'output'; });
//
// agent() makes whatever escapes the function run's err as text: a host
// error as "code: message", an Error as its message, anything else as JSON
// (componentize-js otherwise turns a thrown non-string into a trap whose
// only clue is "expected a string, received [object]"). Inbox keeps the
// envelopes that arrive for other ids while an agent waits for one; its
// serve answers messages (a handler per message, with a Reply that
// streams), stream follows a chat-stream and replyOf the reply to a
// message sent with send. An agent that only answers messages:
//
//   export const run = agent(() => serve((msg) => `you said: ${msg.content}`));
import { recv as hostRecv, tryRecv as hostTryRecv } from 'toolhost:agent/inbox@0.3.0';
import * as hostMessages from 'toolhost:agent/messages@0.3.0';
import { get as hostGet } from 'toolhost:agent/tooling@0.3.0';
import { write as hostWrite } from 'toolhost:agent/log@0.3.0';

// errorText is the text of anything thrown: "code: message" for a host
// error (a ComponentError whose payload is the host-error record, or that
// record itself); the case of a key-value store error (wasi:keyvalue's
// error variant, also inside swap's store-error), with other's words after
// it ("other: quota ..."), or "cas-failed"; the message of an Error, a
// string as it is, JSON (else String) for the rest.
export function errorText(e) {
  const p = e && typeof e === 'object' && 'payload' in e ? e.payload : e;
  if (p && typeof p === 'object' && typeof p.code === 'string' && typeof p.message === 'string') {
    return `${p.code}: ${p.message}`;
  }
  if (p && typeof p === 'object' && ['no-such-store', 'access-denied', 'other', 'store-error', 'cas-failed'].includes(p.tag)) {
    const kv = p.tag === 'store-error' ? p.val : p;
    if (kv && typeof kv.tag === 'string') return typeof kv.val === 'string' ? `${kv.tag}: ${kv.val}` : kv.tag;
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

// utf8 is text as UTF-8 bytes, and fromUtf8 the text of UTF-8 bytes, for
// the key-value store's values (list<u8>: a Uint8Array). Both toolchains
// run them: componentize-qjs has no TextEncoder or TextDecoder. A lone
// surrogate is encoded as U+FFFD; each byte of an invalid sequence is
// decoded as one U+FFFD.
export function utf8(text) {
  const out = [];
  for (const ch of String(text)) {
    let c = ch.codePointAt(0);
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

export function fromUtf8(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    let c = n === 1 ? b : b & (0x7f >> n);
    let ok = n > 0 && i + n <= bytes.length;
    for (let k = 1; ok && k < n; k++) {
      ok = (bytes[i + k] & 0xc0) === 0x80;
      c = (c << 6) | (bytes[i + k] & 63);
    }
    ok = ok && !(n === 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) && !(n === 4 && (c < 0x10000 || c > 0x10ffff));
    s += ok ? String.fromCodePoint(c) : '\ufffd';
    i += ok ? n : 1;
  }
  return s;
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

// HostError is thrown by Inbox.stream and replyOf for an error envelope; errorText
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

  #messages;

  // recv, tryRecv and messages (reply, replyDelta, replyError) default to
  // the host's; tests may pass their own.
  constructor(recv = hostRecv, tryRecv = hostTryRecv, messages = hostMessages) {
    this.#recv = recv;
    this.#tryRecv = tryRecv;
    this.#messages = messages;
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

  // #follow waits for the envelopes of id: onDelta gets the val of each
  // of tag delta; the val of the one of tag done is returned; an error
  // envelope is thrown as a HostError; null on a timeout (timeoutMs bounds
  // the whole wait) or shutdown.
  #follow(id, delta, done, onDelta, timeoutMs) {
    const end = timeoutMs == null ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      const env = this.waitFor(id, end === Infinity ? undefined : Math.max(0, end - Date.now()));
      if (env === null || isShutdown(env)) return null;
      switch (env.event.tag) {
        case delta:
          onDelta(env.event.val);
          break;
        case done:
          return env.event.val;
        case 'error':
          throw new HostError(env.event.val);
        default:
          throw new Error(`${id}: unexpected ${env.event.tag} envelope`);
      }
    }
  }

  // stream follows a chat-stream: onDelta gets each chat-delta's text; it
  // returns the chat-done's response, throws a HostError for an error
  // envelope, and returns null on a timeout (timeoutMs bounds the whole
  // stream) or shutdown.
  stream(id, onDelta = () => {}, timeoutMs) {
    return this.#follow(id, 'chat-delta', 'chat-done', onDelta, timeoutMs);
  }

  // replyOf follows the reply to a message sent with send: onDelta gets
  // each reply-delta's text; it returns the whole reply (the deltas' text
  // followed by the reply's), throws a HostError for an error envelope
  // (the other agent's replyError, or a failure to deliver), and returns
  // null on a timeout (timeoutMs bounds the whole reply) or shutdown.
  replyOf(id, onDelta = () => {}, timeoutMs) {
    let text = '';
    const last = this.#follow(id, 'reply-delta', 'reply', (d) => {
      text += d;
      onDelta(d);
    }, timeoutMs);
    return last === null ? null : text + last;
  }

  // serve answers messages until shutdown: for each message envelope it
  // calls handler({id, sender, session, content}, reply) with a Reply for
  // it (session is null for none). A reply the handler did not end is
  // ended when it returns: with what it returned (a string as it is,
  // undefined as "", anything else as JSON) or, when it threw, with
  // reply.fail(errorText(e)); a failure to end it (a message its sender
  // cancelled) is not serve's: it goes on. Other envelopes the handler did
  // not wait for are dropped; messages that arrive while it waits are
  // held and served next, in order, unless the shutdown envelope arrived
  // meanwhile: then they are failed with "the agent is stopping" and serve
  // returns. It returns how many messages it handled.
  serve(handler) {
    let handled = 0;
    for (;;) {
      const env = this.recv(undefined);
      if (env === null || isShutdown(env)) return handled;
      if (env.event.tag !== 'message') continue;
      handled++;
      const m = env.event.val;
      const r = new Reply(env.id, this, this.#messages);
      let out;
      try {
        out = handler({ id: env.id, sender: m.sender, session: m.session ?? null, content: m.content }, r);
        if (!r.done) ignoreHostError(() => r.end(out === undefined ? '' : typeof out === 'string' ? out : JSON.stringify(out)));
      } catch (e) {
        if (!r.done) ignoreHostError(() => r.fail(errorText(e)));
      }
      if (this.shutdown) {
        for (const held of this.#held.splice(0)) {
          if (held.event.tag === 'message') ignoreHostError(() => this.#messages.replyError(held.id, 'the agent is stopping'));
        }
        return handled;
      }
    }
  }
}

// ignoreHostError runs f; a host error it throws is dropped.
function ignoreHostError(f) {
  try {
    f();
  } catch (e) {
    if (!(e && typeof e === 'object' && 'payload' in e)) throw e;
  }
}

// Reply writes the reply to one message: any number of delta, then one end
// or fail. Each throws the host's error (cancelled once the sender
// cancelled the message, invalid-argument after the reply ended).
export class Reply {
  #messages;

  constructor(id, inbox, messages = hostMessages) {
    this.id = id;
    this.inbox = inbox;
    this.done = false;
    this.#messages = messages;
  }

  // delta streams more text of the reply.
  delta(text) {
    this.#messages.replyDelta(this.id, text);
  }

  // end ends the reply: the whole reply is the deltas' text followed by
  // text.
  end(text = '') {
    this.done = true;
    this.#messages.reply(this.id, text);
  }

  // fail ends the reply as a failure; the sender sees message.
  fail(message) {
    this.done = true;
    this.#messages.replyError(this.id, message);
  }

  // streamChat streams a model's answer into the reply as it arrives: it
  // starts provider.chatStream(request) and sends each chat delta's text
  // as a delta, returning the chat-done's response (null on a timeout or
  // shutdown). It does not end the reply: a response that asks for tool
  // calls is followed by another turn, whose text streams into the same
  // reply. When a delta fails (the sender cancelled) or the stream does,
  // the stream is cancelled and the error thrown.
  streamChat(provider, request, timeoutMs) {
    const id = provider.chatStream(request);
    try {
      const resp = this.inbox.stream(id, (d) => this.delta(d), timeoutMs);
      if (resp === null) provider.cancel(id);
      return resp;
    } catch (e) {
      provider.cancel(id);
      throw e;
    }
  }
}

// resultText is the text of a CallToolResult (JSON) for a tool message:
// its text contents, "error: " before them when isError.
function resultText(value) {
  try {
    const v = JSON.parse(value);
    const text = (v.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    return v.isError ? `error: ${text}` : text;
  } catch {
    return value;
  }
}

// Toolbox is the tools of some toolings, for a model's tool calls: tools
// goes into a chat request, call answers the response's tool calls with
// tool messages for the next request. A tool name two toolings offer is
// the first one's (the later ones are logged as warnings, and listed in
// shadowed as "tool of tooling"). close drops the handles. The constructor
// throws "tooling NAME: code: message" for a tooling it cannot get or
// list.
export class Toolbox {
  #owner = new Map();
  #handles = [];

  constructor(names, get = hostGet) {
    this.tools = [];
    this.shadowed = [];
    for (const name of names) {
      try {
        const t = get(name);
        this.#handles.push(t);
        for (const tl of t.listTools()) {
          if (this.#owner.has(tl.name)) {
            this.shadowed.push(`${tl.name} of ${name}`);
            hostWrite('warn', `toolbox: tool ${tl.name} of ${name} hidden by another tooling's`);
            continue;
          }
          this.#owner.set(tl.name, t);
          this.tools.push(tl);
        }
      } catch (e) {
        this.close();
        throw `tooling ${name}: ${errorText(e)}`;
      }
    }
  }

  // call makes every call with callTool and answers each, in the model's
  // order, with a tool message: the tool's text ("error: " and it for a
  // result with isError), or "error: " and what failed. Results are
  // waited for in inbox (other envelopes are held there), up to timeoutMs
  // in all (undefined: no bound); a call without a result by then is
  // cancelled.
  call(calls, inbox, timeoutMs) {
    const answers = new Array(calls.length);
    const ids = calls.map((c, i) => {
      const t = this.#owner.get(c.name);
      if (!t) {
        answers[i] = `error: there is no tool named ${c.name}`;
        return null;
      }
      try {
        return t.callTool(c.name, c.arguments.trim() === '' ? '{}' : c.arguments);
      } catch (e) {
        answers[i] = `error: ${errorText(e)}`;
        return null;
      }
    });
    const end = timeoutMs == null ? Infinity : Date.now() + timeoutMs;
    ids.forEach((id, i) => {
      if (id === null) return;
      const env = inbox.waitFor(id, end === Infinity ? undefined : Math.max(0, end - Date.now()));
      if (env !== null && env.event.tag === 'tool-result') answers[i] = resultText(env.event.val.value);
      else if (env !== null && env.event.tag === 'error') answers[i] = `error: ${errorText(env.event.val)}`;
      else {
        this.#owner.get(calls[i].name).cancel(id);
        answers[i] = env === null ? 'error: no result in time' : 'error: the agent is stopping';
      }
    });
    return calls.map((c, i) => ({ role: 'tool', content: answers[i], toolCalls: [], toolCallId: c.id }));
  }

  // close drops every handle.
  close() {
    for (const t of this.#handles) t[Symbol.dispose || Symbol.for('dispose')]();
    this.#handles = [];
  }
}

// send sends content to the agent `to` (in session, if given) and returns
// the message's id at once; follow its reply with inbox.replyOf(id).
export function send(to, content, session) {
  return hostMessages.send(to, content, session ?? undefined);
}

// serve answers messages with handler until shutdown, on an Inbox of its
// own: see Inbox.serve.
export function serve(handler) {
  return new Inbox().serve(handler);
}
