#!/usr/bin/env node
// k8s-strict.mjs: unknown-field ("strict") check of rendered Kubernetes
// manifests with the TypeScript compiler.
//
//   node tools/k8s-strict.mjs FILE.yaml...
//
// The JSON schemas used by tools/k8s-validate.mjs accept unknown fields
// (the Kubernetes OpenAPI has no additionalProperties: false), so a typo
// such as `grpcc:` in a probe passes them, and the API server would only
// drop it with a warning. Here every object becomes a TypeScript object
// literal typed with its interface from npm kubernetes-types, e.g.
//   const doc1: K0.Deployment = { ... };
// and `tsc --noEmit --strict` reports excess properties (TS2353), wrong
// types and missing required fields, which are mapped back to the object
// and the field path. Custom resources (PodMonitor, PrometheusRule) are
// typed the same way with the interfaces that npm
// @kubernetes-models/prometheus-operator generates from their CRDs. An
// apiVersion/kind without a type is an error.
//
// Modules come from tools/k8s/node_modules (override the folder with
// ECO=DIR or K8S_TOOLS_DIR=DIR). Exit status: 0 clean, 1 problems found,
// 2 usage or tooling error.

import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const toolsDir = path.resolve(process.env.ECO || process.env.K8S_TOOLS_DIR || path.join(here, 'k8s'));
const requireTools = createRequire(path.join(toolsDir, 'package.json'));
const requireHere = createRequire(import.meta.url); // honours NODE_PATH

function die(msg) {
  console.error(`k8s-strict: ${msg}`);
  process.exit(2);
}

function resolveTools(name) {
  try {
    return requireTools.resolve(name);
  } catch {
    return requireHere.resolve(name);
  }
}

let YAML, typesDir, tscJs;
try {
  YAML = requireTools(resolveTools('yaml'));
  typesDir = path.dirname(resolveTools('kubernetes-types/package.json'));
  const tsPkgFile = resolveTools('typescript/package.json');
  const tsPkg = JSON.parse(fs.readFileSync(tsPkgFile, 'utf8'));
  const bin = typeof tsPkg.bin === 'string' ? tsPkg.bin : tsPkg.bin.tsc;
  tscJs = path.join(path.dirname(tsPkgFile), bin);
} catch (e) {
  die(`cannot load npm modules from ${toolsDir}/node_modules (${e.message.split('\n')[0]}); run: npm --prefix tools/k8s ci`);
}

const args = process.argv.slice(2);
if (args.length === 0 || args.some((a) => a.startsWith('-'))) {
  console.error('usage: node tools/k8s-strict.mjs FILE.yaml...');
  process.exit(2);
}

// apiVersion -> kubernetes-types module (without .d.ts), or null.
function typesModule(apiVersion) {
  const m = /^(?:([a-z0-9.-]+)\/)?(v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$/.exec(apiVersion ?? '');
  if (!m) return null;
  const [, group, version] = m;
  let dir;
  if (!group) dir = 'core';
  else if (group === 'internal.apiserver.k8s.io') dir = 'apiserverinternal';
  else dir = group.replace(/\.k8s\.io$/, '').split('.')[0];
  const file = path.join(typesDir, dir, `${version}.d.ts`);
  return fs.existsSync(file) ? file.slice(0, -'.d.ts'.length) : null;
}

const interfaceCache = new Map();
function hasInterface(mod, kind) {
  if (!interfaceCache.has(mod)) interfaceCache.set(mod, fs.readFileSync(`${mod}.d.ts`, 'utf8'));
  return /^[A-Z][A-Za-z0-9]*$/.test(kind) && interfaceCache.get(mod).includes(`export interface ${kind} {`);
}

// Custom resources (the same table as tools/k8s-validate.mjs): the API group
// -> the npm package of the kubernetes-models family with its CRD types.
// Each kind is a module GROUP/VERSION/KIND.d.ts exporting `interface IKIND`,
// generated from the CRD's openAPIV3Schema: an object literal typed with it
// gets the same excess-property check as a built-in kind.
const CRD_PACKAGES = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};
function crdType(apiVersion, kind) {
  const m = /^([a-z0-9.-]+)\/(v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$/.exec(apiVersion ?? '');
  if (!m || !CRD_PACKAGES[m[1]] || !/^[A-Z][A-Za-z0-9]*$/.test(kind ?? '')) return null;
  let dir;
  try {
    dir = path.dirname(resolveTools(`${CRD_PACKAGES[m[1]]}/package.json`));
  } catch {
    die(`cannot load npm module ${CRD_PACKAGES[m[1]]} from ${toolsDir}/node_modules; run: npm --prefix tools/k8s ci`);
  }
  const mod = path.join(dir, m[1], m[2], kind);
  if (!fs.existsSync(`${mod}.d.ts`) || !fs.readFileSync(`${mod}.d.ts`, 'utf8').includes(`export interface I${kind} {`)) return null;
  return { mod, name: `I${kind}` };
}

// Drops nulls (Kubernetes treats an explicit null as "unset").
function dropNulls(v) {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(dropNulls);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, dropNulls(x)]));
  }
  return v;
}

