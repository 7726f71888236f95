#!/usr/bin/env node
// k8s-validate.mjs: schema validation of rendered Kubernetes manifests, plus
// (with --invariants) the project's own rules for the workflowd deployment.
//
//   node tools/k8s-validate.mjs [--invariants] FILE.yaml...
//
// Schema: every object is checked against the JSON schema of its
// apiVersion/kind from npm kubernetes-models (ajv validators generated from
// the Kubernetes OpenAPI: types, enums, formats, required fields). Those
// schemas allow unknown fields: tools/k8s-strict.mjs catches those.
// Custom resources (PodMonitor, PrometheusRule) are checked against the CRD
// schemas of npm @kubernetes-models/prometheus-operator (CRD_PACKAGES).
// An apiVersion/kind without a schema (an unknown CRD, a typo) is an error.
//
// Invariants (--invariants, one rendered overlay per file): the gRPC probes,
// the shutdown budget, the security context, appProtocol grpc, references
// between objects (ConfigMaps, Secrets, ServiceAccount, HPA target,
// selectors) and "no Secret object outside development". See checkInvariants.
//
// Modules come from tools/k8s/node_modules (override the folder with
// ECO=DIR or K8S_TOOLS_DIR=DIR; NODE_PATH also works). Exit status: 0 clean,
// 1 problems found, 2 usage or tooling error.

import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const toolsDir = path.resolve(process.env.ECO || process.env.K8S_TOOLS_DIR || path.join(here, 'k8s'));
const requireTools = createRequire(path.join(toolsDir, 'package.json'));
const requireHere = createRequire(import.meta.url); // honours NODE_PATH

function load(name) {
  try {
    return requireTools(name);
  } catch (e1) {
    if (e1.code !== 'MODULE_NOT_FOUND' && e1.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw e1;
    return requireHere(name);
  }
}

function die(msg) {
  console.error(`k8s-validate: ${msg}`);
  process.exit(2);
}

// Custom resources: the API group -> the npm package of the same
// kubernetes-models family that carries its CRD schemas (generated from the
// CRDs' openAPIV3Schema).
const CRD_PACKAGES = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

let YAML;
try {
  YAML = load('yaml');
  load('kubernetes-models');
  for (const pkg of Object.values(CRD_PACKAGES)) load(`${pkg}/package.json`);
} catch (e) {
  die(`cannot load npm modules from ${toolsDir}/node_modules (${e.message.split('\n')[0]}); run: npm --prefix tools/k8s ci`);
}

// ---------------------------------------------------------------- parsing

// Parses a multi-document YAML file strictly (duplicate keys are errors).
// Returns [{doc, index}] and pushes parse problems to `problems`.
function readObjects(file, problems) {
  const text = fs.readFileSync(file, 'utf8');
  const docs = YAML.parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
  const out = [];
  docs.forEach((d, i) => {
    for (const e of d.errors) problems.push(`${file}: document ${i + 1}: YAML: ${e.message}`);
    if (d.errors.length) return;
    const obj = d.toJS({ maxAliasCount: 100 });
    if (obj == null) return;
    if (typeof obj !== 'object' || Array.isArray(obj)) {
      problems.push(`${file}: document ${i + 1}: not a Kubernetes object`);
      return;
    }
    if (typeof obj.kind === 'string' && obj.kind.endsWith('List') && Array.isArray(obj.items)) {
      obj.items.forEach((it, j) => out.push({ obj: it, where: `document ${i + 1} item ${j + 1}` }));
    } else {
      out.push({ obj, where: `document ${i + 1}` });
    }
  });
  return out;
}

const describe = (o) => `${o?.kind ?? '?'}/${o?.metadata?.name ?? '?'}`;

// ---------------------------------------------------------------- schema


function modelClass(apiVersion, kind) {
  // "v1" -> kubernetes-models/v1, "apps/v1" -> kubernetes-models/apps/v1,
  // "networking.k8s.io/v1" -> kubernetes-models/networking.k8s.io/v1,
  // "monitoring.coreos.com/v1" -> @kubernetes-models/prometheus-operator/monitoring.coreos.com/v1
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  const pkg = CRD_PACKAGES[group] ?? 'kubernetes-models';
  let mod;
  try {
    mod = load(`${pkg}/${apiVersion}`);
  } catch {
    return null;
  }
  const cls = mod[kind];
  return typeof cls === 'function' && cls.kind === kind && cls.apiVersion === apiVersion ? cls : null;
}

function validateSchema(file, where, obj, problems) {
  const id = `${file}: ${describe(obj)} (${where})`;
  if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
    problems.push(`${id}: apiVersion and kind are required strings`);
    return;
  }
  if (typeof obj.metadata?.name !== 'string' || obj.metadata.name === '') {
    problems.push(`${id}: metadata.name is required`);
  }
  const cls = modelClass(obj.apiVersion, obj.kind);
  if (!cls) {
    problems.push(`${id}: no schema for apiVersion "${obj.apiVersion}" kind "${obj.kind}" (typo, removed API version, or a CRD this checker does not know)`);
    return;
  }
  let data = obj;
  if (obj.kind === 'Secret' && obj.data && typeof obj.data === 'object') {
    // kustomize's secretGenerator folds long base64 over several lines; the
    // API server (Go's base64) ignores the newlines, ajv's "byte" format
    // does not. Strip whitespace, then check the result is real base64.
    data = structuredClone(obj);
    for (const [k, v] of Object.entries(data.data)) {
      if (typeof v !== 'string') continue;
      data.data[k] = v.replace(/\s+/g, '');
      if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(data.data[k])) {
        problems.push(`${id}: data.${k} is not valid base64`);
      }
    }
  }
  try {
    new cls(data).validate();
  } catch (e) {
    const errs = Array.isArray(e.errors) && e.errors.length ? e.errors : null;
    if (!errs) {
      problems.push(`${id}: ${e.message}`);
      return;
    }
    for (const er of errs) {
      const at = (er.instancePath || '').replace(/^\//, '').replace(/\//g, '.') || '(root)';
      const extra = er.params && er.keyword === 'enum' ? ` ${JSON.stringify(er.params.allowedValues)}` : '';
      problems.push(`${id}: ${at}: ${er.message}${extra}`);
    }
  }
}

