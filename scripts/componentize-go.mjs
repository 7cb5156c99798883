#!/usr/bin/env node
// componentize-go: turns a Go reactor module (GOOS=wasip1 GOARCH=wasm
// go build -buildmode=c-shared) into a toolhost:agent component with
// jco's JS API: embed the world's WIT into the module (componentEmbed),
// then componentize it with the WASI preview1 reactor adapter that ships
// in the jco package (componentNew). jco's CLI `embed --wit DIR` is not
// used: in jco 1.35 it crashes (its wasm-tools gets no preopen).
//
// Usage: node scripts/componentize-go.mjs --wit wit/agent.wit --world agent CORE.wasm OUT.wasm
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { componentEmbed, componentNew } from '@bytecodealliance/jco';
import { witSource } from './wit-source.mjs';

const { values, positionals } = parseArgs({
  options: { wit: { type: 'string' }, world: { type: 'string', default: 'agent' } },
  allowPositionals: true,
});
if (!values.wit || positionals.length !== 2) {
  console.error('usage: componentize-go.mjs --wit FILE.wit [--world NAME] CORE.wasm OUT.wasm');
  process.exit(64);
}
const [core, out] = positionals;

// The adapter is a file of the jco package (lib/), found from where node
// resolves jco's entry point (dist/api.js).
const jcoDir = path.dirname(path.dirname(fileURLToPath(import.meta.resolve('@bytecodealliance/jco'))));
const adapterPath = path.join(jcoDir, 'lib', 'wasi_snapshot_preview1.reactor.wasm');

try {
  const [binary, adapter] = await Promise.all([readFile(core), readFile(adapterPath)]);
  // The file's text and the packages of the deps/ directory beside it.
  const embedded = await componentEmbed({ binary, witSource: witSource(values.wit), world: values.world });
  const component = await componentNew(embedded, [['wasi_snapshot_preview1', adapter]]);
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, component);
} catch (e) {
  console.error(`componentize-go ${core}: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
