// probe: a tiny interpreter of steps, so that Go tests can drive every
// function of toolhost:agent@0.3.0 from the guest side and assert on what
// the guest saw. It is built with componentize-js and with
// componentize-qjs and must hold under both engines (an option that is
// none arrives as undefined under the first, null under the second). Input: JSON {"steps": [{"op": ..., ...}, ...]}. Output: a
// JSON array with one entry per step: {"op", "ok": value} or {"op", "err":
// {code, message}} for a host-error, {"op", "thrown": text} for anything
// else thrown. Handles and ids live in named variables ("as" stores a
// handle or an id, "h" names a handle, "id" names an id); envelope ids are
// mapped back to variable names (the shutdown id and unknown ids are kept
// as they are).
//
// Ops: get {name, as}; drop {h}; kind {h}; name {h}; list-tools {h};
// call-tool {h, tool, args | raw, as}; is-open {h, id}; cancel {h, id};
// call-tool-blocking {h, tool, args | raw}; list-resources {h};
// read-resource {h, uri}; subscribe-list {h, as}; unsubscribe-list {h, id};
// subscribe {h, uri, as}; unsubscribe {h, id}; recv {timeout} (ms, absent
// or null: wait until one arrives); recv-until {id, timeout} (receives
// until an envelope for id, keeping the others in "skipped"); try-recv;
// pending; log {level, message}; spin {ms} (a busy loop, forever without
// ms); alloc {mb} (keeps mb MB allocated); fail {message} (run returns
// err); throw {what} (an exception escapes run); stop-on-error (later steps
// are skipped after a failing step). Providers: get-provider {name, as};
// chat {h, request, tools-of}; chat-stream {h, request, tools-of, as} (the
// handle's kind, name, is-open, cancel and drop are the ops above);
// recv-stream {id, timeout} (receives the stream's envelopes up to its
// terminal one, keeping the others in "skipped": {deltas, text, end}). A
// request is {model, messages: [{role, content, toolCalls, toolCallId}],
// tools, toolChoice, maxTokens, temperature, stop}, absent fields
// defaulted; tools-of names a tooling handle whose list-tools is the
// request's tools.
//
// Messages (0.3.0): reply {id, content}; reply-delta {id, text};
// reply-error {id, message} (each true, or the host-error); send {to,
// content, session, as} (session absent or null: none; binds the message
// id); msg-is-open {id}; msg-cancel {id}. recv {timeout, as} binds the
// received envelope's id to "as" (so that later steps reply to it by that
// name); recv-message {timeout, as} receives until a message envelope,
// binds its id and keeps the others in "skipped": {got, skipped}, got null
// on a timeout or shutdown; recv-reply {id, timeout} is recv-stream for a
// sent message: {deltas, text, end, skipped} with the reply-delta
// envelopes counted and joined. A message envelope's val is {sender,
// session, content} (session null for none, under both engines), a
// reply-delta's and a reply's their text. serve {mode, count} answers
// messages: it receives envelopes until count messages were handled
// (absent: until shutdown) and answers each message by mode: "echo"
// reply(content); "deltas" each word of content with the spaces after it
// as a reply-delta (none for an empty content), then reply(""); "upper"
// reply(content with a-z upper-cased); "error" reply-error(content);
// "silent" no reply at all; "die" reply-delta(content), then what "throw"
// does (an exception escapes run). Other envelopes are ignored. Its value
// is {handled, ignored, shutdown, failures: [{id, code, message}]}, one
// failure per reply call the host refused.
//
// Key-value store (wasi:keyvalue@0.2.0-draft2): kv-open {name, as};
// kv-get {h, key} (the value as text, null for none); kv-set {h, key,
// value | size} (size: that many "x"); kv-delete {h, key}; kv-exists {h,
// key}; kv-list {h, cursor} ({keys, cursor}, cursor null on the last page);
// kv-list-all {h} (every page's keys, following the cursor); kv-increment
// {h, key, delta} (the sum as a number); kv-increments {h, key, n} (n
// increments by 1, the last sum); kv-cas {h, key, as} (binds the cas);
// kv-current {h} (the cas's value as text, null for none); kv-swap {h,
// value, as} (consumes the cas; on cas-failed the fresh cas is bound to
// as); kv-get-many {h, keys} ([key, text] or null each); kv-set-many {h,
// kvs: [[key, text], ...]}; kv-delete-many {h, keys}; kv-time {h, what:
// get|set, key, size, n} (n calls of get or set of a size-byte value, each
// timed: {ns}). A store error is {"err": {code, message}} with the case as
// the code (no-such-store, access-denied, other, cas-failed) and other's
// text as the message. Values cross as bytes (a Uint8Array), one byte per
// character of the text (characters up to U+00FF); an s64 is a BigInt under
// componentize-js and a number under componentize-qjs.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { get as getProvider } from 'toolhost:agent/provider@0.3.0';
import { reply, replyDelta, replyError, send, isOpen as msgIsOpen, cancel as msgCancel } from 'toolhost:agent/messages@0.3.0';
import { recv, tryRecv, pending } from 'toolhost:agent/inbox@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { open } from 'wasi:keyvalue/store@0.2.0-draft2';
import { Cas, increment, swap } from 'wasi:keyvalue/atomics@0.2.0-draft2';
import { getMany, setMany, deleteMany } from 'wasi:keyvalue/batch@0.2.0-draft2';