// ------------------------------------------------------------- invariants

const APP = 'workflowd';
const EXTERNAL_SECRET = 'workflowd-secrets'; // created out of band, see k8s/README.md
// Also created out of band, and only ever referenced as optional: Postgres's CA.
const OPTIONAL_EXTERNAL_SECRETS = ['workflowd-postgres-ca'];
const DEV_ONLY_ANNOTATION = 'workflow.example.com/development-only';
const SHUTDOWN_MARGIN_S = 5; // pool close + a slow node, on top of the sum

function duration(s) {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$/.exec(String(s));
  if (!m) return NaN;
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60 }[m[2]];
}

function podTemplates(objs) {
  const kinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);
  return objs.filter((o) => kinds.has(o.kind) && o.spec?.template);
}

const matches = (selector, labels) =>
  selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

function checkInvariants(file, objs, problems) {
  const P = (o, msg) => problems.push(`${file}: ${describe(o)}: ${msg}`);
  const byKind = (k) => objs.filter((o) => o.kind === k);
  const find = (k, name) => objs.find((o) => o.kind === k && o.metadata?.name === name);
  const workloads = podTemplates(objs);
  const isDev = byKind('ConfigMap').some((c) => c.data?.WF_ENV === 'development');

  // Secrets: only development-only generated ones may be in a render.
  for (const s of byKind('Secret')) {
    if (s.metadata?.annotations?.[DEV_ONLY_ANNOTATION] !== 'true') {
      P(s, `Secret objects must not be committed (create them out of band); development-only ones carry the annotation ${DEV_ONLY_ANNOTATION}: "true"`);
    } else if (!isDev) {
      P(s, 'a development-only Secret in a render whose ConfigMap is not WF_ENV=development');
    }
  }

  // References from pod templates.
  for (const w of workloads) {
    const spec = w.spec.template.spec ?? {};
    const labels = w.spec.template.metadata?.labels ?? {};
    // A Job's selector is generated (controller-uid) unless manualSelector.
    const generated = w.kind === 'Job' && w.spec.manualSelector !== true && w.spec.selector === undefined;
    if (!generated && !matches(w.spec.selector?.matchLabels, labels)) P(w, 'spec.selector.matchLabels does not match the pod template labels');
    if (spec.serviceAccountName && !find('ServiceAccount', spec.serviceAccountName)) {
      P(w, `serviceAccountName "${spec.serviceAccountName}" is not in the render`);
    }
    const secretRef = (name, key, where, optional) => {
      const s = find('Secret', name);
      if (!s) {
        const external = name === EXTERNAL_SECRET || (optional === true && OPTIONAL_EXTERNAL_SECRETS.includes(name));
        if (!external) P(w, `${where}: Secret "${name}" is not in the render (only "${EXTERNAL_SECRET}", and ${OPTIONAL_EXTERNAL_SECRETS.map((n) => `"${n}"`).join(', ')} as optional, are created out of band)`);
        return;
      }
      if (key != null && !(key in (s.data ?? {})) && !(key in (s.stringData ?? {}))) P(w, `${where}: Secret "${name}" has no key "${key}"`);
    };
    const configRef = (name, key, where, optional) => {
      const c = find('ConfigMap', name);
      if (!c) {
        if (!optional) P(w, `${where}: ConfigMap "${name}" is not in the render (generator name not rewritten?)`);
        return;
      }
      if (key != null && !(key in (c.data ?? {})) && !optional) P(w, `${where}: ConfigMap "${name}" has no key "${key}"`);
    };
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      for (const ef of c.envFrom ?? []) {
        if (ef.configMapRef) configRef(ef.configMapRef.name, null, `container ${c.name} envFrom`, ef.configMapRef.optional);
        if (ef.secretRef) secretRef(ef.secretRef.name, null, `container ${c.name} envFrom`);
      }
      for (const e of c.env ?? []) {
        const vf = e.valueFrom ?? {};
        if (vf.secretKeyRef) secretRef(vf.secretKeyRef.name, vf.secretKeyRef.key, `container ${c.name} env ${e.name}`);
        if (vf.configMapKeyRef) configRef(vf.configMapKeyRef.name, vf.configMapKeyRef.key, `container ${c.name} env ${e.name}`, vf.configMapKeyRef.optional);
      }
    }
    for (const v of spec.volumes ?? []) {
      if (v.secret) {
        secretRef(v.secret.secretName, null, `volume ${v.name}`, v.secret.optional);
        if (!v.secret.optional) for (const it of v.secret.items ?? []) secretRef(v.secret.secretName, it.key, `volume ${v.name}`);
      }
      if (v.configMap) configRef(v.configMap.name, null, `volume ${v.name}`, v.configMap.optional);
    }
  }

  // Selectors of Services, PDBs and NetworkPolicies must select some pods.
  const templates = workloads.map((w) => w.spec.template.metadata?.labels ?? {});
  for (const s of byKind('Service')) {
    if (s.spec?.selector && !templates.some((l) => matches(s.spec.selector, l))) P(s, 'spec.selector matches no pod template in the render');
    for (const p of s.spec?.ports ?? []) {
      if (p.name === 'grpc' && p.appProtocol !== 'grpc') P(s, `port "grpc" must keep appProtocol: grpc (meshes key on it), found ${JSON.stringify(p.appProtocol)}`);
    }
  }
  for (const k of ['PodDisruptionBudget', 'NetworkPolicy']) {
    for (const o of byKind(k)) {
      const sel = k === 'NetworkPolicy' ? o.spec?.podSelector?.matchLabels : o.spec?.selector?.matchLabels;
      if (!templates.some((l) => matches(sel, l))) P(o, 'selector matches no pod template in the render');
    }
  }
  for (const h of byKind('HorizontalPodAutoscaler')) {
    const t = h.spec?.scaleTargetRef ?? {};
    const target = find(t.kind, t.name);
    if (!target) {
      P(h, `scaleTargetRef ${t.kind}/${t.name} is not in the render`);
      continue;
    }
    const usesCpu = (h.spec.metrics ?? []).some((m) => m.resource?.name === 'cpu');
    const cpuReq = (target.spec.template.spec.containers ?? []).every((c) => c.resources?.requests?.cpu);
    if (usesCpu && !cpuReq) P(h, 'CPU utilisation needs a CPU request on every container of the target');
  }

  // The workflowd Deployment itself.
  const apps = byKind('Deployment').filter((d) => d.spec?.template?.metadata?.labels?.['app.kubernetes.io/name'] === APP);
  if (apps.length !== 1) problems.push(`${file}: expected exactly one Deployment labelled app.kubernetes.io/name=${APP}, found ${apps.length}`);
  for (const d of apps) checkApp(d, objs, P, find);

  // PodMonitors must scrape a named port of the workflowd pods, with the
  // job name the alert rules and the dashboard select.
  const appLabels = apps[0]?.spec.template.metadata?.labels ?? {};
  const appPorts = new Set((apps[0]?.spec.template.spec.containers ?? []).flatMap((c) => (c.ports ?? []).map((p) => p.name)));
  for (const m of byKind('PodMonitor')) {
    if (!matches(m.spec?.selector?.matchLabels, appLabels)) P(m, 'spec.selector.matchLabels does not select the workflowd pods');
    for (const e of m.spec?.podMetricsEndpoints ?? []) {
      if (!appPorts.has(e.port)) P(m, `podMetricsEndpoints port ${JSON.stringify(e.port)} is not a named container port of workflowd`);
    }
    if (appLabels[m.spec?.jobLabel] !== APP) P(m, `jobLabel must name a pod label whose value is "${APP}" (the rules select job="${APP}")`);
  }
  for (const r of byKind('PrometheusRule')) {
    if (!(r.spec?.groups ?? []).some((g) => (g.rules ?? []).length > 0)) P(r, 'no rules');
  }

  // The migration Job runs the Deployment's image with its configuration.
  for (const j of byKind('Job').filter((x) => x.metadata?.name?.startsWith(`${APP}-migrate`))) {
    if (apps.length === 1) checkMigrateJob(j, apps[0], P);
  }
}

