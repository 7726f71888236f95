// workflowd through a Node client of default settings: @grpc/grpc-js with
// the contract loaded by @grpc/proto-loader and no channel option, so that
// it receives at most 4 MiB in one message, as every gRPC client library
// does unless told otherwise. A team that generates its client from the
// .proto and keeps the defaults must be able to read every answer:
//
// * ActivateJobs{max_jobs: 4} over four jobs of 3 MiB of variables answers
//   what the client can read (one job at a time), every job comes in some
//   answer, and no job stays leased to nobody;
// * an instance at the variables bound (WF_MAX_VARIABLES_BYTES' default,
//   one byte more is refused) is readable with GetInstance beside its job,
//   and its job's activation too;
// * a ListInstances page of roots of 3 MiB each is readable, and its token
//   leads to the rest.
//
//   node default_client_test.js --server WORKFLOWD --proto PROTO_DIR
//        --work WORKDIR --store memory|pg
//
// The server is a workflowd of its own on 127.0.0.1 and a free port (never
// 50051), on the memory store or on Postgres (WF_TEST_PG_DSN; exit 77,
// skipped, without it); its log is WORKDIR/workflowd.log.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const { sanitizerEnv, freePort, timeScale } = require("../support/wf_testkit.js");

function arg(name) {
  const i = process.argv.indexOf("--" + name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error("missing --" + name);
  return process.argv[i + 1];
}
const SERVER = arg("server"), PROTO = arg("proto"), WORK = arg("work"), STORE = arg("store");
const DSN = process.env.WF_TEST_PG_DSN || "";
if (STORE === "pg" && DSN === "") {
  console.log("skipped: WF_TEST_PG_DSN is not set (./test.sh sets it)");
  process.exit(77);
}
fs.mkdirSync(WORK, { recursive: true });

const MIB = 1024 * 1024;
// WF_MAX_VARIABLES_BYTES' default: 4 MiB answers less an eighth.
const VARIABLES_BOUND = 3.5 * MIB;
// Keys of their own per run: a Postgres database keeps rows.
const RUN = Date.now().toString(36) + "-" + process.pid;

const SCALE = timeScale(SERVER);
const RPC_MS = 20000 * SCALE;

const loadOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const wfPkg = grpc.loadPackageDefinition(
  protoLoader.loadSync("workflow/v1/workflow.proto", { ...loadOptions, includeDirs: [PROTO] }));
const healthPkg = grpc.loadPackageDefinition(protoLoader.loadSync(
  "grpc/health/v1/health.proto", { ...loadOptions, includeDirs: ["/usr/share/grpc-proto"] }));

let srv, client, health, target;

// Of the caller's environment only PATH and the sanitizers' options reach
// the server.
function serverEnv(addr) {
  const env = { ...sanitizerEnv(), PATH: process.env.PATH, WF_ENV: "development", WF_ADDR: addr,
                WF_LOG_LEVEL: "warn", WF_DRAIN_SECONDS: "0" };
  if (STORE === "pg") env.DATABASE_URL = DSN;
  return env;
}

function unary(stub, method, req, actor) {
  const md = new grpc.Metadata();
  if (actor) md.set("x-actor-id", actor);
  return new Promise((resolve, reject) => {
    stub[method](req, md, { deadline: Date.now() + RPC_MS }, (err, resp) => {
      if (err) reject(err); else resolve(resp);
    });
  });
}
const call = (method, req, actor = "node") => unary(client, method, req, actor);

// Health.Check("") SERVING, polled until the deadline (the server exiting
// fails at once).
async function waitServing(proc, ms) {
  const end = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null) throw new Error("workflowd exited with " + proc.exitCode);
    try {
      const r = await unary(health, "Check", { service: "" });
      if (r.status === "SERVING") return;
    } catch (e) {
      if (Date.now() > end) throw e;
    }
    if (Date.now() > end) throw new Error("workflowd did not answer SERVING");
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  target = "127.0.0.1:" + (await freePort());
  const log = fs.openSync(path.join(WORK, "workflowd.log"), "w");
  srv = spawn(SERVER, [], { env: serverEnv(target), stdio: ["ignore", log, log] });
  fs.closeSync(log);
  // No channel option: the default receive limit of 4 MiB.
  client = new wfPkg.workflow.v1.WorkflowService(target, grpc.credentials.createInsecure());
  health = new healthPkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
  await waitServing(srv, 30000 * SCALE);
});

