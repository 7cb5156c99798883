// fakehost.mjs: node module hooks that resolve the host's modules
// ('toolhost:agent/inbox@0.3.0' and the others) to stubs, so that
// toolhost.js loads outside a component (toolhost_test.mjs). Every stub
// function records its call in globalThis.hostCalls and returns nothing;
// the tests hand the SDK their own recv and reply functions.
import { register } from 'node:module';

const stub = `
const call = (name) => (...args) => { (globalThis.hostCalls ??= []).push([name, ...args]); };
export const recv = call('recv'), tryRecv = call('try-recv'), pending = call('pending');
export const reply = call('reply'), replyDelta = call('reply-delta'), replyError = call('reply-error');
export const send = call('send'), isOpen = call('is-open'), cancel = call('cancel');
export const get = call('get'), write = call('write');
`;

export async function resolve(specifier, context, next) {
  if (specifier.startsWith('toolhost:agent/')) {
    return { url: 'data:text/javascript,' + encodeURIComponent(stub), shortCircuit: true };
  }
  return next(specifier, context);
}

if (!import.meta.url.endsWith('?hooks')) register(import.meta.url + '?hooks');
