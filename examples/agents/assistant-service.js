// assistant-service: an assistant you talk to. It answers messages until
// the host stops it, keeping one conversation per session: each message is
// the user's next turn, the model is asked with the tools of its toolings,
// the tools it calls are called (sdk/js Toolbox), and its answer streams
// into the reply as it arrives (reply.streamChat). A message without a
// session is a conversation of its own. Run it as [agent.X] instances =
// "per-session" for an instance per conversation, or "single" for one
// instance keeping them all:
//
//   toolhostd send assistant-service "what tools do you have?" --session s1
//
// It remembers: each conversation is kept in the key-value store
// (wasi:keyvalue), so a restarted daemon, or another host of a cluster
// after a move, continues it where it stopped. A per-session instance
// keeps its conversation in its session's bucket (open("session"), key
// "history"); a single instance keeps them all in its bucket
// "conversations", a key per session. Without a store (open fails) it
// remembers in memory only, and says so in its log.
//
// Input (JSON, every key optional): {"provider", "system", "toolings":
// [...], "max_turns", "max_history", "request"}. max_history bounds the
// messages a conversation keeps (the oldest whole turns go first; the
// system message stays); request is the template of every request to the
// model, as the provider's chat takes it ({model, maxTokens, temperature,
// stop, toolChoice}; its messages and tools are the conversation's and the
// toolings').
import { get as getProvider } from 'toolhost:agent/provider@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { open } from 'wasi:keyvalue/store@0.2.0-draft2';
import { agent, errorText, fromUtf8, Inbox, Toolbox, utf8 } from '../../sdk/js/toolhost.js';

const defaults = {
  provider: 'model',
  system: 'You are a helpful assistant. Use the tools when they help, then answer briefly.',
  toolings: ['everything'],
  max_turns: 8,
  max_history: 40,
  request: {},
};

// toolTimeout bounds the wait for one turn's tool results; streamTimeout
// one streamed answer.
const toolTimeout = 5 * 60 * 1000;
const streamTimeout = 5 * 60 * 1000;

const dispose = Symbol.dispose || Symbol.for('dispose');

// trim keeps at most limit messages of a conversation: its system message
// and its latest turns, whole (a kept turn starts with a user message).
function trim(history, limit) {
  if (!(limit > 0) || history.length <= limit) return history;
  const head = history[0].role === 'system' ? [history[0]] : [];
  let rest = history.slice(head.length).slice(-(limit - head.length));
  while (rest.length > 0 && rest[0].role !== 'user') rest = rest.slice(1);
  return [...head, ...rest];
}

// memory is where the conversations are kept: the session's bucket of a
// per-session instance, else the agent's bucket "conversations"; null
// without a store.
function memory() {
  try {
    return { bucket: open('session'), key: () => 'history' };
  } catch {
    // Not a per-session instance (no-such-store): the agent's own bucket.
  }
  try {
    return { bucket: open('conversations'), key: (session) => `conversation/${session}` };
  } catch (e) {
    write('warn', `assistant-service: no key-value store (${errorText(e)}): conversations are kept in memory only`);
    return null;
  }
}

// recall is the kept conversation of session ([] for none); keep stores
// it. A store error is logged: the conversation goes on from memory.
function recall(mem, session) {
  if (mem === null) return [];
  try {
    const v = mem.bucket.get(mem.key(session));
    return v === undefined ? [] : JSON.parse(fromUtf8(v));
  } catch (e) {
    write('warn', `assistant-service: reading conversation ${session}: ${errorText(e)}`);
    return [];
  }
}

function keep(mem, session, history) {
  if (mem === null) return;
  try {
    mem.bucket.set(mem.key(session), utf8(JSON.stringify(history)));
  } catch (e) {
    write('warn', `assistant-service: keeping conversation ${session}: ${errorText(e)}`);
  }
}

function service(o) {
  const box = new Toolbox(o.toolings); // throws "tooling NAME: code: message"
  let p = null;
  try {
    try {
      p = getProvider(o.provider);
    } catch (e) {
      throw `provider ${o.provider}: ${errorText(e)}`;
    }
    const inbox = new Inbox();
    const mem = memory();
    const sessions = new Map(); // session -> its messages
    // answer is one user turn: the model is asked until it stops calling
    // tools, its text streaming into the reply.
    const answer = (msg, reply) => {
      let history = [];
      if (msg.session !== null) history = sessions.get(msg.session) || recall(mem, msg.session);
      if (history.length === 0 && o.system) history.push({ role: 'system', content: o.system, toolCalls: [] });
      history.push({ role: 'user', content: msg.content, toolCalls: [] });
      try {
        for (let turn = 1; turn <= o.max_turns; turn++) {
          const req = { stop: [], ...o.request, messages: history, tools: box.tools };
          const resp = reply.streamChat(p, req, streamTimeout);
          if (resp === null) throw inbox.shutdown ? 'the agent is stopping' : 'the model sent nothing in time';
          history.push(resp.message);
          if (resp.finishReason !== 'tool-calls' || resp.message.toolCalls.length === 0) {
            write('info', `assistant-service: ${resp.model} answered ${msg.sender} in ${turn} turns (${resp.usage.inputTokens} input, ${resp.usage.outputTokens} output tokens)`);
            return '';
          }
          if (resp.message.content !== '') reply.delta('\n');
          for (const c of resp.message.toolCalls) write('info', `assistant-service: tool call ${c.name} ${c.arguments}`);
          history.push(...box.call(resp.message.toolCalls, inbox, toolTimeout));
          if (inbox.shutdown) throw 'the agent is stopping';
        }
        throw `no answer after ${o.max_turns} turns`;
      } finally {
        if (msg.session !== null) {
          history = trim(history, o.max_history);
          sessions.set(msg.session, history);
          keep(mem, msg.session, history);
        }
      }
    };
    const n = inbox.serve(answer);
    return `answered ${n} messages in ${sessions.size} sessions`;
  } finally {
    box.close();
    if (mem !== null) mem.bucket[dispose]();
    if (p !== null) p[dispose]();
  }
}

// agent (sdk/js) makes whatever escapes run's err: a host error as
// "code: message".
export const run = agent((input) => service({ ...defaults, ...(input && input.trim() ? JSON.parse(input) : {}) }));
