// bench: makes tool calls in a loop and times each one with
// performance.now(), for the host's benchmarks. Input: JSON {"tooling",
// "tool", "arguments", "n", "batch"}: n rounds; a round is one
// call-tool-blocking when batch is 0 or absent, else batch call-tool calls
// followed by recv until all their envelopes are in. Output: JSON
// {"ns": [per-round nanoseconds], "errors": count}.
//
// With "provider" instead: n rounds of one chat-stream of "prompt" on that
// provider, recv until its chat-done. Output: JSON {"first": [ns to the
// first chat-delta], "ns": [ns to the chat-done], "deltas": chat-delta
// envelopes received, "chars": their text's length, "errors": count}.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { get as getProvider } from 'toolhost:agent/provider@0.3.0';
import { recv } from 'toolhost:agent/inbox@0.3.0';

const dispose = Symbol.dispose || Symbol.for('dispose');

function chatStreams(o) {
  const p = getProvider(o.provider);
  const req = {
    model: undefined, messages: [{ role: 'user', content: o.prompt ?? 'hi', toolCalls: [], toolCallId: undefined }],
    tools: [], toolChoice: undefined, maxTokens: undefined, temperature: undefined, stop: [],
  };
  const first = [];
  const ns = [];
  let deltas = 0;
  let chars = 0;
  let errors = 0;
  for (let i = 0; i < o.n; i++) {
    const start = performance.now();
    let firstAt = -1;
    const id = p.chatStream(req);
    for (;;) {
      const e = recv(30000);
      if (e === undefined) throw `stream ${i} timed out`;
      if (e.id !== id) continue;
      if (e.event.tag === 'chat-delta') {
        if (firstAt < 0) firstAt = performance.now();
        deltas++;
        chars += e.event.val.length;
        continue;
      }
      if (e.event.tag !== 'chat-done') errors++;
      break;
    }
    const end = performance.now();
    first.push(Math.round((firstAt - start) * 1e6));
    ns.push(Math.round((end - start) * 1e6));
  }
  p[dispose]();
  return JSON.stringify({ first, ns, deltas, chars, errors });
}

export function run(input) {
  const o = JSON.parse(input);
  if (o.provider) return chatStreams(o);
  const t = get(o.tooling);
  const args = JSON.stringify(o.arguments ?? {});
  const ns = [];
  let errors = 0;
  for (let i = 0; i < o.n; i++) {
    const start = performance.now();
    if (!o.batch) {
      t.callToolBlocking(o.tool, args);
    } else {
      const waiting = new Set();
      for (let j = 0; j < o.batch; j++) waiting.add(t.callTool(o.tool, args));
      while (waiting.size > 0) {
        const e = recv(30000);
        if (e === undefined) throw `timed out with ${waiting.size} results missing`;
        if (e.event.tag !== 'tool-result') errors++;
        waiting.delete(e.id);
      }
    }
    ns.push(Math.round((performance.now() - start) * 1e6));
  }
  return JSON.stringify({ ns, errors });
}
