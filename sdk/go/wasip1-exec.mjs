#!/usr/bin/env node
// wasip1-exec: runs a GOOS=wasip1 test binary under node's WASI, for
// `GOOS=wasip1 GOARCH=wasm go test -exec 'node wasip1-exec.mjs' ./...`: the
// SDK's tests on its real target (32-bit addresses, the wasip1 build of
// abi_wasip1.go). The toolhost:agent imports a test binary references are
// bound to functions that throw: no test reaches the host.
import { WASI } from 'node:wasi';
import { readFile } from 'node:fs/promises';

const [file, ...args] = process.argv.slice(2);
const wasi = new WASI({
  version: 'preview1',
  args: [file, ...args],
  env: { ...process.env, PWD: process.cwd() },
  preopens: { '/': '/' },
  returnOnExit: true,
});
const mod = await WebAssembly.compile(await readFile(file));
const imports = { wasi_snapshot_preview1: wasi.wasiImport };
for (const imp of WebAssembly.Module.imports(mod)) {
  if (imp.module === 'wasi_snapshot_preview1' || imp.kind !== 'function') continue;
  imports[imp.module] ??= {};
  imports[imp.module][imp.name] = () => {
    throw new Error(`${imp.module}#${imp.name} called: there is no host in a test`);
  };
}
const instance = await WebAssembly.instantiate(mod, imports);
process.exitCode = wasi.start(instance);
