// assistant: the tool loop of an agent that thinks. It lists the tools of
// its toolings, asks the provider's model with those tools, calls each tool
// the model asks for with callTool, answers each call with a tool message
// carrying the result, and asks again, until the model stops for another
// reason than tool calls (or max_turns is reached). Its output is the
// model's last text; each tool call and the tokens used are logged.
//
// Input (JSON, every key optional): {"provider", "model", "system",
// "prompt", "toolings": [...], "max_turns", "max_tokens", "stream"}. With
// "stream" each answer comes from chatStream: the deltas are joined as they
// arrive and the chat-done envelope ends the turn.
import { get } from 'toolhost:agent/tooling@0.2.0';
import { get as getProvider } from 'toolhost:agent/provider@0.2.0';
import { recv } from 'toolhost:agent/inbox@0.2.0';
import { write } from 'toolhost:agent/log@0.2.0';
import { agent, errorText } from '../../sdk/js/toolhost.js';

const defaults = {
  provider: 'model',
  system: 'You are a helpful assistant. Use the tools when they help, then answer briefly.',
  prompt: 'Use the echo tool to echo "hello from a WebAssembly agent", then tell me what it returned.',
  toolings: ['everything'],
  max_turns: 8,
  stream: false,
};

// replyTimeout bounds the wait for one tool result or one streamed answer.
const replyTimeout = 5 * 60 * 1000;

const dispose = Symbol.dispose || Symbol.for('dispose');

const message = (role, content, toolCallId) => ({ role, content, toolCalls: [], toolCallId });

// ask is one turn: chat, or chatStream and its envelopes.
function ask(p, req, stream) {
  if (!stream) return p.chat(req);
  const id = p.chatStream(req);
  let text = '';
  for (;;) {
    const env = recv(replyTimeout);
    if (env == null) {
      p.cancel(id);
      throw 'the stream sent nothing in time';
    }
    if (env.id !== id) continue; // nothing else is outstanding between turns
    const ev = env.event;
    if (ev.tag === 'chat-delta') text += ev.val;
    else if (ev.tag === 'chat-done') {
      if (text !== ev.val.message.content) write('warn', `assistant: the deltas (${text.length} chars) differ from the response's text`);
      return ev.val;
    } else if (ev.tag === 'error') throw `${ev.val.code}: ${ev.val.message}`;
    else if (ev.tag === 'shutdown') throw 'stopped';
  }
}

// resultText is the text of a CallToolResult (JSON), marked when isError.
function resultText(value) {
  try {
    const v = JSON.parse(value);
    const text = (v.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    return v.isError ? `error: ${text}` : text;
  } catch {
    return value;
  }
}

// callTools queues every call with callTool, then answers each, in the
// model's order, with a tool message: the tool's text, or what failed.
function callTools(owner, calls) {
  const answers = new Array(calls.length);
  const waiting = new Map(); // call id -> index
  const via = new Map();
  calls.forEach((c, i) => {
    const t = owner.get(c.name);
    if (!t) {
      answers[i] = `error: there is no tool named ${c.name}`;
      return;
    }
    const args = c.arguments.trim() === '' ? '{}' : c.arguments;
    try {
      const id = t.callTool(c.name, args);
      write('info', `assistant: tool call ${c.name} ${args}`);
      waiting.set(id, i);
      via.set(id, t);
    } catch (e) {
      answers[i] = `error: ${errorText(e)}`;
    }
  });
  while (waiting.size > 0) {
    const env = recv(replyTimeout);
    if (env == null || env.event.tag === 'shutdown') break;
    const i = waiting.get(env.id);
    if (i === undefined) continue;
    waiting.delete(env.id);
    const ev = env.event;
    answers[i] = ev.tag === 'tool-result' ? resultText(ev.val.value) : `error: ${ev.val.code}: ${ev.val.message}`;
  }
  for (const [id, i] of waiting) {
    via.get(id).cancel(id);
    answers[i] = 'error: no result in time';
  }
  return calls.map((c, i) => message('tool', answers[i], c.id));
}

function assistant(o) {
  let p;
  try {
    p = getProvider(o.provider);
  } catch (e) {
    throw `provider ${o.provider}: ${errorText(e)}`;
  }
  const handles = [p];
  try {
    // The tools of every tooling, as list-tools returns them; the first
    // tooling offering a name answers its calls.
    const tools = [];
    const owner = new Map();
    for (const name of o.toolings) {
      let t;
      try {
        t = get(name);
        handles.push(t);
        for (const tl of t.listTools()) {
          if (owner.has(tl.name)) {
            write('warn', `assistant: tool ${tl.name} of ${name} hidden by another tooling's`);
            continue;
          }
          owner.set(tl.name, t);
          tools.push(tl);
        }
      } catch (e) {
        throw `tooling ${name}: ${errorText(e)}`;
      }
    }
    const req = { model: o.model ?? undefined, messages: [], tools, toolChoice: undefined, maxTokens: o.max_tokens ?? undefined, temperature: undefined, stop: [] };
    if (o.system) req.messages.push(message('system', o.system));
    req.messages.push(message('user', o.prompt));
    let input = 0;
    let output = 0;
    for (let turn = 1; turn <= o.max_turns; turn++) {
      let resp;
      try {
        resp = ask(p, req, o.stream);
      } catch (e) {
        throw `turn ${turn}: ${errorText(e)}`;
      }
      input += resp.usage.inputTokens;
      output += resp.usage.outputTokens;
      req.messages.push(resp.message);
      if (resp.finishReason !== 'tool-calls' || resp.message.toolCalls.length === 0) {
        write('info', `assistant: ${resp.model} answered in ${turn} turns (${resp.finishReason}), ${input} input and ${output} output tokens`);
        return resp.message.content;
      }
      req.messages.push(...callTools(owner, resp.message.toolCalls));
    }
    throw `no answer after ${o.max_turns} turns`;
  } finally {
    for (const h of handles) h[dispose]();
  }
}

// agent (sdk/js) makes whatever escapes run's err: a host error as
// "code: message".
export const run = agent((input) => assistant({ ...defaults, ...(input && input.trim() ? JSON.parse(input) : {}) }));
