// Tests of sdk/js/toolhost.js outside a component (the host's modules are
// fakehost.mjs's stubs): Inbox.serve, replyOf, stream, Reply.streamChat
// and Toolbox against a queue of envelopes. Run by toolhost_test.go:
//   node --import ./testdata/fakehost.mjs testdata/toolhost_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Inbox, Reply, Toolbox, send, errorText, utf8, fromUtf8 } from '../toolhost.js';

const SHUTDOWN = { id: '00000000-0000-0000-0000-000000000000', event: { tag: 'shutdown' } };
const message = (id, content, session) => ({ id, event: { tag: 'message', val: { sender: 'api', session, content } } });
const ev = (id, tag, val) => ({ id, event: { tag, val } });
const hostError = (code, message) => ({ payload: { code, message } });

// fake is a queue of envelopes behind recv (none after the shutdown
// envelope, as the host's), and reply functions that record their calls.
function fake(queue, failOn) {
  let shut = false;
  const log = [];
  const recv = () => {
    if (shut || queue.length === 0) return null;
    const env = queue.shift();
    shut = env.event.tag === 'shutdown';
    return env;
  };
  const record = (kind) => (id, text) => {
    log.push(`${kind} ${id} ${text}`);
    if (id === failOn) throw hostError('cancelled', 'the sender cancelled it');
  };
  const messages = { reply: record('reply'), replyDelta: record('delta'), replyError: record('error') };
  return { log, queue, inbox: new Inbox(recv, recv, messages), messages };
}

test('serve answers each message and ends the replies its handler did not', () => {
  const f = fake([
    message('m1', 'hi'),
    ev('t', 'tool-result', {}), // not a message: dropped
    message('m2', 'words a b', 's1'),
    message('m3', 'fail'),
    message('m4', 'object'),
    message('m5', 'cancelled'),
    message('m6', 'ask'),
    ev('r', 'reply-delta', 'he'),
    message('m7', 'held'), // arrives while m6's handler waits: served next
    ev('r', 'reply', 'llo'),
    SHUTDOWN,
  ], 'm5');
  const seen = [];
  const n = f.inbox.serve((msg, reply) => {
    seen.push(`${msg.id} ${msg.session} ${msg.content}`);
    assert.equal(reply.id, msg.id);
    const [word, ...rest] = msg.content.split(' ');
    switch (word) {
      case 'words':
        for (const w of rest) reply.delta(`${w} `);
        return undefined;
      case 'fail':
        throw new Error('boom');
      case 'object':
        return { a: 1 };
      case 'ask':
        reply.end(reply.inbox.replyOf('r', undefined, 1000));
        return 'ignored: the reply ended';
    }
    return `echo ${msg.content}`;
  });
  assert.equal(n, 7);
  assert.deepEqual(seen, ['m1 null hi', 'm2 s1 words a b', 'm3 null fail', 'm4 null object', 'm5 null cancelled', 'm6 null ask', 'm7 null held']);
  assert.deepEqual(f.log, [
    'reply m1 echo hi',
    'delta m2 a ', 'delta m2 b ', 'reply m2 ',
    'error m3 boom',
    'reply m4 {"a":1}',
    'reply m5 echo cancelled', // refused (cancelled): serve goes on
    'reply m6 hello',
    'reply m7 echo held',
  ]);
});

test('serve stops at a shutdown during a handler and fails the held messages', () => {
  const f = fake([message('m1', 'wait'), message('m2', 'held'), ev('t', 'tool-result', {}), SHUTDOWN, message('m3', 'never')]);
  const n = f.inbox.serve((msg, reply) => {
    assert.equal(reply.inbox.stream('c'), null);
    throw 'stopping';
  });
  assert.equal(n, 1);
  assert.deepEqual(f.log, ['error m1 stopping', 'error m2 the agent is stopping']);
  assert.equal(f.inbox.held, 0);
  assert.equal(f.queue.length, 1);
});

test('replyOf joins the deltas and the reply, throws the error envelope', () => {
  let f = fake([ev('s', 'reply-delta', 'a'), message('m', 'x'), ev('s', 'reply-delta', 'b'), ev('s', 'reply', 'c')]);
  const deltas = [];
  assert.equal(f.inbox.replyOf('s', (d) => deltas.push(d), 1000), 'abc');
  assert.deepEqual(deltas, ['a', 'b']);
  assert.equal(f.inbox.held, 1);
  f = fake([ev('s', 'reply-delta', 'a'), ev('s', 'error', { code: 'internal', message: 'trapped' })]);
  assert.throws(() => f.inbox.replyOf('s'), { name: 'HostError', message: 'internal: trapped' });
  f = fake([]);
  assert.equal(f.inbox.replyOf('s', undefined, 0), null);
  f = fake([ev('s', 'chat-delta', 'x')]);
  assert.throws(() => f.inbox.replyOf('s'), /unexpected chat-delta envelope/);
});

