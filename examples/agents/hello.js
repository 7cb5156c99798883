// hello: lists the tools of each tooling it is given, calls one, and returns
// a summary. Input: JSON {"toolings": [...], "call": {"tooling", "tool",
// "arguments"}, "every": seconds}; every key is optional (defaults below).
// With "every" it runs as a daemon's agent: it logs the summary, waits that
// long and does it again, until the host shuts it down; meanwhile it
// answers each message with "hello, SENDER" and its last summary.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { reply } from 'toolhost:agent/messages@0.3.0';
import { recv } from 'toolhost:agent/inbox@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { agent, errorText } from '../../sdk/js/toolhost.js';

const defaults = {
  toolings: ['everything', 'filesystem'],
  call: { tooling: 'everything', tool: 'echo', arguments: { message: 'hello from a WebAssembly agent' } },
};

// shutdownWithin waits up to ms for the host's shutdown envelope,
// answering messages with lines meanwhile; other envelopes (none are
// expected: hello's calls are blocking) are skipped.
function shutdownWithin(ms, lines) {
  const end = Date.now() + ms;
  for (let left = ms; left > 0; left = end - Date.now()) {
    const env = recv(left);
    if (env == null) return false; // none: undefined (componentize-js) or null (componentize-qjs)
    if (env.event.tag === 'shutdown') return true;
    if (env.event.tag === 'message') {
      try {
        reply(env.id, [`hello, ${env.event.val.sender}`, ...lines].join('\n'));
      } catch (e) {
        write('warn', `hello: reply: ${errorText(e)}`);
      }
    }
  }
  return false;
}

export const run = agent((input) => {
  const opts = input && input.trim() ? { ...defaults, ...JSON.parse(input) } : defaults;
  if (!(opts.every > 0)) {
    const lines = summary(opts);
    write('info', `hello agent finished: ${lines.length} lines`);
    return lines.join('\n');
  }
  for (let round = 1; ; round++) {
    const lines = summary(opts);
    write('info', `round ${round}: ${lines.join('; ')}`);
    if (shutdownWithin(opts.every * 1000, lines)) return `stopped after ${round} rounds`;
  }
});

// summary lists the tools of each tooling and makes the call, one line
// each; it drops every handle it got.
function summary(opts) {
  const lines = [];
  for (const name of opts.toolings) {
    let t;
    try {
      t = get(name);
    } catch (e) {
      lines.push(`${name}: ${errorText(e)}`);
      continue;
    }
    try {
      const tools = t.listTools();
      lines.push(`${t.name()} (${t.kind()}): ${tools.length} tools: ${tools.map((x) => x.name).join(', ')}`);
    } catch (e) {
      lines.push(`${name}: list-tools failed: ${errorText(e)}`);
    } finally {
      t[Symbol.dispose]();
    }
  }
  if (opts.call) {
    const c = opts.call;
    let t;
    try {
      t = get(c.tooling);
      const res = t.callToolBlocking(c.tool, JSON.stringify(c.arguments ?? {}));
      const value = JSON.parse(res.value);
      const text = (value.content ?? []).filter((x) => x.type === 'text').map((x) => x.text).join(' ');
      lines.push(`${c.tooling}.${res.name}(${res.arguments}) -> ${text}`);
    } catch (e) {
      lines.push(`${c.tooling}.${c.tool} failed: ${errorText(e)}`);
    } finally {
      if (t) t[Symbol.dispose]();
    }
  }
  return lines;
}
