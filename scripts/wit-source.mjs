// wit-source.mjs: the text of a WIT file with the packages it depends on,
// for jco's APIs that take a WIT source (one file) rather than a directory
// (jco reads paths through a WASI sandbox that fails here). Imported by
// js-types.mjs and componentize-go.mjs.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

// witSource is the WIT file's text followed by the packages of the deps/
// directory beside it (deps/NAME/*.wit), each as a nested package block
// (`package ns:name@v { ... }`), since a source is a single file.
export function witSource(file) {
  let text = readFileSync(file, 'utf8');
  const deps = join(dirname(file), 'deps');
  let dirs = [];
  try {
    dirs = readdirSync(deps, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch {
    return text;
  }
  for (const d of dirs) {
    let pkg = null;
    let body = '';
    for (const f of readdirSync(join(deps, d)).filter((f) => f.endsWith('.wit')).sort()) {
      const src = readFileSync(join(deps, d, f), 'utf8');
      const m = src.match(/^package\s+([^;\s]+)\s*;/m);
      if (m) {
        if (pkg != null && pkg !== m[1]) throw new Error(`${join(deps, d)}: two packages, ${pkg} and ${m[1]}`);
        pkg = m[1];
      }
      body += src.replace(/^package\s+[^;]+;/m, '') + '\n';
    }
    if (pkg == null) throw new Error(`${join(deps, d)}: no file declares its package`);
    text += `\npackage ${pkg} {\n${body}}\n`;
  }
  return text;
}