test('streamChat streams the deltas into the reply and cancels a failed stream', () => {
  const f = fake([ev('c', 'chat-delta', 'Hel'), ev('c', 'chat-delta', 'lo'), ev('c', 'chat-done', { model: 'm' })]);
  const cancelled = [];
  const provider = { chatStream: () => 'c', cancel: (id) => cancelled.push(id) };
  const r = new Reply('m1', f.inbox, f.messages);
  assert.equal(r.streamChat(provider, {}).model, 'm');
  assert.deepEqual(f.log, ['delta m1 Hel', 'delta m1 lo']);
  assert.equal(r.done, false);
  assert.deepEqual(cancelled, []);
  // A delta the host refuses (the sender cancelled) cancels the stream.
  const g = fake([ev('c', 'chat-delta', 'x'), ev('c', 'chat-done', {})], 'm2');
  assert.throws(() => new Reply('m2', g.inbox, g.messages).streamChat(provider, {}), (e) => e.payload.code === 'cancelled');
  assert.deepEqual(cancelled, ['c']);
});

test('Toolbox calls the tools and answers in the model\'s order', () => {
  let n = 0;
  const cancelled = [];
  const tooling = (name, tools) => ({
    listTools: () => tools.map((t) => ({ name: t, inputSchema: '{}' })),
    callTool: (tool, args) => {
      if (tool === 'bad') throw hostError('invalid-argument', 'no');
      JSON.parse(args);
      return `${name}-${tool}-${n++}`;
    },
    cancel: (id) => cancelled.push(id),
    [Symbol.dispose || Symbol.for('dispose')]: () => cancelled.push(`dropped ${name}`),
  });
  const box = new Toolbox(['a', 'b'], (name) => tooling(name, name === 'a' ? ['echo', 'bad', 'slow'] : ['echo', 'other']));
  assert.deepEqual(box.tools.map((t) => t.name), ['echo', 'bad', 'slow', 'other']);
  assert.deepEqual(box.shadowed, ['echo of b']);
  const text = (t) => JSON.stringify({ content: [{ type: 'text', text: t }] });
  const f = fake([
    message('m', 'held'),
    ev('b-other-1', 'error', { code: 'internal', message: 'boom' }),
    ev('a-echo-0', 'tool-result', { value: text('hi') }),
  ]);
  const calls = ['echo', 'other', 'nope', 'bad', 'slow'].map((name, i) => ({ id: `c${i}`, name, arguments: name === 'echo' ? '' : '{}' }));
  const out = box.call(calls, f.inbox, 50);
  assert.deepEqual(out.map((m) => [m.role, m.toolCallId, m.content]), [
    ['tool', 'c0', 'hi'],
    ['tool', 'c1', 'error: internal: boom'],
    ['tool', 'c2', 'error: there is no tool named nope'],
    ['tool', 'c3', 'error: invalid-argument: no'],
    ['tool', 'c4', 'error: no result in time'],
  ]);
  assert.deepEqual(cancelled, ['a-slow-2']);
  assert.equal(f.inbox.held, 1);
  box.close();
  assert.deepEqual(cancelled.slice(1), ['dropped a', 'dropped b']);
  assert.throws(() => new Toolbox(['x'], () => { throw hostError('denied', 'not granted'); }), (e) => e === 'tooling x: denied: not granted');
});

test('send passes none for a session it is not given', () => {
  globalThis.hostCalls = [];
  send('other', 'hi');
  send('other', 'hi', null);
  send('other', 'hi', 's');
  assert.deepEqual(globalThis.hostCalls, [['send', 'other', 'hi', undefined], ['send', 'other', 'hi', undefined], ['send', 'other', 'hi', 's']]);
});

test('errorText words host errors and key-value store errors', () => {
  assert.equal(errorText(hostError('denied', 'not granted')), 'denied: not granted');
  assert.equal(errorText({ payload: { tag: 'access-denied' } }), 'access-denied');
  assert.equal(errorText({ payload: { tag: 'other', val: 'quota max_keys of agent a exceeded' } }), 'other: quota max_keys of agent a exceeded');
  assert.equal(errorText({ payload: { tag: 'store-error', val: { tag: 'no-such-store' } } }), 'no-such-store');
  assert.equal(errorText({ payload: { tag: 'cas-failed', val: {} } }), 'cas-failed');
  assert.equal(errorText({ payload: { tag: 'circle', val: 2 } }), '{"tag":"circle","val":2}');
});

test('utf8 and fromUtf8 agree with TextEncoder and TextDecoder', () => {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  for (const text of ['', 'ascii', 'añ€😀', '\u007f\u0080\u07ff\u0800\uffff', '\u{10000}\u{10ffff}', 'a\u0000b']) {
    assert.deepEqual(utf8(text), enc.encode(text), text);
    assert.equal(fromUtf8(enc.encode(text)), text);
  }
  assert.deepEqual(utf8('a\ud800b'), enc.encode('a\ufffdb'));
  assert.equal(fromUtf8([0x61, 0xff, 0x62]), dec.decode(Uint8Array.from([0x61, 0xff, 0x62])));
  assert.equal(fromUtf8([0xc3]), '\ufffd');
  assert.equal(fromUtf8([0xe0, 0x80, 0x80]), '\ufffd\ufffd\ufffd'); // overlong
  assert.equal(fromUtf8([0xed, 0xa0, 0x80]), '\ufffd\ufffd\ufffd'); // a surrogate
  assert.equal(fromUtf8([0xf4, 0x90, 0x80, 0x80]), '\ufffd\ufffd\ufffd\ufffd'); // past U+10FFFF
});