function checkMigrateJob(j, d, P) {
  const spec = j.spec.template.spec ?? {};
  const server = (d.spec.template.spec.containers ?? []).find((x) => x.name === APP) ?? {};
  const cs = spec.containers ?? [];
  if (cs.length !== 1) {
    P(j, 'expected exactly one container');
    return;
  }
  const c = cs[0];
  const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  if (c.image !== server.image) P(j, `image ${c.image} must be the Deployment's image ${server.image}`);
  if (!same(c.command, server.command) || !same(c.args, ['migrate'])) P(j, 'must run the image entrypoint with args ["migrate"]');
  if (!same(c.envFrom, server.envFrom)) P(j, 'envFrom must be the Deployment\'s (same ConfigMap)');
  const secretEnv = (x) => (x.env ?? []).filter((e) => e.valueFrom?.secretKeyRef);
  if (!same(secretEnv(c), secretEnv(server))) P(j, 'the Secret references must be the Deployment\'s');
  // The Secret volumes (the API key file, Postgres's CA) and where they are mounted.
  const secretVols = (ps) => (ps.volumes ?? []).filter((v) => v.secret);
  const secretMounts = (x, ps) => (x.volumeMounts ?? []).filter((m) => secretVols(ps).some((v) => v.name === m.name));
  const dspec = d.spec.template.spec;
  if (!same(secretVols(spec), secretVols(dspec))) P(j, 'the Secret volumes must be the Deployment\'s');
  if (!same(secretMounts(c, spec), secretMounts(server, dspec))) P(j, 'the Secret volumes must be mounted where the Deployment mounts them');
  if (!same(spec.securityContext, d.spec.template.spec.securityContext)) P(j, 'pod securityContext must be the Deployment\'s');
  if (!same(c.securityContext, server.securityContext)) P(j, 'container securityContext must be the Deployment\'s');
  if (spec.serviceAccountName !== d.spec.template.spec.serviceAccountName || spec.automountServiceAccountToken !== false) {
    P(j, 'must use the Deployment\'s ServiceAccount without a mounted token');
  }
  if (spec.restartPolicy !== 'Never') P(j, 'restartPolicy must be Never (retries are backoffLimit\'s, with a fresh pod)');
  if (!(Number.isInteger(j.spec.backoffLimit) && j.spec.backoffLimit <= 6)) P(j, 'backoffLimit must be set (at most 6)');
  if (!(j.spec.activeDeadlineSeconds > 0)) P(j, 'activeDeadlineSeconds must be set');
  if (!(j.spec.ttlSecondsAfterFinished > 0)) P(j, 'ttlSecondsAfterFinished must be set: finished Jobs block re-creation under the same name');
  const podLabels = j.spec.template.metadata?.labels ?? {};
  if (matches(d.spec.selector?.matchLabels, podLabels)) P(j, 'its pods must not match the Deployment selector (the Service and PodMonitor would select them)');
}

