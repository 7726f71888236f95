// The web console in a real browser (headless chromium through
// puppeteer-core): a workflowd with an API key, seeded through the gRPC API
// with wfctl; every page opened and saved as a screenshot; Retry clicked on
// an incident and Claim then Complete on a group task, each checked through
// the API; batch operations started only through a preview that states
// how many instances match, with a definition key or the "every instance"
// box, listing the first matches, a destructive action only with its box
// ticked, a refusal keeping what was typed, failures in red; an instance
// page saying what the instance waits for (jobs, timers, awaited signals,
// one line for an empty section); instance lists with the aggregate, an
// incident badge, newest first, and a search by id and by aggregate; a
// signal fanned out to ten instances shown on one's page with its own
// delivery and the fan-out's progress; an instance repaired from its page
// (variables, tokens moved, suspend and resume, a migration planned then
// run, a signal, a cancel), each confirmed first and refused inline;
// a hostile title shown as text; a POST without the CSRF token refused;
// pages without a session sent to /login. Signed in through a trusted
// proxy's identity headers: each role acts within it and is refused (403)
// beyond it, its buttons not shown; headers from an untrusted source
// ignored; a session made on one replica used on another. Over plain HTTP: the
// login throttle, the paths an action sends back to, an unknown batch
// operation's 404.
"use strict";
const { spawn, execFileSync } = require("child_process");
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { sanitizerEnv, freePort } = require("../support/wf_testkit.js");