const dispose = Symbol.dispose || Symbol.for('dispose');

// bytes and text convert a value one byte per character.
const bytes = (text) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const text = (b) => (b == null ? null : Array.from(b, (c) => String.fromCharCode(c)).join(''));

// s64 is n as the s64 its toolchain takes: a BigInt under componentize-js
// (SpiderMonkey), a number under componentize-qjs (QuickJS, whose stack
// lines start with "at"); the other one traps. componentize-js 0.23 also
// traps on a negative s64 argument (ComponentizeJS#343).
const quickJS = /^\s*at /m.test(String(new Error().stack));
const s64 = (n) => (quickJS ? n : BigInt(n));

export function run(input) {
  const { steps = [] } = JSON.parse(input || '{}');
  const vars = new Map(); // name -> handle or id
  const names = new Map(); // id -> name
  const out = [];
  const kept = [];

  const handle = (s) => {
    const h = vars.get(s.h);
    if (h === undefined) throw new Error(`no handle ${s.h}`);
    return h;
  };
  const id = (s) => (vars.has(s.id) ? vars.get(s.id) : s.id);
  const bind = (s, v) => {
    if (s.as) {
      vars.set(s.as, v);
      if (typeof v === 'string') names.set(v, s.as);
    }
    return s.as ?? v;
  };
  const args = (s) => (s.raw !== undefined ? s.raw : JSON.stringify(s.args ?? {}));
  const envelope = (e) => {
    if (e == null) return null; // none: undefined (componentize-js) or null (componentize-qjs)
    const ev = e.event;
    const val = ev.tag === 'message' ? { sender: ev.val.sender, session: ev.val.session ?? null, content: ev.val.content } : ev.val ?? null;
    return { id: names.get(e.id) ?? e.id, tag: ev.tag, val };
  };
  // bindEnvelope binds a received envelope's id to s.as.
  const bindEnvelope = (s, e) => {
    if (e != null) bind(s, e.id);
    return envelope(e);
  };
  // follow receives the envelopes of id up to its terminal one: those
  // tagged tag (the deltas) counted and joined, others kept in skipped.
  const follow = (s, tag) => {
    const want = id(s);
    const skipped = [];
    let deltas = 0;
    let text = '';
    for (;;) {
      const e = recv(s.timeout ?? undefined);
      if (e == null) return { deltas, text, end: null, skipped };
      if (e.id !== want) {
        skipped.push(envelope(e));
        if (e.event.tag === 'shutdown') return { deltas, text, end: null, skipped };
        continue;
      }
      if (e.event.tag === tag) {
        deltas++;
        text += e.event.val;
        continue;
      }
      return { deltas, text, end: envelope(e), skipped };
    }
  };
  const hostError = (e) => {
    const p = e && e.payload;
    if (p && p.code) return { code: p.code, message: p.message };
    // wasi:keyvalue's error (and cas-error's store-error around it).
    const kv = p && p.tag === 'store-error' ? p.val : p;
    if (kv && kv.tag) return { code: kv.tag, message: typeof kv.val === 'string' ? kv.val : '' };
    return null;
  };
  const value = (s) => bytes(s.size !== undefined ? 'x'.repeat(s.size) : s.value ?? '');
  const kvTime = (s) => {
    const b = handle(s);
    const v = value(s);
    const ns = [];
    for (let i = 0; i < s.n; i++) {
      const start = performance.now();
      if (s.what === 'set') b.set(s.key, v);
      else b.get(s.key);
      ns.push(Math.round((performance.now() - start) * 1e6));
    }
    return { ns };
  };
  // serve answers messages by s.mode (see the header).
  const serve = (s) => {
    const answer = {
      echo: (mid, c) => reply(mid, c),
      deltas: (mid, c) => {
        for (const w of c.split(/(?<= )/)) if (w !== '') replyDelta(mid, w);
        reply(mid, '');
      },
      upper: (mid, c) => reply(mid, c.replace(/[a-z]+/g, (w) => w.toUpperCase())),
      error: (mid, c) => replyError(mid, c),
      silent: () => {},
      die: (mid, c) => {
        replyDelta(mid, c);
        throw { fail: new Error('died mid-reply') };
      },
    }[s.mode];
    if (!answer) throw new Error(`no serve mode ${s.mode}`);
    const out = { handled: 0, ignored: 0, shutdown: false, failures: [] };
    while (s.count == null || out.handled < s.count) {
      const e = recv(undefined);
      if (e == null || e.event.tag === 'shutdown') {
        out.shutdown = true;
        break;
      }
      if (e.event.tag !== 'message') {
        out.ignored++;
        continue;
      }
      out.handled++;
      try {
        answer(e.id, e.event.val.content);
      } catch (err) {
        const he = hostError(err);
        if (!he) throw err;
        out.failures.push({ id: names.get(e.id) ?? e.id, ...he });
      }
    }
    return out;
  };

  const request = (s) => {
    const r = s.request ?? {};
    const opt = (v) => (v === null ? undefined : v);
    return {
      model: opt(r.model),
      messages: (r.messages ?? []).map((m) => ({
        role: m.role,
        content: m.content ?? '',
        toolCalls: m.toolCalls ?? [],
        toolCallId: opt(m.toolCallId),
      })),
      tools: s['tools-of'] !== undefined ? vars.get(s['tools-of']).listTools() : r.tools ?? [],
      toolChoice: opt(r.toolChoice),
      maxTokens: opt(r.maxTokens),
      temperature: opt(r.temperature),
      stop: r.stop ?? [],
    };
  };

  const ops = {
    get: (s) => bind(s, get(s.name)),
    'get-provider': (s) => bind(s, getProvider(s.name)),
    chat: (s) => handle(s).chat(request(s)),
    'chat-stream': (s) => bind(s, handle(s).chatStream(request(s))),
    'recv-stream': (s) => follow(s, 'chat-delta'),
    'recv-reply': (s) => follow(s, 'reply-delta'),
    reply: (s) => (reply(id(s), s.content ?? ''), true),
    'reply-delta': (s) => (replyDelta(id(s), s.text ?? ''), true),
    'reply-error': (s) => (replyError(id(s), s.message ?? ''), true),
    send: (s) => bind(s, send(s.to, s.content ?? '', s.session ?? undefined)),
    'msg-is-open': (s) => msgIsOpen(id(s)),
    'msg-cancel': (s) => msgCancel(id(s)),
    'recv-message': (s) => {
      const skipped = [];
      for (;;) {
        const e = recv(s.timeout ?? undefined);
        if (e == null) return { got: null, skipped };
        if (e.event.tag === 'message') return { got: bindEnvelope(s, e), skipped };
        skipped.push(envelope(e));
        if (e.event.tag === 'shutdown') return { got: null, skipped };
      }
    },
    serve,
    'kv-open': (s) => bind(s, open(s.name)),
    'kv-get': (s) => text(handle(s).get(s.key)),
    'kv-set': (s) => (handle(s).set(s.key, value(s)), true),
    'kv-delete': (s) => (handle(s).delete(s.key), true),
    'kv-exists': (s) => handle(s).exists(s.key),
    'kv-list': (s) => {
      const page = handle(s).listKeys(s.cursor ?? undefined);
      return { keys: page.keys, cursor: page.cursor ?? null };
    },
    'kv-list-all': (s) => {
      const pages = [];
      for (let cursor; ; ) {
        const page = handle(s).listKeys(cursor);
        pages.push(page.keys);
        if (page.cursor == null) return pages;
        cursor = page.cursor;
      }
    },
    'kv-increment': (s) => Number(increment(handle(s), s.key, s64(s.delta ?? 1))),
    'kv-increments': (s) => {
      let n = 0;
      for (let i = 0; i < s.n; i++) n = Number(increment(handle(s), s.key, s64(1)));
      return n;
    },
    'kv-cas': (s) => bind(s, Cas.new(handle(s), s.key)),
    'kv-current': (s) => text(handle(s).current()),
    'kv-swap': (s) => {
      const c = handle(s);
      vars.delete(s.h); // swap takes the cas
      try {
        swap(c, value(s));
      } catch (e) {
        const p = e && e.payload;
        if (p && p.tag === 'cas-failed') bind(s, p.val);
        throw e;
      }
      return true;
    },
    'kv-get-many': (s) => getMany(handle(s), s.keys).map((e) => (e == null ? null : [e[0], text(e[1])])),
    'kv-set-many': (s) => (setMany(handle(s), s.kvs.map(([k, v]) => [k, bytes(v)])), true),
    'kv-delete-many': (s) => (deleteMany(handle(s), s.keys), true),
    'kv-time': kvTime,
    drop: (s) => {
      handle(s)[dispose]();
      vars.delete(s.h);
      return true;
    },
    kind: (s) => handle(s).kind(),
    name: (s) => handle(s).name(),
    'list-tools': (s) => handle(s).listTools(),
    'call-tool': (s) => bind(s, handle(s).callTool(s.tool, args(s))),
    'is-open': (s) => handle(s).isOpen(id(s)),
    cancel: (s) => handle(s).cancel(id(s)),
    'call-tool-blocking': (s) => handle(s).callToolBlocking(s.tool, args(s)),
    'list-resources': (s) => handle(s).listResources(),
    'read-resource': (s) => handle(s).readResource(s.uri),
    'subscribe-list': (s) => bind(s, handle(s).subscribeResourceList()),
    'unsubscribe-list': (s) => handle(s).unsubscribeResourceList(id(s)),
    subscribe: (s) => bind(s, handle(s).subscribeResource(s.uri)),
    unsubscribe: (s) => handle(s).unsubscribeResource(id(s)),
    recv: (s) => bindEnvelope(s, recv(s.timeout ?? undefined)),
    'recv-until': (s) => {
      const want = id(s);
      const skipped = [];
      for (;;) {
        const e = recv(s.timeout ?? undefined);
        if (e == null) return { got: null, skipped };
        if (e.id === want) return { got: envelope(e), skipped };
        skipped.push(envelope(e));
        if (e.event.tag === 'shutdown') return { got: null, skipped };
      }
    },
    'try-recv': () => envelope(tryRecv()),
    pending: () => pending(),
    log: (s) => {
      write(s.level ?? 'info', s.message ?? '');
      return true;
    },
    spin: (s) => {
      const end = s.ms === undefined ? Infinity : Date.now() + s.ms;
      let n = 0;
      while (Date.now() < end) n++;
      return n > 0;
    },
    alloc: (s) => {
      // Keeps s.mb MB of array buffers alive until run returns.
      for (let i = 0; i < s.mb; i++) kept.push(new Uint8Array(1 << 20).fill(i & 0xff));
      return kept.length;
    },
    fail: (s) => {
      throw { fail: s.message ?? 'failed' };
    },
    // throw lets an exception escape run: what "host-error" (an uncaught
    // get of an unknown tooling) or "error" (a JS Error).
    throw: (s) => {
      try {
        if (s.what === 'host-error') get('no-such-tooling');
        throw new Error(s.message ?? 'thrown');
      } catch (e) {
        throw { fail: e };
      }
    },
  };

  let stopOnError = false;
  let failed = false;
  for (const s of steps) {
    if (s.op === 'stop-on-error') {
      stopOnError = true;
      continue;
    }
    if (failed && stopOnError) {
      out.push({ op: s.op, skipped: true });
      continue;
    }
    const f = ops[s.op];
    if (!f) throw `unknown op ${s.op}`;
    try {
      out.push({ op: s.op, ok: f(s) });
    } catch (e) {
      if (e && e.fail !== undefined) throw e.fail;
      failed = true;
      const he = hostError(e);
      if (he) out.push({ op: s.op, err: he });
      else out.push({ op: s.op, thrown: String(e) });
    }
  }
  return JSON.stringify(out);
}