// The API keys come from a Secret: WF_API_KEYS by secretKeyRef, or the file
// WF_API_KEYS_FILE names in a Secret volume mounted as a folder (a subPath
// mount never sees the Secret change, so the key could not rotate), never
// both (workflowd refuses to start). Development may have neither.
function checkApiKeys(d, c, spec, env, development, P) {
  const keysEnv = (c.env ?? []).find((e) => e.name === 'WF_API_KEYS');
  const fromSecret = keysEnv?.valueFrom?.secretKeyRef !== undefined;
  if ((keysEnv && !fromSecret) || (!keysEnv && env.WF_API_KEYS !== undefined)) {
    P(d, 'WF_API_KEYS must come from a Secret (secretKeyRef), never a literal or ConfigMap');
  }
  const file = env.WF_API_KEYS_FILE ?? '';
  if (file !== '' && (fromSecret || env.WF_API_KEYS)) P(d, 'WF_API_KEYS and WF_API_KEYS_FILE are both set: workflowd refuses to start');
  if (file === '' && !fromSecret && !development) P(d, 'no API keys: WF_API_KEYS_FILE (a Secret volume) or WF_API_KEYS (secretKeyRef) is required outside development');
  if (file === '') return;
  const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(m.mountPath.replace(/\/$/, '') + '/'));
  if (!mount) {
    P(d, `WF_API_KEYS_FILE ${file} is under no volumeMount of the container`);
    return;
  }
  if (mount.subPath || mount.subPathExpr) P(d, `WF_API_KEYS_FILE: the mount ${mount.mountPath} uses subPath, which the kubelet never updates: a key could not rotate without a restart`);
  const vol = (spec.volumes ?? []).find((v) => v.name === mount.name);
  if (!vol?.secret) {
    P(d, `WF_API_KEYS_FILE: the volume ${mount.name} must be a Secret`);
    return;
  }
  if (vol.secret.optional) P(d, `WF_API_KEYS_FILE: the Secret volume ${mount.name} must not be optional`);
  const rel = file.slice(mount.mountPath.replace(/\/$/, '').length + 1);
  if (vol.secret.items && !vol.secret.items.some((i) => i.path === rel)) P(d, `WF_API_KEYS_FILE: the volume ${mount.name} has no item with path ${rel}`);
}