function arg(name) {
  const i = process.argv.indexOf("--" + name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error("missing --" + name);
  return process.argv[i + 1];
}
const SERVER = arg("server"), WFCTL = arg("wfctl"), WORK = arg("work"), CHROMIUM = arg("chromium");
const STORE = arg("store");
// Definition keys of their own per run: a Postgres database keeps rows.
const RUN = Date.now().toString(36) + "-" + process.pid;
const REVIEW = "console-review-" + RUN, CHARGE = "console-charge-" + RUN;
const WAITJOB = "console-waitjob-" + RUN, WAITSIG = "console-waitsig-" + RUN;
const COMPOSE = "console-compose-" + RUN, PART = "console-part-" + RUN;
const ORDER = "A-" + RUN;
const GROUP = "clerks-" + RUN;
const SHOTS = path.join(WORK, "screenshots");
fs.mkdirSync(SHOTS, { recursive: true });

const KEY = "console-key-" + process.pid;
const HOSTILE = "<img src=x onerror=alert(1)>";
let passed = 0, failed = 0;
function check(cond, what) {
  if (cond) { passed++; console.log("ok   " + what); }
  else { failed++; console.log("FAIL " + what); }
}

let GRPC;
function wf(args, actor, key = KEY) {
  const a = ["--addr", GRPC, "--key", key, "--json"];
  if (actor) a.push("--actor", actor);
  return execFileSync(WFCTL, a.concat(args), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}
function wfJson(args, actor, key) {
  return wf(args, actor, key).trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

async function waitFor(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    try { const v = await fn(); if (v) return v; } catch (e) { if (Date.now() > end) throw e; }
    if (Date.now() > end) throw new Error("timed out: " + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// SIGTERM, then the exit status: 0 (a sanitizer's report would fail it).
function stop(srv, what) {
  return new Promise((resolve) => {
    if (srv.exitCode !== null) {
      check(srv.exitCode === 0, what + " exited 0 (" + srv.exitCode + ")");
      return resolve();
    }
    const t = setTimeout(() => { check(false, what + " stopped within 20 s"); srv.kill("SIGKILL"); resolve(); }, 20000);
    srv.on("exit", (code, sig) => {
      clearTimeout(t);
      check(code === 0, what + " stopped cleanly (exit " + code + (sig ? ", " + sig : "") + ")");
      resolve();
    });
    srv.kill("SIGTERM");
  });
}

// Development without API keys: pages need no login (tenant default), and
// acting needs an actor, named at /login without a key.
async function openAccess() {
  const grpc = "127.0.0.1:" + (await freePort()), port = await freePort();
  const base = "http://127.0.0.1:" + port;
  const srv = spawn(SERVER, [], {
    env: { ...sanitizerEnv(), PATH: process.env.PATH, WF_ENV: "development", WF_ADDR: grpc,
           WF_CONSOLE_ADDR: "127.0.0.1:" + port, WF_LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "ignore"],
  });
  try {
    const res = await waitFor(() => fetch(base + "/instances", { redirect: "manual" }), "open console");
    const body = await res.text();
    check(res.status === 200 && body.includes("name an actor"), "open access: pages without login");
    check(!body.includes('name="csrf"'), "open access: no action form without an actor");
    const login = await (await fetch(base + "/login")).text();
    check(login.includes('name="actor"') && !login.includes('name="tenant"') &&
          !login.includes('name="api_key"'), "open access: the login asks for the actor only");
    const form = { method: "POST", redirect: "manual",
                   headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base } };
    let r = await fetch(base + "/task/claim", { ...form, body: "task_id=x&csrf=" });
    check(r.status === 303 && r.headers.get("location") === "/login",
          "open access: an action without an actor is sent to /login");
    r = await fetch(base + "/login", { ...form, body: "actor=dev" });
    const cookie = r.headers.get("set-cookie") || "";
    check(r.status === 303 && cookie.startsWith("wf_console="), "open access: login with an actor only");
    r = await fetch(base + "/inbox", { headers: { Cookie: cookie.split(";")[0] } });
    check((await r.text()).includes('id="actor">dev<'), "open access: the session acts as the actor");
  } catch (e) {
    failed++;
    console.log("FAIL open access: " + (e && e.stack ? e.stack : e));
  } finally {
    await stop(srv, "workflowd (open access)");
  }
}

// The console's guards over plain HTTP, on a keyed server of its own:
// refused logins of one address are throttled (429 with Retry-After, the
// key not even looked at) and a login resets the count; an action's
// "back" comes back in Location only as a path of the console; an unknown
// batch operation is 404.
async function guards() {
  const grpc = "127.0.0.1:" + (await freePort()), port = await freePort();
  const base = "http://127.0.0.1:" + port;
  const key = "guards-key-" + process.pid;
  const srv = spawn(SERVER, [], {
    env: { ...sanitizerEnv(), PATH: process.env.PATH, WF_ENV: "development", WF_ADDR: grpc,
           WF_CONSOLE_ADDR: "127.0.0.1:" + port, WF_API_KEYS: key, WF_LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "ignore"],
  });
  const form = (body, cookie) => ({
    method: "POST", redirect: "manual", body: new URLSearchParams(body).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base,
               ...(cookie ? { Cookie: cookie } : {}) } });
  const login = (k) => fetch(base + "/login", form({ api_key: k, actor: "ann" }));
  try {
    await waitFor(() => fetch(base + "/login"), "the guards console");
    // Five refusals are free; then each bars the address for 1, 2, 4 s ...
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await login("wrong-" + i)).status);
    check(statuses.every((s) => s === 403), "six wrong keys are refused (" + statuses + ")");
    const waits = [];
    for (let round = 0; round < 2; round++) {
      let r = await login("wrong-again");
      const barred = r.status === 429;
      if (barred) waits.push(Number(r.headers.get("retry-after")));
      // Wait out the bar, then one more refusal doubles it.
      await waitFor(async () => (r = await login("wrong-again")).status !== 429, "the bar ends",
                    70000);
      check(barred && r.status === 403, "round " + round + ": barred (429), then refused (403)");
    }
    let r = await login(key);
    waits.push(Number(r.headers.get("retry-after")));
    check(r.status === 429, "while barred even the right key gets 429 (" + r.status + ")");
    check(waits.length === 3 && waits[0] === 1 && waits[1] >= 1 && waits[1] <= 2 &&
          waits[2] >= 3 && waits[2] <= 4, "Retry-After grows: " + waits);
    await waitFor(async () => (r = await login(key)).status === 303, "the login after the bar", 70000);
    const cookie = (r.headers.get("set-cookie") || "").split(";")[0];
    check(cookie.startsWith("wf_console="), "after the bar the right key logs in");
    check((await login("wrong-after")).status === 403, "a login resets the count: a wrong key is 403");

    // A task of ann's to claim and release, each with a "back".
    const wfk = (args, actor) => execFileSync(WFCTL, ["--addr", grpc, "--key", key, "--json",
      "--actor", actor].concat(args), { encoding: "utf8" }).trim().split("\n").map((l) => JSON.parse(l));
    const parent = wfk(["start", "guards-" + RUN], "ann")[0].instance.id;
    const task = wfk(["assign", "--parent", parent, "--title", "Guards", "--user", "ann"], "ann")[0]
      .tasks[0].id;
    const page = await (await fetch(base + "/batches", { headers: { Cookie: cookie } })).text();
    const csrf = (/name="csrf" value="([0-9a-f]+)"/.exec(page) || [])[1];
    check(csrf, "the CSRF token of the session");
    const acts = ["/task/claim", "/task/release"];
    const backs = [["/\t/evil.example", "/instances"], ["//evil.example", "/instances"],
                   ["/\\evil.example", "/instances"], ["/ok\r\nX-Evil: 1", "/instances"],
                   ["https://evil.example/", "/instances"], ["/x y", "/instances"],
                   ["/instance?id=" + parent, "/instance?id=" + parent]];
    for (let i = 0; i < backs.length; i++) {
      const [back, want] = backs[i];
      const res = await fetch(base + acts[i % 2], form({ csrf, task_id: task, back,
        request_id: "guards-" + RUN + "-" + i }, cookie));
      check(res.status === 303 && res.headers.get("location") === want,
            "back " + JSON.stringify(back) + " comes back as " + res.headers.get("location") +
            " (" + res.status + ")");
    }
    // An unknown batch operation: 404, by its page and by Cancel.
    const unknown = "00000000-0000-7000-8000-00000000beef";
    r = await fetch(base + "/batch?id=" + unknown, { headers: { Cookie: cookie } });
    check(r.status === 404 && (await r.text()).includes("BATCH_OPERATION_NOT_FOUND"),
          "an unknown batch operation's page is 404 (" + r.status + ")");
    r = await fetch(base + "/batch/cancel", form({ csrf, id: unknown, request_id: "guards-c-" + RUN,
                                                  back: "/batches" }, cookie));
    check(r.status === 404, "cancelling an unknown batch operation is 404 (" + r.status + ")");
  } catch (e) {
    failed++;
    console.log("FAIL guards: " + (e && e.stack ? e.stack : e));
  } finally {
    await stop(srv, "workflowd (guards)");
  }
}

// Repairs from an instance page, each through a page stating what it will
// do and a Confirm form (the variables saved at once), acting as the
// session's actor: the variables (checked in the page, then by the
// server, a refusal keeping the typed text), a task's Complete with bad
// JSON, tokens moved, a refused change, suspend and resume, a migration
// planned by its dry run (with problems: no Confirm) then run, a signal,
// and a cancel. Each result is checked through the API, the actor in the
// events, the hostile values as text.
async function repairs(page, BASE) {
  const REPAIR = "console-repair-" + RUN;
  const net = (mid) => ({
    key: REPAIR, kind: "NET", name: "Repair",
    places: [{ id: "start", kind: "START" }, { id: mid, kind: "NORMAL" }, { id: "end", kind: "END" }],
    transitions: [{ id: "approve", name: "Approve", trigger: "USER",
                    assignee: { kind: "GROUP", ids: [GROUP] } },
                  { id: "paid", name: "Paid", trigger: "MSG", signal_name: "paid",
                    correlation: "INSTANCE" }],
    arcs: [{ source: "start", target: "approve" }, { source: "approve", target: mid },
           { source: mid, target: "paid" }, { source: "paid", target: "end" }],
  });
  const deploy = (d, name) => {
    const f = path.join(WORK, name + ".json");
    fs.writeFileSync(f, JSON.stringify(d));
    wf(["deploy", f], "admin");
  };
  deploy(net("mid"), REPAIR);
  const show = (id) => wfJson(["show", id], "ann")[0];
  const statusOf = (id) => (show(id).instance || {}).status;
  const id = wfJson(["start", REPAIR, "--vars", JSON.stringify({ note: HOSTILE })], "admin")[0].instance.id;
  const other = wfJson(["start", REPAIR], "admin")[0].instance.id;
  const url = BASE + "/instance?id=" + encodeURIComponent(id);
  const events = () => page.$$eval("#events tr", (t) => t.slice(1).map((r) => ({
    type: r.children[2].textContent, actor: r.children[4].textContent })));
  const acted = async (type) => (await events()).some((e) => e.type === type && e.actor === "ann");
  // Opens a repair's form on the instance page.
  const open = async (name) => {
    await page.goto(url);
    await page.$eval("#repair-" + name, (d) => { d.open = true; });
  };
  const submit = (name) => Promise.all([page.waitForNavigation(), page.click("button.repair-" + name)]);
  const confirm = () => Promise.all([page.waitForNavigation(), page.click("button.confirm-repair")]);
  const setText = (sel, text) => page.$eval(sel, (e, t) => { e.value = t; }, text);

  // The list: what each does now; it refreshes by itself, but not while a
  // form is being edited.
  await page.goto(BASE + "/instances?definition_key=" + REPAIR);
  const listed = () => page.$$eval("#instances tr", (t) => t.length - 1);
  const nows = await page.$$eval("#instances td.now", (t) => t.map((e) => e.textContent));
  check(nows.length === 2 && nows.every((n) => n === "Approve"),
        "the list shows each instance's enabled transition (" + nows + ")");
  wfJson(["start", REPAIR], "admin");
  await waitFor(async () => (await listed()) === 3, "the list's refresh", 30000);
  check(true, "the list refreshed by itself with a new instance");
  await page.type("input[name=aggregate_type]", "x");
  await page.evaluate(() => { document.body.dataset.refreshSkipped = "0"; });
  wfJson(["start", REPAIR], "admin");
  await waitFor(async () => Number(await page.evaluate(() => document.body.dataset.refreshSkipped)) >= 2,
                "refreshes skipped while editing", 30000);
  check(await listed() === 3 && await page.$eval("input[name=aggregate_type]", (e) => e.value) === "x",
        "no refresh while a form is being edited");

  await page.goto(url);
  check(await page.$("#repair") !== null, "the instance page has a Repair section");
  const typed = await page.$eval("#repair-variables textarea", (e) => e.value);
  check(typed.includes(HOSTILE), "the variables' textarea holds them as text");
  check(await page.$("img[src=x]") === null, "no element from the variables in the Repair section");
  const places = await page.$$eval("#repair-modify select[name=place_id] option", (o) => o.map((e) => e.textContent));
  check(places.join("|") === "start (1 token)|mid (0 tokens)|end (0 tokens)",
        "Move tokens lists the net's places with their tokens (" + places + ")");
  await page.$$eval("details.repair", (d) => d.forEach((e) => { e.open = true; }));
  await page.screenshot({ path: path.join(SHOTS, "instance-repair.png"), fullPage: true });

  // Variables: not JSON is stopped in the page; the server refuses what
  // gets past it, and the page comes back with the text and the reason.
  await open("variables");
  await setText("#repair-variables textarea", "[1]");
  await page.click("button.repair-variables");
  const jsErr = await waitFor(() => page.$eval("#repair-variables .json-error", (e) => e.textContent),
                              "the page's JSON check");
  check(jsErr === "not a JSON object" && new URL(page.url()).pathname === "/instance",
        "the page stops a variables edit that is not an object (" + jsErr + ")");
  const bad = '{"note": "<b>half';
  await setText("#repair-variables textarea", bad);
  let [resp] = await Promise.all([page.waitForNavigation(),
    page.$eval("#repair-variables form", (f) => f.submit())]);
  check(resp.status() === 400, "the server refuses bad JSON (" + resp.status() + ")");
  check(await page.$eval("#refused-variables code.reason", (e) => e.textContent) === "INVALID_JSON",
        "the refusal is shown inline with its reason");
  check(await page.$eval("#repair-variables", (d) => d.open) &&
        await page.$eval("#repair-variables textarea", (e) => e.value) === bad,
        "the refused form is open and keeps the typed text");
  await page.screenshot({ path: path.join(SHOTS, "instance-variables-refused.png"), fullPage: true });
  await setText("#repair-variables textarea", JSON.stringify({ fixed: HOSTILE }));
  await submit("variables");
  check(new URL(page.url()).pathname === "/instance" && JSON.stringify(show(id).instance.variables_json).includes("fixed"),
        "the variables are merged (API)");
  check(await acted("VARIABLES_SET"), "the event of the edit names the actor");

  // CompleteTask with bad JSON: the page again, the text kept, the reason
  // inline (and the page's own check first).
  await page.goto(url);
  await page.type("tr.task input[name=variables_json]", "{bad");
  await page.click("button.complete");
  await waitFor(() => page.$eval("tr.task .json-error", (e) => e.textContent), "the complete check");
  [resp] = await Promise.all([page.waitForNavigation(),
    page.$eval("tr.task form.complete", (f) => f.submit())]);
  check(resp.status() === 400 && new URL(page.url()).pathname === "/task/complete",
        "a Complete with bad JSON is refused (" + resp.status() + ")");
  check(await page.$eval("#complete-refused code.reason", (e) => e.textContent) === "INVALID_JSON" &&
        await page.$eval("tr.task input[name=variables_json]", (e) => e.value) === "{bad",
        "the instance page again: the typed output kept, the reason inline");
  check(statusOf(id) === "RUNNING", "the refused Complete changed nothing");

  // Move the token from start to mid: the confirm page first.
  await open("modify");
  await page.select("#repair-modify select[name=kind]", "TOKEN_OPERATION_KIND_MOVE");
  await page.select("#repair-modify select[name=place_id]", "start");
  await page.select("#repair-modify select[name=to_place_id]", "mid");
  await page.type("#repair-modify input[name=reason]", HOSTILE);
  await submit("modify");
  check(await page.$eval("#repair-fields dd.reason", (e) => e.textContent) === HOSTILE &&
        await page.$("img[src=x]") === null, "the confirm page shows the reason as text");
  check(await page.$eval("#repair-fields dd.actor", (e) => e.textContent) === "ann",
        "the confirm page names who acts");
  check(JSON.stringify(show(id).marking) === JSON.stringify({ start: 1 }),
        "before Confirm nothing changed (API)");
  await page.screenshot({ path: path.join(SHOTS, "repair-confirm.png"), fullPage: true });
  await confirm();
  check(JSON.stringify(show(id).marking) === JSON.stringify({ mid: 1 }), "the token moved to mid (API)");
  check(await acted("INSTANCE_MODIFIED"), "the modification's event names the actor");
  // A change the server refuses: the page again, the form open and kept.
  await open("modify");
  await page.select("#repair-modify select[name=kind]", "TOKEN_OPERATION_KIND_REMOVE");
  await page.select("#repair-modify select[name=place_id]", "start");
  await submit("modify");
  [resp] = await confirm();
  check(resp.status() === 409 &&
        await page.$eval("#refused-modify code.reason", (e) => e.textContent) === "TOKENS_NOT_HELD",
        "a refused change: the reason inline (" + resp.status() + ")");
  check(await page.$eval("#repair-modify select[name=kind]", (e) => e.value) === "TOKEN_OPERATION_KIND_REMOVE",
        "the refused change keeps its operation");

  // Suspend, then resume.
  await open("suspend");
  await submit("suspend");
  check(statusOf(id) === "RUNNING", "Suspend asks first: still RUNNING");
  await confirm();
  check(statusOf(id) === "SUSPENDED", "Suspend: SUSPENDED (API)");
  check(await acted("INSTANCE_SUSPENDED"), "the suspension names the actor");
  await open("resume");
  await submit("resume");
  await confirm();
  check(statusOf(id) === "RUNNING", "Resume: RUNNING (API)");

  // Migrate: version 2 names the place "waiting"; without a mapping the
  // dry run's plan lists the problem and offers no Confirm.
  deploy(net("waiting"), REPAIR + "-v2");
  await open("migrate");
  await submit("migrate");
  const problem = await page.$eval("#migration-problems td.code", (e) => e.textContent);
  check(problem === "UNMAPPED_PLACE" && await page.$("button.confirm-repair") === null,
        "the plan with a problem: its code, no Confirm (" + problem + ")");
  await open("migrate");
  await page.type("#repair-migrate input[name=place_mapping]", "mid=waiting");
  await submit("migrate");
  const moves = await page.$$eval("#migration-tokens tr", (t) => t.slice(1).map((r) =>
    r.children[1].textContent + ">" + r.children[2].textContent));
  check(moves.join() === "mid>waiting", "the plan moves the token from mid to waiting (" + moves + ")");
  check(show(id).instance.definition_version === 1, "the plan changed nothing (API)");
  await page.screenshot({ path: path.join(SHOTS, "repair-migration-plan.png"), fullPage: true });
  await confirm();
  check(show(id).instance.definition_version === 2 &&
        JSON.stringify(show(id).marking) === JSON.stringify({ waiting: 1 }),
        "migrated to version 2, the token in waiting (API)");
  check(await acted("INSTANCE_MIGRATED"), "the migration names the actor");

  // Send the awaited signal, with a hostile payload.
  await open("signal");
  await page.type("#repair-signal input[name=signal_name]", "paid");
  await setText("#repair-signal textarea", JSON.stringify({ paid_by: HOSTILE }));
  await submit("signal");
  check((await page.$eval("#repair-fields dd.payload_json", (e) => e.textContent)).includes(HOSTILE) &&
        await page.$("img[src=x]") === null, "the signal's confirm page shows the payload as text");
  await confirm();
  check(statusOf(id) === "COMPLETED", "the signal completed the instance (API)");
  await page.goto(url);
  check(await page.$("#repair-none") !== null, "an ended instance offers no repair");

  // Cancel the other instance, then a cancel of it again is refused.
  await page.goto(BASE + "/instance?id=" + encodeURIComponent(other));
  await page.$eval("#repair-cancel", (d) => { d.open = true; });
  await page.type("#repair-cancel input[name=reason]", "console repair");
  await Promise.all([page.waitForNavigation(), page.click("button.repair-cancel")]);
  const statement = await page.$eval("#repair-statement", (e) => e.textContent);
  check(statement.includes("cannot be undone") && statusOf(other) === "RUNNING",
        "Cancel states what it does and waits for Confirm");
  const again = await page.evaluate(async () => {
    const fd = new URLSearchParams(new FormData(document.querySelector("form.confirm")));
    return fd.toString();
  });
  await confirm();
  check(statusOf(other) === "CANCELLED", "Cancel: CANCELLED (API)");
  await page.goto(BASE + "/instance?id=" + encodeURIComponent(other));
  check(await acted("INSTANCE_CANCELLED"), "the cancel names the actor");
  const replay = await page.evaluate(async (body) => {
    const fd = new URLSearchParams(body);
    fd.set("request_id", "again-" + Date.now());
    const r = await fetch(location.pathname.replace("/instance", "/instance/cancel") + location.search,
                          { method: "POST", body: fd });
    return { status: r.status, text: await r.text() };
  }, again);
  check(replay.status === 409 && replay.text.includes("INSTANCE_NOT_RUNNING") &&
        replay.text.includes('id="refusal"'), "cancelling an ended instance is refused (" + replay.status + ")");
}

// Sign-in through a trusted proxy, as oauth2-proxy passes the person's
// identity headers, roles from groups, and sessions across replicas: two
// servers with one session key (on Postgres, over one database).
async function sso() {
  const secret = "proxy-secret-" + process.pid, key = "sso-key-" + process.pid;
  const sessionKey = "session-key-" + RUN + "-0123456789abcdef0123456789abcdef";
  const viewers = "readers-" + RUN, ops = "ops-" + RUN, admins = "platform-" + RUN;
  const queue = "sso-queue-" + RUN;
  const servers = [];
  const start = async (name) => {
    const grpc = "127.0.0.1:" + (await freePort()), port = await freePort();
    const env = { ...sanitizerEnv(), PATH: process.env.PATH, WF_ENV: "development", WF_ADDR: grpc,
                  WF_CONSOLE_ADDR: "127.0.0.1:" + port, WF_API_KEYS: key + "=acme",
                  WF_EXPR_ISOLATION: "inline", WF_LOG_LEVEL: "error",
                  WF_CONSOLE_SESSION_KEY: sessionKey, WF_CONSOLE_PROXY_SECRET: secret,
                  WF_CONSOLE_PROXY_ADDRS: "127.0.0.1, ::1",
                  WF_CONSOLE_ROLE_MAP: `${viewers}=viewer,${ops}=operator,${admins}=admin`,
                  WF_CONSOLE_GROUP_TENANTS: `${viewers}=acme,${ops}=acme,${admins}=acme` };
    if (STORE === "pg") env.DATABASE_URL = process.env.WF_TEST_PG_DSN;
    const s = { name, grpc, base: "http://127.0.0.1:" + port,
                srv: spawn(SERVER, [], { env, stdio: ["ignore", "ignore", "ignore"] }) };
    servers.push(s);
    await waitFor(() => fetch(s.base + "/login"), name + "'s console", 30000);
    return s;
  };
  const wfs = (s, args, actor) => execFileSync(WFCTL, ["--addr", s.grpc, "--key", key, "--json",
    "--actor", actor].concat(args), { encoding: "utf8" }).trim().split("\n").filter(Boolean)
    .map((l) => JSON.parse(l));
  const claimedBy = (s, id) => { const t = wfs(s, ["task", id], "seed")[0]; const v = t.task || t;
                                 return v.claimedBy || v.claimed_by || ""; };
  const ident = (email, groups, sec = secret) => ({
    "X-Console-Proxy-Secret": sec, "X-Forwarded-User": "someone", "X-Forwarded-Email": email,
    "X-Forwarded-Groups": groups });
  const csrfOf = (html) => (/name="csrf" value="([0-9a-f]+)"/.exec(html) || [])[1];
  const cookieOf = (res) => (res.headers.get("set-cookie") || "").split(";")[0];
  const post = (s, path, body, headers) => fetch(s.base + path, {
    method: "POST", redirect: "manual", body: new URLSearchParams(body).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: s.base, ...headers } });
  let browser;
  try {
    const A = await start("replica A"), B = await start("replica B");
    const parent = wfs(A, ["start", "sso-" + RUN], "seed")[0].instance.id;
    const task = (title) => wfs(A, ["assign", "--parent", parent, "--title", title, "--group", queue],
                                "seed")[0].tasks[0].id;
    const t1 = task("First"), t2 = task("Second"), t3 = task("Third");
    const inbox = "/inbox?group=" + queue;

    // An operator signed in by the proxy: no login, their email (escaped)
    // as the actor, Claim shown and used, no batch form.
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    const page = await browser.newPage();
    let dialogs = 0;
    page.on("dialog", async (d) => { dialogs++; await d.dismiss(); });
    const OPERATOR = "<b>op</b><img src=x onerror=alert(1)>+" + RUN + "@example.com";
    await page.setExtraHTTPHeaders(ident(OPERATOR, "unrelated, " + ops));
    await page.goto(A.base + inbox);
    check(new URL(page.url()).pathname === "/inbox", "sso: the proxy's person needs no login");
    check(await page.$eval("#actor", (e) => e.textContent) === OPERATOR &&
          (await page.$("#actor b, #actor img")) === null,
          "sso: the person's email is shown as text");
    check(await page.$eval("#role", (e) => e.textContent) === "operator", "sso: the role of the group");
    await page.screenshot({ path: path.join(SHOTS, "sso-operator.png"), fullPage: true });
    await Promise.all([page.waitForNavigation(),
                       page.click(`tr[data-task="${t1}"] button.claim`)]);
    check(claimedBy(A, t1) === OPERATOR, "sso: the operator's claim is recorded as their email");
    check(dialogs === 0, "sso: no script ran from the email");
    await page.goto(A.base + "/batches");
    check((await page.$('form[action="/batch/preview"]')) === null,
          "sso: an operator is shown no batch form");
    const opCookie = (await page.cookies()).find((k) => k.name === "wf_console");
    const opHeaders = { ...ident(OPERATOR, ops), Cookie: "wf_console=" + opCookie.value };
    const opCsrf = csrfOf(await (await fetch(A.base + "/batches", { headers: opHeaders })).text());
    let r = await post(A, "/batch/cancel", { csrf: opCsrf, id: parent, back: "/batches" }, opHeaders);
    const refusal = await r.text();
    check(r.status === 403 && refusal.includes("needs the role admin"),
          "sso: an operator's batch cancel is refused with 403 (" + r.status + ")");
    // The repairs by role: an operator may send a signal but not cancel
    // (admin), neither shown nor done; a viewer sees no Repair section.
    await page.goto(A.base + "/instance?id=" + encodeURIComponent(parent));
    check(await page.$("#repair-signal") !== null && await page.$("#repair-cancel") === null &&
          await page.$("#repair-modify") === null && await page.$("#repair-migrate") === null,
          "sso: an operator is shown the signal repair, not the cancel, modify or migrate");
    r = await post(A, "/instance/cancel?id=" + encodeURIComponent(parent),
                   { csrf: opCsrf, instance_id: parent, confirmed: "1", back: "/instances" }, opHeaders);
    check(r.status === 403 && (await r.text()).includes("needs the role admin") &&
          (wfs(A, ["show", parent], "seed")[0].instance || {}).status === "RUNNING",
          "sso: an operator's cancel of an instance is refused with 403 (" + r.status + ")");
    // Neither the confirm page (a POST without confirmed) nor the action
    // itself of an admin's repair is an operator's; a GET acts on nothing.
    for (const [act, form] of [["modify", { op: "MOVE", place: "start", to_place: "mid", count: "1" }],
                               ["migrate", { target_version: "1" }]]) {
      for (const confirmed of [{}, { confirmed: "1" }]) {
        r = await post(A, "/instance/" + act + "?id=" + encodeURIComponent(parent),
                       { csrf: opCsrf, instance_id: parent, back: "/instances", ...form, ...confirmed },
                       opHeaders);
        check(r.status === 403 && (await r.text()).includes("needs the role admin"),
              "sso: an operator's " + act + (confirmed.confirmed ? "" : " confirm page") +
              " is refused with 403 (" + r.status + ")");
      }
      r = await fetch(A.base + "/instance/" + act + "?id=" + encodeURIComponent(parent),
                      { headers: opHeaders, redirect: "manual" });
      check(r.status === 404 || r.status === 405,
            "sso: a GET of /instance/" + act + " acts on nothing (" + r.status + ")");
    }
    check((wfs(A, ["show", parent], "seed")[0].instance || {}).status === "RUNNING",
          "sso: the operator's refused repairs changed nothing");
    r = await fetch(A.base + "/instance?id=" + encodeURIComponent(parent),
                    { headers: ident("viewer@example.com", viewers) });
    check(r.status === 200 && !(await r.text()).includes('id="repair"'),
          "sso: a viewer is shown no Repair section");

    // A viewer sees no Claim, and a claim they post is refused.
    r = await fetch(A.base + inbox, { headers: ident("viewer@example.com", viewers) });
    let html = await r.text();
    const vHeaders = { ...ident("viewer@example.com", viewers), Cookie: cookieOf(r) };
    check(r.status === 200 && html.includes(t2) && !html.includes('class="claim"'),
          "sso: a viewer sees the tasks without Claim");
    r = await post(A, "/task/claim", { csrf: csrfOf(html), task_id: t2, back: inbox }, vHeaders);
    check(r.status === 403 && (await r.text()).includes("needs the role operator"),
          "sso: a viewer's claim is refused with 403 (" + r.status + ")");
    check(claimedBy(A, t2) === "", "sso: the refused claim changed nothing");

    // An admin is shown the batch form; a person of no mapped group is refused.
    r = await fetch(A.base + "/batches", { headers: ident("root@example.com", "x," + admins) });
    check(r.status === 200 && (await r.text()).includes('action="/batch/preview"'),
          "sso: an admin is shown the batch form");
    r = await fetch(A.base + "/instances", { headers: ident("nobody@example.com", "strangers") });
    check(r.status === 403 && (await r.text()).includes("none of your groups"),
          "sso: a person of no mapped group gets 403");

    // Headers from an untrusted source are ignored: a wrong or no secret
    // is sent to the login, and so is the proxy's session without it.
    r = await fetch(A.base + "/instances", { redirect: "manual", headers: ident("x@example.com", admins, "guess") });
    check(r.status === 303 && r.headers.get("location") === "/login" && !r.headers.get("set-cookie"),
          "sso: identity headers with a wrong secret are ignored");
    const noSecret = ident("x@example.com", admins);
    delete noSecret["X-Console-Proxy-Secret"];
    r = await fetch(A.base + "/instances", { redirect: "manual", headers: noSecret });
    check(r.status === 303 && r.headers.get("location") === "/login",
          "sso: identity headers without the secret are ignored");
    r = await fetch(A.base + "/instances", { redirect: "manual",
                                             headers: { Cookie: "wf_console=" + opCookie.value } });
    check(r.status === 303 && r.headers.get("location") === "/login",
          "sso: the proxy's session is not honoured without the proxy");
    await page.setExtraHTTPHeaders(ident(OPERATOR, ops, "guess"));
    await page.goto(A.base + "/instances");
    check(new URL(page.url()).pathname === "/login", "sso: the browser with a wrong secret gets the login");

    // Across replicas: the proxy's session of A is B's too (no new
    // cookie), and a key login on A acts on B with A's CSRF token.
    r = await fetch(B.base + inbox, { headers: opHeaders });
    check(r.status === 200 && !r.headers.get("set-cookie") && csrfOf(await r.text()) === opCsrf,
          "sso: replica B reads A's session and derives its CSRF token");
    r = await post(A, "/login", { api_key: key, actor: "kate" });
    const kate = cookieOf(r);
    check(r.status === 303 && kate.startsWith("wf_console="), "replicas: a key login on A");
    const kCsrf = csrfOf(await (await fetch(A.base + inbox, { headers: { Cookie: kate } })).text());
    html = await (await fetch(B.base + inbox, { headers: { Cookie: kate } })).text();
    check(html.includes('id="actor">kate<') && csrfOf(html) === kCsrf,
          "replicas: B serves A's session (actor, CSRF token)");
    if (STORE === "pg") {
      r = await post(B, "/task/claim", { csrf: kCsrf, task_id: t3, back: inbox }, { Cookie: kate });
      check(r.status === 303 && r.headers.get("location") === inbox,
            "replicas: a claim posted to B with A's session (" + r.status + ")");
      check(claimedBy(A, t3) === "kate", "replicas: the claim made on B is seen on A");
    }
  } catch (e) {
    failed++;
    console.log("FAIL sso: " + (e && e.stack ? e.stack : e));
  } finally {
    if (browser) await browser.close();
    for (const s of servers) await stop(s.srv, "workflowd (" + s.name + ")");
  }
}

