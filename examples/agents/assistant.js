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
import { get as getProvider } from 'toolhost:agent/provider@0.3.0';
import { recv } from 'toolhost:agent/inbox@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { agent, errorText, Inbox, Toolbox } from '../../sdk/js/toolhost.js';

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

function assistant(o) {
  let p;
  try {
    p = getProvider(o.provider);
  } catch (e) {
    throw `provider ${o.provider}: ${errorText(e)}`;
  }
  let box;
  try {
    // The tools of every tooling, as list-tools returns them; the first
    // tooling offering a name answers its calls.
    box = new Toolbox(o.toolings);
    const req = { model: o.model ?? undefined, messages: [], tools: box.tools, toolChoice: undefined, maxTokens: o.max_tokens ?? undefined, temperature: undefined, stop: [] };
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
      for (const c of resp.message.toolCalls) write('info', `assistant: tool call ${c.name} ${c.arguments}`);
      req.messages.push(...box.call(resp.message.toolCalls, new Inbox(), replyTimeout));
    }
    throw `no answer after ${o.max_turns} turns`;
  } finally {
    if (box) box.close();
    p[dispose]();
  }
}

// agent (sdk/js) makes whatever escapes run's err: a host error as
// "code: message".
export const run = agent((input) => assistant({ ...defaults, ...(input && input.trim() ? JSON.parse(input) : {}) }));
