// hello: lists the tools of each tooling it is given, calls one, and returns
// a summary. Input: JSON {"toolings": [...], "call": {"tooling", "tool",
// "arguments"}}; both keys are optional (defaults below).
import { get } from 'toolhost:agent/tooling@0.1.0';
import { write } from 'toolhost:agent/log@0.1.0';

const defaults = {
  toolings: ['everything', 'filesystem'],
  call: { tooling: 'everything', tool: 'echo', arguments: { message: 'hello from a WebAssembly agent' } },
};

function describe(e) {
  // A host-error arrives as a thrown ComponentError whose payload is the record.
  const p = e && e.payload;
  return p && p.code ? `${p.code}: ${p.message}` : String(e);
}

export function run(input) {
  const opts = input && input.trim() ? { ...defaults, ...JSON.parse(input) } : defaults;
  const lines = [];
  for (const name of opts.toolings) {
    let t;
    try {
      t = get(name);
    } catch (e) {
      lines.push(`${name}: ${describe(e)}`);
      continue;
    }
    try {
      const tools = t.listTools();
      lines.push(`${t.name()} (${t.kind()}): ${tools.length} tools: ${tools.map((x) => x.name).join(', ')}`);
    } catch (e) {
      lines.push(`${name}: list-tools failed: ${describe(e)}`);
    }
  }
  if (opts.call) {
    const c = opts.call;
    try {
      const res = get(c.tooling).callToolBlocking(c.tool, JSON.stringify(c.arguments ?? {}));
      const value = JSON.parse(res.value);
      const text = (value.content ?? []).filter((x) => x.type === 'text').map((x) => x.text).join(' ');
      lines.push(`${c.tooling}.${res.name}(${res.arguments}) -> ${text}`);
    } catch (e) {
      lines.push(`${c.tooling}.${c.tool} failed: ${describe(e)}`);
    }
  }
  write('info', `hello agent finished: ${lines.length} lines`);
  return lines.join('\n');
}