async function fleet(page, BASE) {
  const FLEET = "console-fleet-" + RUN, FLEETJOB = "console-fleetjob-" + RUN;
  const d = {
    key: FLEET, kind: "NET", name: "Fleet",
    places: [{ id: "s", kind: "START" }, { id: "mid", name: HOSTILE, kind: "NORMAL" },
             { id: "e", kind: "END" }],
    transitions: [{ id: "work", name: HOSTILE, trigger: "AUTO", jobType: FLEETJOB,
                    retry: { maxAttempts: 1 } },
                  { id: "approve", name: "Approve", trigger: "USER",
                    assignee: { kind: "GROUP", ids: [GROUP] } }],
    arcs: [{ source: "s", target: "work" }, { source: "work", target: "mid" },
           { source: "mid", target: "approve" }, { source: "approve", target: "e" }],
  };
  const f = path.join(WORK, FLEET + ".json");
  fs.writeFileSync(f, JSON.stringify(d));
  wf(["deploy", f], "admin");
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push(wfJson(["start", FLEET], "admin")[0].instance.id);
  // One job done (to mid, approve enabled), one failed for good (an
  // incident at work), one instance cancelled (not counted).
  wf(["jobs", FLEETJOB, "--once", "--wait", "5", "--", "sh", "-c", "cat >/dev/null; echo {}"]);
  try { wf(["jobs", FLEETJOB, "--once", "--wait", "5", "--", "sh", "-c", "exit 100"]); } catch (e) {}
  await waitFor(() => wf(["incidents", "--definition", FLEET]).includes("JOB_FAILED"), "the fleet's incident");
  const show = (id) => wfJson(["show", id], "admin")[0];
  const running = ids.find((id) => { const g = show(id);
                                     return g.instance.status === "RUNNING" && (g.marking || {}).s; });
  wf(["cancel", running, "--reason", "not counted"], "admin");

  // The database's view: the instances not ended (ListInstances), their
  // markings and open tasks (GetInstance), the incidents (ListIncidents).
  const listed = wfJson(["processes", "--started-by", "*", "--key", FLEET, "--state", "open"], "admin")
    .flatMap((o) => o.instances || [o]).map((i) => i.id);
  const live = ids.filter((id) => listed.includes(id));
  const shown = live.map(show);
  const tokens = (place) => shown.reduce((n, g) => n + ((g.marking || {})[place] || 0), 0);
  const holding = (place) => live.filter((id, i) => ((shown[i].marking || {})[place] || 0) > 0).sort();
  const incidents = wfJson(["incidents", "--definition", FLEET], "admin").flatMap((o) => o.incidents || [o]);
  const tasks = (t) => shown.reduce((n, g) => n + (g.tasks || []).filter(
    (k) => k.transition_id === t && (k.status === "OPEN" || k.status === "CLAIMED")).length, 0);

  await page.goto(BASE + "/definition?key=" + FLEET);
  await Promise.all([page.waitForNavigation(), page.click("#fleet-link")]);
  check(new URL(page.url()).pathname === "/fleet", "the definition page links to its fleet");
  const cell = (table, id, at) => page.$eval(
    "#" + table + " td.count[data-at=" + at + "][data-element=\"" + id + "\"]", (e) => e.textContent);
  const liveShown = await page.$eval("#fleet-live", (e) => e.textContent);
  check(Number(liveShown) === live.length && live.length === 3,
        "the fleet counts the instances not ended (" + liveShown + ", listed " + live.length + ")");
  for (const place of ["s", "mid", "e"]) {
    const n = Number(await cell("fleet-places", place, "tokens"));
    check(n === tokens(place), "tokens in " + place + ": " + n + ", GetInstance " + tokens(place));
  }
  const approve = Number(await cell("fleet-transitions", "approve", "enabled"));
  check(approve === tasks("approve") && approve === 1,
        "work enabled at approve: " + approve + ", open tasks " + tasks("approve"));
  const failed = Number(await cell("fleet-transitions", "work", "incidents"));
  check(failed === incidents.length && failed === 1,
        "incidents at work: " + failed + ", ListIncidents " + incidents.length);
  check(await page.$("#fleet-transitions img, #fleet-places img") === null,
        "a hostile name is shown as text on the fleet page");
  check((await page.$eval("#fleet-transitions", (t) => t.textContent)).includes(HOSTILE),
        "the hostile name is there, escaped");
  const svg = await (await fetch(BASE + (await page.$eval("#fleet-diagram", (i) => i.getAttribute("src"))),
                                 { headers: { Cookie: "wf_console=" + (await page.cookies())
                                   .find((k) => k.name === "wf_console").value } })).text();
  check(svg.includes("3 live instances of v1") && svg.includes("1 incident"),
        "the diagram carries the live totals");
  await page.screenshot({ path: path.join(SHOTS, "fleet.png"), fullPage: true });

  // Clicking a count lists the instances there.
  await Promise.all([page.waitForNavigation(),
                     page.click("#fleet-places td.count[data-element=s] a")]);
  check(new URL(page.url()).pathname === "/fleet/instances", "a count links to its instances");
  const there = (await page.$$eval("#fleet-instances a", (a) => a.map((e) => e.textContent))).sort();
  check(JSON.stringify(there) === JSON.stringify(holding("s")),
        "the instances in s are the ones GetInstance shows there (" + there + ")");
  await page.screenshot({ path: path.join(SHOTS, "fleet-instances.png"), fullPage: true });
  await page.goto(BASE + "/fleet/instances?key=" + FLEET + "&version=0&at=incidents&element=work");
  const atWork = await page.$$eval("#fleet-instances a", (a) => a.map((e) => e.textContent));
  check(atWork.length === 1 && atWork[0] === incidents[0].instance_id,
        "the incident at work lists its instance (" + atWork + ")");
  let r = await page.goto(BASE + "/fleet/instances?key=" + FLEET + "&at=bogus&element=s");
  check(r.status() === 400 && (await page.content()).includes("INVALID_ARGUMENT"),
        "an unknown kind is refused (" + r.status() + ")");
  r = await page.goto(BASE + "/fleet?key=" + FLEET + "-none");
  check(r.status() === 404 && (await page.content()).includes("DEFINITION_NOT_FOUND"),
        "the fleet of an unknown key is not found (" + r.status() + ")");
}