function checkApp(d, objs, P, find) {
  const tpl = d.spec.template;
  const spec = tpl.spec;
  const c = (spec.containers ?? []).find((x) => x.name === APP);
  if (!c) {
    P(d, `no container named "${APP}"`);
    return;
  }
  const ports = Object.fromEntries((c.ports ?? []).map((p) => [p.name, p.containerPort]));
  if (ports.grpc !== 50051) P(d, 'container port "grpc" must be 50051');
  if (ports['http-metrics'] !== 9090) P(d, 'container port "http-metrics" must be 9090');

  // Probes: native gRPC on the numeric gRPC port, liveness != readiness.
  const want = { startupProbe: null, livenessProbe: 'liveness', readinessProbe: 'readiness' };
  for (const [name, service] of Object.entries(want)) {
    const p = c[name];
    if (!p) {
      P(d, `${name} is missing`);
      continue;
    }
    if (!p.grpc) {
      P(d, `${name} must be a native grpc probe`);
      continue;
    }
    if (p.grpc.port !== ports.grpc) P(d, `${name}.grpc.port must be the gRPC port ${ports.grpc} (numeric)`);
    if (service && p.grpc.service !== service) P(d, `${name}.grpc.service must be "${service}", found ${JSON.stringify(p.grpc.service)}`);
    if (!service && !['liveness', 'readiness'].includes(p.grpc.service)) P(d, `${name}.grpc.service must be "liveness" or "readiness"`);
  }

  // Environment as the server will see it.
  const env = {};
  for (const ef of c.envFrom ?? []) {
    const cm = ef.configMapRef && find('ConfigMap', ef.configMapRef.name);
    if (cm) Object.assign(env, Object.fromEntries(Object.entries(cm.data ?? {}).map(([k, v]) => [(ef.prefix ?? '') + k, v])));
  }
  for (const e of c.env ?? []) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.configMapKeyRef) env[e.name] = find('ConfigMap', e.valueFrom.configMapKeyRef.name)?.data?.[e.valueFrom.configMapKeyRef.key];
    else if (e.valueFrom) env[e.name] = '<from ' + Object.keys(e.valueFrom)[0] + '>';
  }
  if (!(c.env ?? []).find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef) {
    P(d, 'DATABASE_URL must come from a Secret (secretKeyRef), never a literal or ConfigMap');
  }
  const intEnv = (k, dflt) => {
    if (env[k] === undefined) return dflt;
    if (!/^[0-9]+$/.test(env[k])) {
      P(d, `${k}=${JSON.stringify(env[k])} is not an integer`);
      return dflt;
    }
    return Number(env[k]);
  };
  const development = env.WF_ENV === 'development';
  checkApiKeys(d, c, spec, env, development, P);
  const drain = intEnv('WF_DRAIN_SECONDS', development ? 0 : 5);
  const grace = intEnv('WF_GRACE_SECONDS', 10);
  const metricsPort = /:([0-9]+)$/.exec(env.WF_METRICS_ADDR ?? '')?.[1];
  if (Number(metricsPort) !== ports['http-metrics']) P(d, `WF_METRICS_ADDR (${env.WF_METRICS_ADDR}) must listen on the http-metrics port ${ports['http-metrics']}`);
  const addrPort = /:([0-9]+)$/.exec(env.WF_ADDR ?? '0.0.0.0:50051')?.[1];
  if (Number(addrPort) !== ports.grpc) P(d, `WF_ADDR (${env.WF_ADDR}) must listen on the grpc port ${ports.grpc}`);

  // Shutdown budget: preStop + drain + grace + margin <= grace period.
  const pre = c.lifecycle?.preStop;
  let preStop = 0;
  if (pre?.sleep) preStop = Number(pre.sleep.seconds);
  else if (pre?.exec) preStop = Number((pre.exec.command ?? []).join(' ').match(/sleep\s+([0-9]+)/)?.[1] ?? NaN);
  if (!pre) P(d, 'lifecycle.preStop (sleep) is missing: endpoints removal races SIGTERM');
  else if (!(preStop > 0)) P(d, 'lifecycle.preStop must be a sleep of N seconds');
  const tgps = spec.terminationGracePeriodSeconds ?? 30;
  const appShutdown = preStop + drain + grace;
  if (appShutdown + SHUTDOWN_MARGIN_S > tgps) {
    P(d, `shutdown budget: preStop ${preStop} + WF_DRAIN_SECONDS ${drain} + WF_GRACE_SECONDS ${grace} + margin ${SHUTDOWN_MARGIN_S} = ${appShutdown + SHUTDOWN_MARGIN_S} s exceeds terminationGracePeriodSeconds ${tgps}`);
  }
  const ann = tpl.metadata?.annotations ?? {};
  const proxyStays = (label, secs) => {
    if (Number.isNaN(secs)) P(d, `${label}: not a duration`);
    else if (secs < appShutdown || secs > tgps) P(d, `${label} = ${secs} s must cover workflowd's shutdown (${appShutdown} s) and fit in terminationGracePeriodSeconds (${tgps} s)`);
  };
  if (ann['proxy.istio.io/config'] !== undefined) {
    let pc;
    try {
      pc = YAML.parse(ann['proxy.istio.io/config']);
    } catch (e) {
      P(d, `proxy.istio.io/config is not YAML/JSON: ${e.message}`);
    }
    if (pc) {
      if (pc.holdApplicationUntilProxyStarts !== true) P(d, 'proxy.istio.io/config: holdApplicationUntilProxyStarts must be true');
      proxyStays('Istio terminationDrainDuration', duration(pc.terminationDrainDuration ?? '5s'));
    }
    if (tpl.metadata?.labels?.['sidecar.istio.io/inject'] !== 'true') P(d, 'Istio overlay: pod label sidecar.istio.io/inject: "true" is missing');
  }
  if (ann['linkerd.io/inject'] !== undefined) {
    if (ann['linkerd.io/inject'] !== 'enabled') P(d, 'linkerd.io/inject must be "enabled"');
    const native = ann['config.beta.linkerd.io/proxy-enable-native-sidecar'] === 'true';
    if (!native) proxyStays('Linkerd proxy-wait-before-exit-seconds', Number(ann['config.alpha.linkerd.io/proxy-wait-before-exit-seconds'] ?? 0));
  }

  // Security context (pod level or container level).
  const psc = spec.securityContext ?? {};
  const csc = c.securityContext ?? {};
  const eff = (k) => (csc[k] !== undefined ? csc[k] : psc[k]);
  if (eff('runAsNonRoot') !== true) P(d, 'runAsNonRoot must be true');
  if (eff('runAsUser') !== 10001 || eff('runAsGroup') !== 10001) P(d, 'runAsUser/runAsGroup must be 10001 (the image user)');
  if ((eff('seccompProfile') ?? {}).type !== 'RuntimeDefault') P(d, 'seccompProfile must be RuntimeDefault');
  if (csc.readOnlyRootFilesystem !== true) P(d, 'readOnlyRootFilesystem must be true');
  if (csc.allowPrivilegeEscalation !== false) P(d, 'allowPrivilegeEscalation must be false');
  if (!(csc.capabilities?.drop ?? []).includes('ALL')) P(d, 'capabilities.drop must contain ALL');
  if (spec.automountServiceAccountToken !== false) P(d, 'automountServiceAccountToken must be false');
  const tmpVol = (c.volumeMounts ?? []).find((m) => m.mountPath === '/tmp');
  if (!tmpVol || !(spec.volumes ?? []).some((v) => v.name === tmpVol.name && v.emptyDir)) P(d, '/tmp must be an emptyDir (read-only root file system)');

  // Resources.
  const r = c.resources ?? {};
  if (!r.requests?.cpu || !r.requests?.memory) P(d, 'resources.requests.cpu and .memory are required');
  if (!r.limits?.memory) P(d, 'resources.limits.memory is required');

  // Rollout.
  const ru = d.spec.strategy?.rollingUpdate ?? {};
  if (d.spec.strategy?.type !== 'RollingUpdate' || ru.maxUnavailable !== 0) P(d, 'strategy must be RollingUpdate with maxUnavailable: 0');
}

// ------------------------------------------------------------------- main

const args = process.argv.slice(2);
const invariants = args.includes('--invariants');
const files = args.filter((a) => !a.startsWith('--'));
if (args.some((a) => a.startsWith('--') && a !== '--invariants') || files.length === 0) {
  console.error('usage: node tools/k8s-validate.mjs [--invariants] FILE.yaml...');
  process.exit(2);
}

let total = 0;
let nobj = 0;
for (const file of files) {
  const problems = [];
  let objs;
  try {
    objs = readObjects(file, problems);
  } catch (e) {
    die(`${file}: ${e.message}`);
  }
  if (objs.length === 0 && problems.length === 0) problems.push(`${file}: no Kubernetes objects`);
  for (const { obj, where } of objs) validateSchema(file, where, obj, problems);
  if (invariants && problems.length === 0) checkInvariants(file, objs.map((x) => x.obj), problems);
  for (const p of problems) console.error(`ERROR ${p}`);
  console.log(`k8s-validate: ${file}: ${objs.length} objects, ${problems.length} problem(s)${invariants ? ' (schema + invariants)' : ' (schema)'}`);
  total += problems.length;
  nobj += objs.length;
}
process.exit(total ? 1 : 0);
