// sdkjs: drives sdk/js/toolhost.js from inside a component, for the host's
// TestJSSDK. Input: JSON {"case": ..., "tooling", "provider", "prompt",
// "to", "content", "session"}.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { get as getProvider } from 'toolhost:agent/provider@0.3.0';
import { pending } from 'toolhost:agent/inbox@0.3.0';
import { agent, errorText, Inbox, send, serve } from '../../../../sdk/js/toolhost.js';

const text = (env) => {
  if (env.event.tag !== 'tool-result') return `${env.event.tag}`;
  const v = JSON.parse(env.event.val.value);
  return (v.content ?? []).map((c) => c.text).join('');
};

const cases = {
  // A host error escapes run: err is "code: message".
  'host-error': () => get('no-such-tooling'),
  // Neither a string nor an Error escapes run: err is its JSON.
  'throw-object': () => {
    throw { why: 'an object' };
  },
  'throw-error': () => {
    throw new TypeError('plain error');
  },
  'return-object': () => ({ a: 1, b: [true] }),
  'return-nothing': () => undefined,
  // Two calls, both arrived (pending is 2); waitFor an id that never
  // comes holds both and times out; then waitFor the second and the
  // first, from what it held; a third call's envelope comes through recv.
  'wait-for': (o) => {
    const t = get(o.tooling);
    const a = t.callTool('echo', JSON.stringify({ text: 'first' }));
    const b = t.callTool('echo', JSON.stringify({ text: 'second' }));
    for (const end = Date.now() + 30000; pending() < 2 && Date.now() < end; ) {
      // the workers deliver within milliseconds
    }
    const inbox = new Inbox();
    const none = inbox.waitFor('00000000-0000-4000-8000-000000000000', 100);
    const held = inbox.held;
    const eb = inbox.waitFor(b, 0);
    const ea = inbox.waitFor(a, 0);
    const c = t.callTool('echo', JSON.stringify({ text: 'third' }));
    const ec = inbox.recv(30000);
    return { none, held, b: text(eb), a: text(ea), heldAfter: inbox.held, third: ec.id === c ? text(ec) : `wrong id ${ec.id}` };
  },
  // A chat-stream followed to its end: the deltas and the response.
  stream: (o) => {
    const p = getProvider(o.provider);
    const id = p.chatStream({
      messages: [{ role: 'user', content: o.prompt, toolCalls: [] }],
      tools: [],
      stop: [],
    });
    const deltas = [];
    const resp = new Inbox().stream(id, (d) => deltas.push(d), 30000);
    return { deltas: deltas.join(''), some: deltas.length > 0, content: resp.message.content };
  },
  // serve answers messages until shutdown and returns how many it
  // handled: "fail ..." throws (the reply is the error "fail ..."),
  // "words ..." streams each word as a delta and returns nothing (the
  // reply ends with ""), "chat ..." streams the provider's answer to the
  // rest into the reply and ends it with " (model)", anything else is
  // answered with "echo: " and the content (with the session, if any).
  serve: (o) => {
    const handled = serve((msg, reply) => {
      const [word, ...rest] = msg.content.split(' ');
      switch (word) {
        case 'fail':
          throw msg.content;
        case 'words':
          for (const w of rest) reply.delta(`${w} `);
          return undefined;
        case 'chat': {
          const p = getProvider(o.provider);
          const resp = reply.streamChat(p, { messages: [{ role: 'user', content: rest.join(' '), toolCalls: [] }], tools: [], stop: [] }, 30000);
          p[Symbol.dispose]();
          reply.end(` (${resp.model})`);
          return undefined;
        }
      }
      return `echo: ${msg.content}${msg.session === null ? '' : ` [${msg.session}]`}`;
    });
    return { handled };
  },
  // send sends o.content to o.to and follows the reply: its text and how
  // many deltas it came in, or the error.
  send: (o) => {
    const inbox = new Inbox();
    let deltas = 0;
    try {
      const id = send(o.to, o.content, o.session);
      const text = inbox.replyOf(id, () => deltas++, 30000);
      return { text, deltas };
    } catch (e) {
      return { error: errorText(e) };
    }
  },
};

export const run = agent((input) => {
  const o = JSON.parse(input);
  return cases[o.case](o);
});