async function main() {
  if (STORE === "pg" && !process.env.WF_TEST_PG_DSN) {
    console.log("skipped: WF_TEST_PG_DSN is not set");
    process.exit(77);
  }
  const grpcPort = await freePort(), httpPort = await freePort();
  GRPC = "127.0.0.1:" + grpcPort;
  const BASE = "http://127.0.0.1:" + httpPort;
  const log = fs.openSync(path.join(WORK, "workflowd.log"), "w");
  const env = { ...sanitizerEnv(), PATH: process.env.PATH, WF_ENV: "development", WF_ADDR: GRPC,
                WF_CONSOLE_ADDR: "127.0.0.1:" + httpPort, WF_API_KEYS: KEY + "=acme," + KEY + "-other=other",
                WF_EXPR_ISOLATION: "inline", WF_LOG_LEVEL: "warn" };
  if (STORE === "pg") env.DATABASE_URL = process.env.WF_TEST_PG_DSN;
  const srv = spawn(SERVER, [], {
    env,
    stdio: ["ignore", log, log],
  });
  let browser;
  try {
    await waitFor(() => { wf(["health"]); return true; }, "workflowd health");

    // ---- seed through the API
    const review = {
      key: REVIEW, kind: "NET", name: "Review",
      places: [{ id: "start", kind: "START" }, { id: "end", kind: "END" }],
      transitions: [{ id: "review", name: HOSTILE, trigger: "USER",
                      assignee: { kind: "GROUP", ids: [GROUP] } }],
      arcs: [{ source: "start", target: "review" }, { source: "review", target: "end" }],
    };
    const charge = {
      key: CHARGE, kind: "NET", name: "Charge",
      places: [{ id: "start", kind: "START" }, { id: "end", kind: "END" }],
      transitions: [{ id: "charge", name: "Charge", trigger: "AUTO", jobType: CHARGE,
                      retry: { maxAttempts: 1 } }],
      arcs: [{ source: "start", target: "charge" }, { source: "charge", target: "end" }],
    };
    for (const d of [review, charge]) {
      const f = path.join(WORK, d.key + ".json");
      fs.writeFileSync(f, JSON.stringify(d));
      wf(["deploy", f], "admin");
    }
    const reviewId = wfJson(["start", REVIEW, "--vars", JSON.stringify({ note: HOSTILE })],
                            "admin")[0].instance.id;
    const chargeId = wfJson(["start", CHARGE], "admin")[0].instance.id;
    check(reviewId && chargeId, "seeded two instances");
    // The job fails for good: an incident.
    try { wf(["jobs", CHARGE, "--once", "--wait", "5", "--", "sh", "-c", "exit 100"]); } catch (e) {}
    await waitFor(() => wf(["incidents"]).includes(chargeId), "the incident");
    // Stuck instances: one whose job failed once and waits an hour for its
    // retry, one that awaits a signal by its aggregate with a timeout.
    const steps = [
      { key: WAITJOB, kind: "STEPS", name: "Wait for a job",
        steps: [{ id: "charge", job: { job_type: WAITJOB, lease: "1m" },
                  retry: { max_attempts: 3, initial_backoff: "1h", multiplier: 1, max_backoff: "1h" } }] },
      { key: WAITSIG, kind: "STEPS", name: "Wait for a signal",
        steps: [{ id: "paid", name: "Wait until paid",
                  await_signal: { signal_name: "paid", correlation: "AGGREGATE", timeout: "2d",
                                  on_timeout: "chase" }, next: [{ step: "done" }] },
                { id: "chase", user: { assignee: { kind: "GROUP", ids: [GROUP] } } },
                { id: "done", sleep: { duration: "1s" } }] },
      // A step list calling another, whose job step runs for each item:
      // nobody works PART, so both stay where they are.
      { key: PART, kind: "STEPS", name: "Part",
        steps: [{ id: "pick", name: HOSTILE, job: { job_type: PART },
                  for_each: ".items", for_each_item: "it" }] },
      { key: COMPOSE, kind: "STEPS", name: "Compose",
        steps: [{ id: "part", name: HOSTILE,
                  call: { definition_key: PART, input_expression: "{items: .items}" } }] },
    ];
    for (const d of steps) {
      const f = path.join(WORK, d.key + ".json");
      fs.writeFileSync(f, JSON.stringify(d));
      wf(["deploy", f], "admin");
    }
    const jobId = wfJson(["start", WAITJOB], "admin")[0].instance.id;
    // Started before sigId, which stays the newest.
    const composeId = wfJson(["start", COMPOSE, "--vars", JSON.stringify({ items: [HOSTILE, "b"] })],
                             "admin")[0].instance.id;
    const sigId = wfJson(["start", WAITSIG, "--aggregate", "order:" + ORDER], "admin")[0].instance.id;
    try { wf(["jobs", WAITJOB, "--once", "--wait", "5", "--", "sh", "-c", "echo declined >&2; exit 3"]); } catch (e) {}
    await waitFor(() => JSON.stringify(wfJson(["show", jobId], "admin")).includes("declined"),
                  "the job's failed attempt");

    // ---- the browser
    browser = await puppeteer.launch({
      executablePath: CHROMIUM, headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    const page = await browser.newPage();
    let dialogs = 0;
    page.on("dialog", async (d) => { dialogs++; await d.dismiss(); });
    await page.setViewport({ width: 1280, height: 900 });

    // Without a session: sent to /login.
    let r = await page.goto(BASE + "/instances");
    check(new URL(page.url()).pathname === "/login", "without a key /instances redirects to /login");
    const h = r.headers();
    check((h["content-security-policy"] || "").includes("default-src 'self'"), "CSP header");
    check(h["x-content-type-options"] === "nosniff", "nosniff header");
    await page.screenshot({ path: path.join(SHOTS, "login.png") });

    // A wrong key is refused; the right one logs in.
    await page.type("input[name=api_key]", "wrong");
    await page.type("input[name=actor]", "ann");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    check((await page.content()).includes("not valid"), "a wrong key is refused");
    await page.type("input[name=api_key]", KEY);
    await page.type("input[name=actor]", "ann");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    check(new URL(page.url()).pathname === "/instances", "login leads to /instances");
    const cookies = await page.cookies();
    const c = cookies.find((k) => k.name === "wf_console");
    check(c && c.httpOnly && c.sameSite === "Strict", "session cookie HttpOnly SameSite=Strict");
    check(c && !c.value.includes(KEY), "the cookie does not hold the key");

    // Outside the browser: a cross-site POST (even with the session cookie)
    // and an oversized form are refused.
    const post = (origin, body) => fetch(BASE + "/instance/retry", {
      method: "POST", redirect: "manual", body,
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: origin,
                 Cookie: "wf_console=" + c.value } });
    let res = await post("http://evil.example", "instance_id=" + chargeId);
    check(res.status === 403, "a cross-site POST is refused (" + res.status + ")");
    res = await post(BASE, "instance_id=" + chargeId + "&pad=" + "x".repeat(70000));
    check(res.status === 413, "a form above 64 KiB is refused (" + res.status + ")");
    res = await fetch(BASE + "/instances", { redirect: "manual" });
    check(res.status === 303 && res.headers.get("location") === "/login",
          "a request without a session is sent to /login");

    // Every page, with a screenshot.
    const visit = async (url, name, selector) => {
      const resp = await page.goto(BASE + url);
      check(resp.status() === 200, name + " answers 200");
      if (selector) check((await page.$(selector)) !== null, name + " shows " + selector);
      await page.screenshot({ path: path.join(SHOTS, name + ".png"), fullPage: true });
    };
    await visit("/instances", "instances", "#instances");
    check((await page.content()).includes(reviewId), "instances lists the seeded instance");
    const rowOf = (id) => page.$$eval("#instances tr", (trs, id) => {
      const tr = trs.find((t) => t.textContent.includes(id));
      return tr ? { aggregate: tr.querySelector("td.aggregate").textContent,
                    incident: tr.querySelector("td.status .badge.incident") !== null } : null;
    }, id);
    const firstId = () => page.$eval("#instances tr:nth-child(2) td:first-child", (e) => e.textContent);
    check(await firstId() === sigId, "instances are listed newest first by default");
    await page.goto(BASE + "/instances?order=oldest");
    check(await firstId() !== sigId, "order=oldest lists the oldest first");
    await page.goto(BASE + "/instances");
    let ids;
    let row = await rowOf(chargeId);
    check(row && row.incident, "the failed instance has an incident badge in the list");
    row = await rowOf(reviewId);
    check(row && !row.incident, "a running instance has no incident badge");
    row = await rowOf(sigId);
    check(row && row.aggregate === "order " + ORDER, "the list shows the aggregate (" + (row && row.aggregate) + ")");
    // The incident's code on its badge, the list filtered by it, and what
    // each running instance does now.
    const incidentRow = wfJson(["incidents"], "admin").flatMap((o) => o.incidents || [o])
      .find((i) => i.instance_id === chargeId) || {};
    const badge = await page.$$eval("#instances tr", (trs, id) => {
      const tr = trs.find((t) => t.textContent.includes(id));
      const c = tr && tr.querySelector(".badge.incident .incident-code");
      return c ? c.textContent : null;
    }, chargeId);
    check(badge && badge === incidentRow.code, "the incident badge names its code (" + badge + ")");
    const nowOf = (id) => page.$$eval("#instances tr", (trs, id) => {
      const tr = trs.find((t) => t.textContent.includes(id));
      return tr ? tr.querySelector("td.now").textContent : null;
    }, id);
    const sigNow = await nowOf(sigId);
    check(sigNow && sigNow.includes("Wait until paid"), "the list shows the current step (" + sigNow + ")");
    await visit("/instances?incident_code=" + encodeURIComponent(incidentRow.code) +
                "&definition_key=" + CHARGE, "instances-by-incident", "#instances");
    ids = await page.$$eval("#instances tr td:first-child", (t) => t.map((e) => e.textContent));
    check(ids.length === 1 && ids[0] === chargeId, "the incident code filter finds its instance (" + ids + ")");
    r = await page.goto(BASE + "/instances?incident_code=NO_SUCH_CODE");
    check(r.status() === 400 && (await page.content()).includes("INVALID_ARGUMENT"),
          "an unknown incident code is refused (" + r.status() + ")");
    await page.goto(BASE + "/instances");
    // Finding: by id (one row), by aggregate (one row), an unknown id 404.
    await visit("/instances?id=" + encodeURIComponent(jobId), "instances-by-id", "#instances");
    ids = await page.$$eval("#instances tr td:first-child", (t) => t.map((e) => e.textContent));
    check(ids.length === 1 && ids[0] === jobId, "the search by id finds that instance (" + ids + ")");
    await visit("/instances?started_by=*&aggregate_type=order&aggregate_id=" + encodeURIComponent(ORDER),
                "instances-by-aggregate", "#instances");
    ids = await page.$$eval("#instances tr td:first-child", (t) => t.map((e) => e.textContent));
    check(ids.length === 1 && ids[0] === sigId, "the search by aggregate finds its instance (" + ids + ")");
    r = await page.goto(BASE + "/instances?id=00000000-0000-7000-8000-00000000dead");
    check(r.status() === 404 && (await page.content()).includes("INSTANCE_NOT_FOUND"),
          "an unknown id is not found (" + r.status() + ")");
    // Why is it stuck: the job waiting for its retry.
    await visit("/instance?id=" + encodeURIComponent(jobId), "instance-job", "#jobs");
    const api = wfJson(["show", jobId], "admin")[0];
    const waitingJob = await page.$eval("#waiting-for", (e) => e.textContent);
    check(waitingJob === "Waiting for: job " + WAITJOB, "the job instance waits for its job (" + waitingJob + ")");
    const job = await page.$eval("#jobs tr.job", (tr) => ({
      attempt: tr.querySelector("td.attempt").textContent, state: tr.querySelector("td.state").textContent,
      error: tr.querySelector("td.error").textContent,
      cells: Array.from(tr.querySelectorAll("td")).map((td) => td.textContent) }));
    const apiJob = api.jobs[0];
    check(job.attempt === apiJob.attempt + " / 3", "the job's attempt (" + job.attempt + ")");
    check(job.state === "waiting for its retry", "the job waits for its retry (" + job.state + ")");
    check(job.error.includes("declined"), "the job's last error (" + job.error + ")");
    check(job.cells[4] === apiJob.activatable_at.replace("T", " ").replace(/\.\d+/, "").replace("Z", ""),
          "the job's next retry is the API's (" + job.cells[4] + ")");
    check(await page.$("#timers-none") !== null && await page.$("#timers") === null,
          "no timer: one line, no table");
    check(await page.$("#awaiting-none") !== null && await page.$("#awaiting") === null,
          "no awaited signal: one line, no table");
    // The signal awaited by its aggregate, with its timeout and its timer.
    await visit("/instance?id=" + encodeURIComponent(sigId), "instance-signal", "#awaiting");
    const waitingSig = await page.$eval("#waiting-for", (e) => e.textContent);
    check(/^Waiting for: timer \S+, signal paid$/.test(waitingSig),
          "the signal instance waits for its signal and timeout (" + waitingSig + ")");
    check(await page.$eval("#current-steps", (e) => e.textContent) === "Current step: Wait until paid",
          "the current step by name");
    const aw = await page.$eval("#awaiting tr:nth-child(2)", (tr) => ({
      name: tr.querySelector("td.name").textContent, corr: tr.querySelector("td.correlation").textContent,
      timeout: tr.querySelector("td.timeout").textContent }));
    check(aw.name === "paid" && aw.corr === "AGGREGATE order " + ORDER,
          "the awaited signal: name and correlation (" + aw.name + ", " + aw.corr + ")");
    const due = await page.$eval("#timers td.due", (e) => e.textContent);
    check(aw.timeout === due && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(due),
          "the timeout is the timer's due time (" + aw.timeout + ", " + due + ")");
    check(await page.$("#jobs-none") !== null && await page.$("#jobs") === null,
          "no job: one line, no table");
    const bare = await page.$$eval("section table", (ts) =>
      ts.filter((t) => t.id !== "events" && t.querySelectorAll("tr").length < 2).length);
    check(bare === 0 && await page.$("#tasks-none") !== null && await page.$("#signals-none") !== null,
          "no section of the page is a table of headers alone (" + bare + ")");
    // The wfctl show of the same instance says the same.
    const shownText = execFileSync(WFCTL, ["--addr", GRPC, "--key", KEY, "show", sigId],
                                   { encoding: "utf8" });
    const shownLine = (/waiting for +(.*)/.exec(shownText) || [])[1];
    check(shownLine === waitingSig.replace("Waiting for: ", ""),
          "wfctl show gives the same explanation (" + shownLine + ")");
    await visit("/instances?definition_key=" + REVIEW + "&status=INSTANCE_STATUS_RUNNING",
                "instances-filtered", "#instances");
    const rows = await page.$$eval("#instances tr", (t) => t.length - 1);
    check(rows === 1, "the filters keep one instance (" + rows + ")");
    await visit("/definitions", "definitions", "#definitions");
    await visit("/definition?key=" + REVIEW, "definition", "#versions");
    const drawn = await page.$eval("img.diagram", (i) => i.complete && i.naturalWidth > 0);
    check(drawn, "the definition page shows its diagram");
    const fits = await page.$eval("img.diagram", (i) =>
      i.getBoundingClientRect().width <= document.querySelector("main").clientWidth);
    await page.click("img.diagram");
    check(fits && await page.$eval("img.diagram", (i) => i.classList.contains("zoomed")),
          "the diagram fits the page and a click zooms it");
    // Every transition's trigger details; a step list shown as steps.
    const details = (id) => page.$eval("#transitions tr[data-transition=\"" + id + "\"] ul.details",
                                       (e) => e.textContent);
    const assigned = await details("review");
    check(assigned === "assignee GROUP " + GROUP, "a USER transition's assignee (" + assigned + ")");
    await visit("/definition?key=" + CHARGE, "definition-charge", "#transitions");
    const jobDetails = await details("charge");
    check(jobDetails.includes("job type " + CHARGE) && jobDetails.includes("retry 1 attempt"),
          "an AUTO transition's job type and retry (" + jobDetails + ")");
    await visit("/definition?key=" + WAITSIG, "definition-steps", "#steps");
    const stepRows = await page.$$eval("#steps tr.step", (t) => t.map((r) =>
      r.dataset.step + ":" + r.querySelector("td.kind").textContent + ":" + r.querySelector("td.next").textContent));
    check(stepRows.join("|") === "paid:await:→ done|chase:user:→ done|done:sleep:→ end",
          "the steps in order with their kinds and next rules (" + stepRows.join("|") + ")");
    check(await details(":begin") === "", "a routing transition has no job details");
    const timeout = await details("paid:timeout");
    check(timeout === "delay 2d", "the timeout's delay (" + timeout + ")");
    const awaitDetails = await page.$eval("#steps tr[data-step=paid] ul.details", (e) => e.textContent);
    check(awaitDetails.includes("signal paid (AGGREGATE)") && awaitDetails.includes("timeout 2d") &&
          awaitDetails.includes("on timeout chase"), "the await step's details (" + awaitDetails + ")");
    await visit("/instance?id=" + encodeURIComponent(sigId), "instance-steps", "#steps");
    const current = await page.$$eval("#steps tr.step.current", (t) => t.map((r) => r.dataset.step));
    check(current.join() === "paid", "the instance page highlights its current step (" + current + ")");
    // A step list's call: the calls section links the child, the current
    // step's hostile name is text; the child's page shows its for-each.
    await visit("/instance?id=" + encodeURIComponent(composeId), "instance-call-step", "#calls");
    check(await page.$eval("#current-steps", (e) => e.textContent) === "Current step: " + HOSTILE,
          "the call step's hostile name is shown as text");
    const waitingCall = await page.$eval("#waiting-for", (e) => e.textContent);
    check(waitingCall === "Waiting for: call " + PART + "@1",
          "the call step waits for its child (" + waitingCall + ")");
    const callRow = await page.$eval("#calls tr:nth-child(2)", (tr) => ({
      text: tr.textContent, href: (tr.querySelector("a") || {}).href || "" }));
    check(callRow.text.includes("part") && callRow.text.includes(PART + " v1") &&
          callRow.text.includes("RUNNING") && callRow.href.includes("/instance?id="),
          "the call step's child, linked (" + callRow.text + ")");
    check((await page.$("main img[src=x]")) === null, "no element from the hostile step name");
    await visit(new URL(callRow.href).pathname + new URL(callRow.href).search, "instance-for-each-step",
                "p.for-each");
    const fe = await page.$eval("p.for-each", (e) => e.textContent);
    check(fe.startsWith("For each: pick, 0 of 2 items completed, 2 needed"),
          "the child's for-each step and its progress (" + fe + ")");
    check((await page.$("main img[src=x]")) === null, "no element from the hostile item");
    // The diagram of a definition whose transition name is hostile, opened
    // by itself: an SVG document in which no script ran and no element came
    // from the name.
    r = await page.goto(BASE + "/diagram.svg?key=" + encodeURIComponent(REVIEW));
    check(r.headers()["content-type"] === "image/svg+xml", "the diagram is image/svg+xml");
    check((await r.text()).includes("&lt;img src=x"), "the SVG escapes the hostile name");
    check((await page.$("img")) === null, "no element from the hostile name in the SVG");
    await visit("/instance?id=" + encodeURIComponent(reviewId), "instance", "#events");
    const idrawn = await page.$eval("img.diagram", (i) => i.complete && i.naturalWidth > 0);
    check(idrawn, "the instance page shows its diagram with the marking");
    // The hostile values are text, not elements.
    check((await page.$("img[src=x]")) === null, "no element from a hostile title or variable");
    const varsText = await page.$eval("#variables", (e) => e.textContent);
    check(varsText.includes(HOSTILE), "the hostile variable is shown as text");
    // Tenant isolation: an instance of another tenant is not found.
    const otherDef = path.join(WORK, "other.json");
    fs.writeFileSync(otherDef, JSON.stringify({ key: "console-other-" + RUN, kind: "AD_HOC" }));
    wf(["deploy", otherDef], "admin", KEY + "-other");
    const otherId = wfJson(["start", "console-other-" + RUN], "admin", KEY + "-other")[0].instance.id;
    r = await page.goto(BASE + "/instance?id=" + encodeURIComponent(otherId));
    check(r.status() === 404 && (await page.content()).includes("INSTANCE_NOT_FOUND"),
          "an instance of another tenant is not found (" + r.status() + ")");
    await page.goto(BASE + "/instances");
    check(!(await page.content()).includes(otherId), "the instances page lists only the key's tenant");
    await visit("/incidents", "incidents", "#incidents");
    await visit("/inbox?group=" + GROUP, "inbox", "table.tasks");
    const title = await page.$eval("tr.task td.title", (e) => e.textContent);
    check(title === HOSTILE, "the hostile task title is shown as text");
    check((await page.$("img[src=x]")) === null, "no element created in the inbox");
    check(dialogs === 0, "no dialog opened");

    // A signal fanned out to the ten instances of an order that wait for
    // it: each one's page lists the signal once, with its own delivery and
    // the fan-out's progress; the hostile payload stays text.
    const WAIT = "console-wait-" + RUN, FANOUT_AGG = "order:console-" + RUN;
    const waitDef = {
      key: WAIT, kind: "NET", name: "Wait",
      places: [{ id: "start", kind: "START" }, { id: "end", kind: "END" }],
      transitions: [{ id: "paid", name: "Paid", trigger: "MSG", signal_name: "paid",
                      correlation: "AGGREGATE" }],
      arcs: [{ source: "start", target: "paid" }, { source: "paid", target: "end" }],
    };
    fs.writeFileSync(path.join(WORK, WAIT + ".json"), JSON.stringify(waitDef));
    wf(["deploy", path.join(WORK, WAIT + ".json")], "admin");
    const waiting = [];
    for (let i = 0; i < 10; i++)
      waiting.push(wfJson(["start", WAIT, "--aggregate", FANOUT_AGG], "admin")[0].instance.id);
    wf(["signal", "paid", "--aggregate", FANOUT_AGG, "--payload", JSON.stringify({ note: HOSTILE })]);
    const statusOf = (id) => { const s = wfJson(["show", id], "ann")[0]; return (s.instance || s).status; };
    await waitFor(() => { wf(["tick"]); return waiting.every((id) => statusOf(id) === "COMPLETED"); },
                  "the fan-out's deliveries", 30000);
    await visit("/instance?id=" + encodeURIComponent(waiting[5]), "instance-fanout", "#signals");
    const fan = await page.$$eval("#signals tr", (t) => t.slice(1).map((r) => ({
      consumed: r.children[3].textContent,
      delivery: r.querySelector("td.delivery").textContent,
      fanout: r.querySelector("td.fanout").textContent,
      payload: r.querySelector("code").textContent })));
    check(fan.length === 1, "the instance lists the fanned-out signal once (" + fan.length + ")");
    check(fan.length === 1 && fan[0].delivery.startsWith("DELIVERED 2"),
          "the instance's own delivery: DELIVERED and when (" + (fan[0] || {}).delivery + ")");
    check(fan.length === 1 && fan[0].fanout === "10 instances: 10 delivered, 0 skipped, 0 pending",
          "the fan-out's progress (" + (fan[0] || {}).fanout + ")");
    check(fan.length === 1 && fan[0].consumed === "—",
          "the log row's consumer (the first instance) is not shown as this one's");
    check(fan.length === 1 && fan[0].payload.includes(HOSTILE), "the hostile payload is text");
    check((await page.$("img[src=x]")) === null, "no element from the signal's payload");

    // A POST without the CSRF token: 403 (from the page, so Origin is ours).
    const status = await page.evaluate(async (id) => {
      const res = await fetch("/instance/retry", { method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "instance_id=" + encodeURIComponent(id), redirect: "manual" });
      return res.status;
    }, chargeId);
    check(status === 403, "a POST without the CSRF token is refused (" + status + ")");
    check(wf(["incidents"]).includes(chargeId), "the refused POST changed nothing");

    // Live updates: an instance page receives the events of a new change.
    await page.goto(BASE + "/instance?id=" + encodeURIComponent(reviewId));
    const before = await page.$$eval("#events tr", (t) => t.length);
    wf(["set-vars", reviewId, JSON.stringify({ live: 1 })], "admin");
    await waitFor(async () => (await page.$$eval("#events tr", (t) => t.length)) > before,
                  "a live event row");
    check(true, "the instance page appended a live event");
    await page.screenshot({ path: path.join(SHOTS, "instance-live.png"), fullPage: true });

    // Claim then Complete the group task.
    await page.goto(BASE + "/inbox?group=" + GROUP);
    await Promise.all([page.waitForNavigation(), page.click("button.claim")]);
    const claimed = wf(["tasks", "--group", GROUP, "--state", "claimed"], "ann");
    check(claimed.includes('"claimed_by":"ann"'), "Claim: the task is CLAIMED by ann (API)");
    await page.goto(BASE + "/inbox");
    await page.screenshot({ path: path.join(SHOTS, "inbox-claimed.png"), fullPage: true });
    // Completed from the instance's page, where its one task is.
    await page.goto(BASE + "/instance?id=" + encodeURIComponent(reviewId));
    await page.type("tr.task input[name=variables_json]", '{"approved":true}');
    await Promise.all([page.waitForNavigation(), page.click("button.complete")]);
    const shown = wfJson(["show", reviewId], "ann")[0];
    const inst = shown.instance || shown;
    check(inst.status === "COMPLETED",
          "Complete: the instance COMPLETED (API: " + inst.status + ")");

    // Retry the incident.
    await page.goto(BASE + "/incidents");
    await Promise.all([page.waitForNavigation(), page.click("tr.incident button.retry")]);
    check(!wf(["incidents"]).includes(chargeId),
          "Retry: the incident is resolved (API)");
    await page.screenshot({ path: path.join(SHOTS, "incidents-after-retry.png"), fullPage: true });

    await repairs(page, BASE);
    await fleet(page, BASE);

    // A batch operation started from the console: nothing preselected, a
    // definition key or the "every instance" box required (the server
    // refuses a crafted POST without them), a preview stating how many
    // instances match, then Confirm; with its progress.
    const more = [0, 1].map(() => wfJson(["start", REVIEW], "admin")[0].instance.id);
    await page.goto(BASE + "/batches");
    check(await page.$eval("select[name=action]", (e) => e.value) === "",
          "the batch form preselects no action");
    check(await page.$eval("input[name=started_by]", (e) => e.value) === "",
          "the batch form's starter is empty (the actor), not '*'");
    check(await page.$eval("input[name=every_definition]", (e) => !e.checked),
          "the 'every instance of the tenant' box is not ticked");
    {
      // Without a definition key and without the box: refused by the
      // server (the form's own fields, posted as the browser would).
      const r = await page.evaluate(async () => {
        const f = document.querySelector("form.filters");
        const fd = new URLSearchParams(new FormData(f));
        fd.set("action", "BATCH_ACTION_CANCEL");
        fd.set("started_by", "*");
        fd.set("reason", "kept <reason>");
        const resp = await fetch("/batch/preview", { method: "POST", body: fd });
        return { status: resp.status, text: await resp.text() };
      });
      check(r.status === 400 && r.text.includes("every instance of the tenant"),
            "a batch without a definition key or the box is refused (" + r.status + ")");
      check(r.text.includes('<option value="BATCH_ACTION_CANCEL" selected>') &&
            r.text.includes('name="started_by" value="*"') &&
            r.text.includes('name="reason" value="kept &lt;reason&gt;"'),
            "the refusal keeps what was typed (escaped)");
      // A start that skips the preview is refused too.
      const s2 = await page.evaluate(async (key) => {
        const f = document.querySelector("form.filters");
        const fd = new URLSearchParams(new FormData(f));
        fd.set("action", "BATCH_ACTION_CANCEL");
        fd.set("started_by", "*");
        fd.set("definition_key", key);
        const resp = await fetch("/batch/start", { method: "POST", body: fd });
        return resp.status;
      }, REVIEW);
      check(s2 === 400, "a start without its preview is refused (" + s2 + ")");
      const left = more.filter((id) => (wfJson(["show", id], "ann")[0].instance || {}).status === "RUNNING");
      check(left.length === 2, "the refused batches cancelled nothing (API: " + left.length + " running)");
    }
    await page.select("select[name=action]", "BATCH_ACTION_CANCEL");
    await page.type("input[name=started_by]", "*");
    await page.type("input[name=definition_key]", REVIEW);
    await page.select("select[name=status]", "INSTANCE_STATUS_RUNNING");
    await page.type("input[name=reason]", "console batch");
    await Promise.all([page.waitForNavigation(), page.click("button.preview-batch")]);
    const count = await page.$eval("#batch-count", (e) => e.dataset.total);
    check(count === "2", "the preview states how many instances match (" + count + ")");
    check((await page.$eval("button.confirm-batch", (e) => e.textContent)).includes("2 instances"),
          "the Confirm button names the count");
    const matches = await page.$$eval("#batch-matches tr td:first-child", (t) => t.map((e) => e.textContent));
    check(matches.length === 2 && more.every((id) => matches.includes(id)),
          "the preview lists the matching instances (" + matches.length + ")");
    check(await page.$eval("#batch-filter dd.definition", (e) => e.textContent) === REVIEW,
          "the preview states the filter");
    check(await page.$eval("input[name=understood]", (e) => e.required && !e.checked),
          "a CANCEL asks for its box to be ticked");
    await page.screenshot({ path: path.join(SHOTS, "batch-preview.png"), fullPage: true });
    {
      // The Confirm form posted without the box: refused by the server.
      const r = await page.evaluate(async () => {
        const fd = new URLSearchParams(new FormData(document.querySelector("form.confirm")));
        fd.delete("understood");
        const resp = await fetch("/batch/start", { method: "POST", body: fd });
        return { status: resp.status, text: await resp.text() };
      });
      check(r.status === 400 && r.text.includes("batch-not-confirmed"),
            "a CANCEL without its box ticked is refused (" + r.status + ")");
    }
    for (const id of more) {
      const st = (wfJson(["show", id], "ann")[0].instance || {}).status;
      check(st === "RUNNING", "the preview changed nothing: " + id + " RUNNING (API: " + st + ")");
    }
    // One more matching instance before Confirm: the count confirmed no
    // longer holds, so the preview comes back with the new count.
    const batchesBefore = wfJson(["batch", "list", "--all"], "ann").length;
    more.push(wfJson(["start", REVIEW], "admin")[0].instance.id);
    await page.click("input[name=understood]");
    await Promise.all([page.waitForNavigation(), page.click("button.confirm-batch")]);
    check(await page.$("#batch-count-changed") !== null &&
          await page.$eval("#batch-count", (e) => e.dataset.total) === "3",
          "a changed count shows the preview again (3), nothing started");
    check(wfJson(["batch", "list", "--all"], "ann").length === batchesBefore,
          "no batch was started (API)");
    await page.click("input[name=understood]");
    await Promise.all([page.waitForNavigation(), page.click("button.confirm-batch")]);
    check(new URL(page.url()).pathname === "/batch", "the batch's page after Confirm");
    await waitFor(async () => (await page.$eval("#batch td.state", (e) => e.textContent)) === "COMPLETED",
                  "the batch page shows COMPLETED (reloaded while running)");
    const progress = await page.$eval("#batch span.progress", (e) => e.textContent);
    check(progress === "3 / 3", "the batch page shows its progress (" + progress + ")");
    check(await page.$eval("#batch-filter dd.definition", (e) => e.textContent) === REVIEW &&
          await page.$eval("#batch-filter dd.started-by", (e) => e.textContent) === "*",
          "the batch page shows its filter");
    check(await page.$("#batch-errors-none") !== null && await page.$("#batch progress.failed") === null,
          "no refusal: one line, and the bar is not red");
    await page.screenshot({ path: path.join(SHOTS, "batch.png"), fullPage: true });
    for (const id of more) {
      const st = (wfJson(["show", id], "ann")[0].instance || {}).status;
      check(st === "CANCELLED", "the batch cancelled " + id + " (API: " + st + ")");
    }
    check(wf(["batch", "list"], "ann").includes('"created_by":"ann"'), "the batch is listed (API)");
    // A MIGRATE batch: an instance of version 1 moved to version 2, with a
    // place mapping typed in the form.
    const old = wfJson(["start", REVIEW], "admin")[0].instance.id;
    const v2 = path.join(WORK, REVIEW + "-v2.json");
    fs.writeFileSync(v2, JSON.stringify({ ...review, name: "Review, second version" }));
    wf(["deploy", v2], "admin");
    await page.goto(BASE + "/batches");
    await page.select("select[name=action]", "BATCH_ACTION_MIGRATE");
    await page.type("input[name=started_by]", "*");
    await page.type("input[name=definition_key]", REVIEW);
    await page.select("select[name=status]", "INSTANCE_STATUS_RUNNING");
    await page.type("input[name=target_version]", "2");
    await page.type("input[name=place_mapping]", "start=start,end=end");
    await Promise.all([page.waitForNavigation(), page.click("button.preview-batch")]);
    check(await page.$eval("#batch-count", (e) => e.dataset.total) === "1",
          "the MIGRATE preview counts its one instance");
    await page.click("input[name=understood]");
    await Promise.all([page.waitForNavigation(), page.click("button.confirm-batch")]);
    await waitFor(async () => (await page.$eval("#batch td.state", (e) => e.textContent)) === "COMPLETED",
                  "the MIGRATE batch COMPLETED");
    const moved = (wfJson(["show", old], "ann")[0].instance || {}).definition_version;
    check(moved === 2, "the MIGRATE batch moved the instance to version 2 (API: " + moved + ")");
    // A CANCEL of instances already cancelled is refused by the action for
    // each: the batch page shows "0 done, 3 failed", in red, with the
    // refusals.
    await page.goto(BASE + "/batches");
    await page.select("select[name=action]", "BATCH_ACTION_CANCEL");
    await page.type("input[name=started_by]", "*");
    await page.type("input[name=definition_key]", REVIEW);
    await page.select("select[name=status]", "INSTANCE_STATUS_CANCELLED");
    await Promise.all([page.waitForNavigation(), page.click("button.preview-batch")]);
    await page.click("input[name=understood]");
    await Promise.all([page.waitForNavigation(), page.click("button.confirm-batch")]);
    await waitFor(async () => (await page.$eval("#batch td.state", (e) => e.textContent)) === "COMPLETED",
                  "the failing batch COMPLETED");
    const failedText = await page.$eval("#batch tr.batch", (e) => e.textContent);
    check(await page.$eval("#batch span.failed-count", (e) => e.textContent) === "3 failed" &&
          failedText.includes("0 done") && await page.$("#batch progress.failed") !== null,
          "0 done, 3 failed: the count and the bar in red");
    const refusal = await page.$$eval("#batch-errors tr td", (t) => t.map((e) => e.textContent));
    check(more.includes(refusal[0]) && refusal[1] === "INSTANCE_NOT_RUNNING",
          "the first refusals name the instance and its reason (" + refusal[1] + ")");
    await page.screenshot({ path: path.join(SHOTS, "batch-failed.png"), fullPage: true });
    await page.goto(BASE + "/batches");
    await page.screenshot({ path: path.join(SHOTS, "batches.png"), fullPage: true });

    // At most 4 live event streams at once: the fifth is refused (503).
    await page.goto("about:blank");
    const aborts = [];
    const streams = [];
    for (let i = 0; i < 4; i++) {
      const ac = new AbortController();
      aborts.push(ac);
      streams.push(await fetch(BASE + "/events?instance=" + encodeURIComponent(reviewId),
                               { headers: { Cookie: "wf_console=" + c.value }, signal: ac.signal }));
    }
    check(streams.every((x) => x.status === 200 &&
                         x.headers.get("content-type") === "text/event-stream"),
          "four live event streams are served");
    const fifth = await fetch(BASE + "/events", { headers: { Cookie: "wf_console=" + c.value } });
    check(fifth.status === 503, "a fifth live event stream is refused (" + fifth.status + ")");
    const pageWhile = await fetch(BASE + "/incidents", { headers: { Cookie: "wf_console=" + c.value } });
    check(pageWhile.status === 200, "pages are still served while four streams are open");
    aborts.forEach((ac) => ac.abort());
    await page.goto(BASE + "/incidents");

    // Log out: the session is gone.
    await Promise.all([page.waitForNavigation(), page.click("header form button")]);
    await page.goto(BASE + "/incidents");
    check(new URL(page.url()).pathname === "/login", "after logout pages redirect to /login");
  } catch (e) {
    failed++;
    console.log("FAIL " + (e && e.stack ? e.stack : e));
  } finally {
    if (browser) await browser.close();
    await stop(srv, "workflowd");
  }
  await sso();
  if (STORE === "memory") {
    await openAccess();
    await guards();
  }
  console.log(passed + " passed, " + failed + " failed");
  process.exit(failed === 0 ? 0 : 1);
}
main();