after(async () => {
  if (client) client.close();
  if (health) health.close();
  if (srv && srv.exitCode === null) {
    const exited = new Promise((resolve) => srv.on("exit", resolve));
    srv.kill("SIGKILL");
    await exited;
  }
});

// {"doc":"xxx…"} of exactly bytes bytes of JSON text.
function blob(bytes) {
  return '{"doc":"' + "x".repeat(bytes - 10) + '"}';
}

async function deployJobNet(key, jobType) {
  await call("DeployDefinition", { definition: {
    key, kind: "DEFINITION_KIND_NET",
    places: [{ id: "s", kind: "PLACE_KIND_START" }, { id: "e", kind: "PLACE_KIND_END" }],
    transitions: [{ id: "work", trigger: "TRIGGER_AUTO", job_type: jobType }],
    arcs: [{ source: "s", target: "work" }, { source: "work", target: "e" }],
  } });
}

async function start(key, variables) {
  const r = await call("StartInstance", { definition_key: key, variables_json: variables });
  return r.instance.id;
}

function activate(jobType, maxJobs) {
  return call("ActivateJobs", { job_type: jobType, worker: "node", max_jobs: maxJobs });
}

test("ActivateJobs{max_jobs: 4} over four jobs of 3 MiB: readable answers, no job leased to nobody",
     async () => {
  const key = "node-big-jobs-" + RUN, type = "node-big-" + RUN;
  await deployJobNet(key, type);
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push(await start(key, blob(3 * MIB)));
  const received = new Map(); // instance id -> job key
  for (let calls = 0; calls < 8 && received.size < 4; calls++) {
    const r = await activate(type, 4); // a refused answer throws RESOURCE_EXHAUSTED here
    assert.ok(r.jobs.length >= 1, "call " + calls + " leased no job though " +
              (4 - received.size) + " wait");
    for (const j of r.jobs) {
      assert.equal(j.variables_json.length, 3 * MIB, "a job's variables");
      assert.ok(!received.has(j.instance_id), "job of " + j.instance_id + " received twice");
      received.set(j.instance_id, j.key);
    }
  }
  assert.deepEqual([...received.keys()].sort(), [...ids].sort());
  assert.equal((await activate(type, 4)).jobs.length, 0);
  // Each job is leased under the key this client received: none was
  // leased in an answer that did not arrive.
  for (const id of ids) {
    const g = await call("GetInstance", { instance_id: id });
    assert.equal(g.jobs.length, 1);
    assert.equal(g.jobs[0].key, received.get(id));
    await call("CompleteJob", { job_key: received.get(id) });
  }
});

test("an instance at the variables bound: GetInstance beside its job, and its activation",
     async () => {
  const key = "node-bound-" + RUN, type = "node-bound-job-" + RUN;
  await deployJobNet(key, type);
  // One byte more is refused (VARIABLES_TOO_LARGE, whose message names
  // the bound; the Python suite reads the reason of the status details).
  await assert.rejects(start(key, blob(VARIABLES_BOUND + 1)), (e) =>
    e.code === grpc.status.RESOURCE_EXHAUSTED && e.details.includes("more than " + VARIABLES_BOUND)
    || assert.fail("one byte past the bound: " + e));
  const id = await start(key, blob(VARIABLES_BOUND));
  const g = await call("GetInstance", { instance_id: id });
  assert.equal(g.instance.variables_json.length, VARIABLES_BOUND);
  assert.equal(g.instance.variables_omitted, false);
  assert.equal(g.jobs.length, 1);
  assert.equal(g.jobs[0].variables_omitted, true, "the job repeats the variables: left out");
  const r = await activate(type, 4);
  assert.equal(r.jobs.length, 1);
  assert.equal(r.jobs[0].variables_json.length, VARIABLES_BOUND);
  await call("CompleteJob", { job_key: r.jobs[0].key });
});

test("a ListInstances page of roots of 3 MiB is readable and its token leads on", async () => {
  const key = "node-listed-" + RUN;
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await start(key, blob(3 * MIB)));
  const seen = [];
  let token = "";
  for (let page = 0; page < 6; page++) {
    const r = await call("ListInstances", { definition_key: key, started_by: "*",
                                             page_size: 500, page_token: token });
    assert.ok(r.instances.length >= 1, "page " + page + " is empty");
    for (const inst of r.instances) {
      assert.equal(inst.variables_json.length, 3 * MIB);
      seen.push(inst.id);
    }
    token = r.next_page_token;
    if (token === "") break;
  }
  assert.equal(token, "", "the pages did not end");
  assert.deepEqual(seen.sort(), ids.sort());
});