// Emits `value` as a TS literal, one property or element per line, and
// records the field path of every line in `paths`.
function emit(value, at, indent, lines, paths) {
  const pad = '  '.repeat(indent);
  const open = (text) => {
    lines[lines.length - 1] += text;
  };
  if (Array.isArray(value)) {
    open('[');
    value.forEach((x, i) => {
      lines.push(pad + '  ');
      paths.push(`${at}[${i}]`);
      emit(x, `${at}[${i}]`, indent + 1, lines, paths);
      open(',');
    });
    lines.push(pad + ']');
    paths.push(at);
  } else if (value && typeof value === 'object') {
    open('{');
    for (const [k, x] of Object.entries(value)) {
      const p = at ? `${at}.${k}` : k;
      lines.push(`${pad}  ${JSON.stringify(k)}: `);
      paths.push(p);
      emit(x, p, indent + 1, lines, paths);
      open(',');
    }
    lines.push(pad + '}');
    paths.push(at || '(root)');
  } else {
    open(JSON.stringify(value));
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'k8s-strict-'));
process.on('exit', () => {
  if (process.env.K8S_STRICT_KEEP) console.error(`k8s-strict: generated TypeScript kept in ${work}`);
  else fs.rmSync(work, { recursive: true, force: true });
});
const problems = [];
const sources = new Map(); // ts file -> {input, lines: [{obj, path}]}
let nobj = 0;

{
  args.forEach((input, fi) => {
    let text;
    try {
      text = fs.readFileSync(input, 'utf8');
    } catch (e) {
      die(`${input}: ${e.message}`);
    }
    const docs = YAML.parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
    const imports = new Map();
    const lines = [];
    const paths = [];
    const owner = [];
    docs.forEach((d, di) => {
      for (const e of d.errors) problems.push(`${input}: document ${di + 1}: YAML: ${e.message}`);
      if (d.errors.length) return;
      const raw = d.toJS({ maxAliasCount: 100 });
      if (raw == null) return;
      const objs = raw.kind?.endsWith?.('List') && Array.isArray(raw.items) ? raw.items : [raw];
      for (const o of objs) {
        nobj++;
        const id = `${o?.kind ?? '?'}/${o?.metadata?.name ?? '?'}`;
        let mod = typesModule(o?.apiVersion);
        let typeName = o?.kind;
        if (!mod || !hasInterface(mod, o.kind)) {
          const crd = crdType(o?.apiVersion, o?.kind);
          if (!crd) {
            problems.push(`${input}: ${id}: no kubernetes-types interface for apiVersion "${o?.apiVersion}" kind "${o?.kind}" (nor a CRD type)`);
            continue;
          }
          ({ mod, name: typeName } = crd);
        }
        if (!imports.has(mod)) imports.set(mod, `K${imports.size}`);
        const start = lines.length;
        lines.push(`const doc${nobj}: ${imports.get(mod)}.${typeName} = `);
        paths.push('(root)');
        emit(dropNulls(o), '', 0, lines, paths);
        lines[lines.length - 1] += ';';
        for (let i = start; i < lines.length; i++) owner[i] = id;
      }
    });
    const header = [...imports].map(([mod, alias]) => `import type * as ${alias} from ${JSON.stringify(mod)};`);
    const tsFile = path.join(work, `input${fi}.ts`);
    fs.writeFileSync(tsFile, [...header, ...lines, 'export {};', ''].join('\n'));
    sources.set(path.resolve(tsFile), { input, offset: header.length, paths, owner });
  });

  if (sources.size && [...sources.values()].some((s) => s.paths.length)) {
    fs.writeFileSync(
      path.join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          target: 'es2022',
          module: 'esnext',
          moduleResolution: 'bundler',
          types: [],
        },
        files: [...sources.keys()],
      }),
    );
    const r = spawnSync(process.execPath, [tscJs, '-p', path.join(work, 'tsconfig.json'), '--pretty', 'false'], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (r.error) die(`cannot run tsc: ${r.error.message}`);
    const out = `${r.stdout}${r.stderr}`;
    let mapped = 0;
    // file.ts(LINE,COL): error TSxxxx: message   (continuation lines indented)
    const re = /^(.*?\.ts)\((\d+),(\d+)\): error (TS\d+): (.*(?:\n {2,}.*)*)/gm;
    for (const m of out.matchAll(re)) {
      mapped++;
      const src = sources.get(path.resolve(m[1]));
      const msg = m[5].replace(/\s*\n\s+/g, ' ');
      if (!src) {
        problems.push(`tsc: ${m[0]}`);
        continue;
      }
      const li = Number(m[2]) - 1 - src.offset;
      problems.push(`${src.input}: ${src.owner[li] ?? '?'}: ${src.paths[li] ?? '?'}: ${m[4]} ${msg}`);
    }
    if (r.status !== 0 && mapped === 0) die(`tsc failed without diagnostics (status ${r.status}):\n${out}`);
  }
}

for (const p of problems) console.error(`ERROR ${p}`);
console.log(`k8s-strict: ${args.join(' ')}: ${nobj} objects, ${problems.length} problem(s) (kubernetes-types, tsc --strict)`);
process.exit(problems.length ? 1 : 0);
