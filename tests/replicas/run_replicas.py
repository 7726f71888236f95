#!/usr/bin/python3
"""Several workflowd replicas on one Postgres, under faults.

Three workflowd processes share one fresh database (CREATE DATABASE
wf_replicas_<random> on the test cluster, dropped at the end) while client
threads run mixed workflows against them for a bounded time, each call
round-robin over the replicas. During the load:

  * at ~25 % of the run one replica is killed with SIGKILL and started again
    ~3 s later on the same port (a new one if that is taken);
  * at ~55 % Postgres is stopped (pg_ctl stop -m fast) and started again
    (start -w) ~2 s later, through $WF_TEST_PG_CTL.

A call that fails with UNAVAILABLE, DEADLINE_EXCEEDED or a transport error
is sent again, unchanged and with the SAME request_id, to the next replica
(the idempotency contract makes that safe); only final outcomes are
recorded. Workflows:

  referral  StartInstance -> AssignTo USERS [a, b] join ALL with
            on_all_completed USER c -> a and b complete at the same time (on
            different replicas; sometimes after claiming their own task) ->
            exactly one response carries `next` -> c completes it with
            CompleteTask (the root stays open, awaiting the caller) or
            CompleteAndEnd (the root completes);
  claim     a GROUP task claimed by two members at once: exactly one wins,
            the other gets TASK_ALREADY_CLAIMED (and NOT_ASSIGNEE when it
            tries to complete); the winner completes or completes-and-ends;
  net       (when DeployDefinition is implemented) start -> AUTO job done by
            workers (ActivateJobs with a 1 s lease; some workers outlive the
            lease on purpose, so stale keys must be refused) -> a USER task
            racing a 1.5 s TIME transition: completed at once, or right
            around the timer's due time (OK or TASK_NOT_OPEN).

Then a batch operation: BATCH_N AD_HOC instances are started and one
StartBatchOperation SUSPEND covers them all; as soon as a replica's
scheduler holds the batch (batch_operations.lease_owner names its pid) and
has suspended some of them, that replica is killed with SIGKILL and started
again; another replica takes the batch over once its lease
(WF_BATCH_LEASE=2s) has run out. Checked: the batch COMPLETED with
done == total == BATCH_N, every instance SUSPENDED with exactly one
INSTANCE_SUSPENDED event.

Then a for-each of FOREACH_N items whose jobs 8 workers complete on every
replica, one replica SIGKILLed once some items completed and started
again. Checked: the instance COMPLETED, FOREACH_ITEM_COMPLETED exactly once
per item, TRANSITION_FIRED once, the outputs in item order. The same again
with the items as call children: a for-each over a CALL transition whose
children (a payment process of one job each) the workers complete.

Then a signal fanned out to FANOUT_N instances of one aggregate: as soon
as some deliveries are done and others pending, a replica is killed with
SIGKILL and started again; the others take its claimed deliveries over
once their claim (WF_BATCH_LEASE) has run out. Checked: every instance
COMPLETED with exactly one SIGNAL_CONSUMED event, every delivery row
DELIVERED, and a retry of the request id answers the first answer.

Meanwhile SCHED_N schedules fire every SCHED_EVERY seconds from SCHED_FROM
to SCHED_TO seconds into the load (their start_at and end_at), overlap
ALLOW_ALL and a catch-up window of 10 minutes, so that the replica killed
and Postgres restarted fall into the burst of their fire times. Checked
once the replicas are idle: every nominal fire time of every schedule has
exactly one run, STARTED, and exactly one instance carrying that schedule
and fire time; no run or instance outside the window.

Afterwards, with the replicas idle, invariants are checked in SQL (psql)
over the recorded client history (loaded into a table of the scratch
database) and through the API (WatchEvents on every replica):

  * every acknowledged mutation is there: started instances, referrals and
    their tasks, completions (DONE, completed_by = the acknowledged actor),
    claims (one winner per task), CompleteAndEnd (root COMPLETED);
  * no task completed twice (TASK_COMPLETED per task <= 1, one acknowledged
    completer per task); each fired join made exactly one next referral;
  * events: sequences unique and dense 1..N, none left unnumbered;
    WatchEvents(after 0, follow=false) on each replica returns every row
    exactly once in increasing order; every task, instance and state change
    has its event exactly once (TASK_CREATED, TASK_COMPLETED, ...); causal
    order per object (created before completed, ...);
  * no RUNNING instance with nothing pending (no OPEN/CLAIMED task, job,
    timer or subscription in its tree), except AD_HOC roots that never got
    a referral (NOT_STARTED) or whose flow deliberately left them open;
  * net: no job leased twice at once (a lease ends, by expiry or failure,
    before the job is leased again); no request id whose effect committed
    without its record (every JOB_ACTIVATED key is in a recorded
    ActivateJobs response, and every acknowledged ActivateJobs is recorded
    with the keys its worker got);
  * net: no job completed twice, every acknowledged CompleteJob used the
    job's current key (the last JOB_ACTIVATED before JOB_COMPLETED), every
    JOB_LEASE_LOST refusal was justified by a later activation or the
    lease's expiry, no timer
    fired twice or before its due time, no overdue timer left, exactly one
    of review/timeout fired per instance, in agreement with the client.

Skips (exit 77, "skipped: ...") without WF_TEST_PG_DSN or WF_TEST_PG_CTL
(test.sh exports both). Run:

    /usr/bin/python3 tests/replicas/run_replicas.py --server BUILD/server/workflowd \\
        --proto proto --work BUILD/tests/replicas

Prints a summary; exit status 0 = no violation, 1 = violations, 2 = setup
error, 3 = the suite exceeded its time bound. Every process it starts is
killed at the end and Postgres is started again if it was left down.
"""

import argparse
import csv
import io
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import wf_testkit  # noqa: E402  (the Python suites' shared kit)

RPC_TIMEOUT = 5.0      # seconds, one attempt of a unary call
OP_BUDGET = 30.0       # seconds, all attempts of one operation
READY_TIMEOUT = 15.0   # seconds for a replica to answer SERVING
SUITE_TIMEOUT = 210.0  # hard bound of the whole run (ctest allows 400)
KILL_DOWN = 3.0        # seconds a killed replica stays down
PG_DOWN = 2.0          # seconds Postgres stays down
NET_DELAY = 1.5        # seconds, the TIME transition racing the USER task
JOB_LEASE = 1.0        # seconds, the lease workers ask for
API_KEY = "rep-key-5d3f0b7a-secret"
BATCH_N = 300          # instances of the batch-operation scenario
BATCH_LEASE = 2        # seconds, WF_BATCH_LEASE of the replicas
BATCH_BUDGET = 40.0    # seconds for the batch to complete after the kill
FANOUT_N = 600         # instances waiting for the fanned-out signal
FANOUT_CHUNK = 20      # WF_SIGNAL_FANOUT_CHUNK of the replicas
SCHED_N = 200          # schedules firing during the faults
SCHED_EVERY = 2        # seconds between their fire times
SCHED_FROM = 8         # seconds into the load: their first fire time (start_at) ...
SCHED_TO = 24          # ... and their last (end_at)

REF_KEY, CLAIM_KEY, NET_KEY = "rep-referral", "rep-claim", "rep-net"
JOB_TYPE, REVIEWER = "rep-prepare", "net-reviewer"

SC = grpc.StatusCode
TRANSIENT = (SC.UNAVAILABLE, SC.DEADLINE_EXCEEDED, SC.CANCELLED)

OPTS = None
pb = pbg = status_pb2 = error_details_pb2 = health_pb2 = health_grpc = None
STUBS = None  # wf_testkit.generate_stubs' namespace
T0 = time.monotonic()


def say(msg):
    print("[%6.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


# ---------------------------------------------------------------------------
# Stubs (wf_testkit: protoc + grpc_python_plugin into WORK/gen)
# ---------------------------------------------------------------------------


def generate_stubs(proto_dir, work):
    global pb, pbg, status_pb2, error_details_pb2, health_pb2, health_grpc, STUBS
    try:
        STUBS = wf_testkit.generate_stubs(proto_dir, work)
    except RuntimeError as e:
        raise SetupError(str(e))
    pb, pbg = STUBS.wf_pb2, STUBS.wf_grpc
    status_pb2, error_details_pb2 = STUBS.status_pb2, STUBS.error_details_pb2
    health_pb2, health_grpc = STUBS.health_pb2, STUBS.health_grpc


class SetupError(Exception):
    pass


def error_reason(call):
    """ErrorInfo.reason of the grpc-status-details-bin trailer, or None."""
    try:
        md = call.trailing_metadata() or ()
    except Exception:
        return None
    for k, v in md:
        if k == "grpc-status-details-bin":
            st = status_pb2.Status()
            st.ParseFromString(v)
            for d in st.details:
                if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    d.Unpack(info)
                    return info.reason
    return None


def dur(seconds):
    from google.protobuf import duration_pb2
    return duration_pb2.Duration(seconds=int(seconds), nanos=int(round((seconds % 1) * 1e9)))


def ts_seconds(ts):
    return ts.seconds + ts.nanos / 1e9


# ---------------------------------------------------------------------------
# Postgres (psql CLI) and the cluster control command
# ---------------------------------------------------------------------------


def psql(dsn, sql, stdin=None, timeout=60):
    """Rows of one statement (lists of strings; NULL = '')."""
    res = subprocess.run([wf_testkit.psql_path(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\x1f",
                          "-d", dsn, "-c", sql], input=stdin, capture_output=True, text=True,
                         timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError("psql failed (%s): %s" % (sql.strip()[:200], res.stderr.strip()))
    return [line.split("\x1f") for line in res.stdout.splitlines() if line != ""]


def dsn_with_db(dsn, db):
    if urllib.parse.urlsplit(dsn).scheme not in ("postgres", "postgresql"):
        raise SetupError("WF_TEST_PG_DSN must be a postgresql:// URL: %s" % dsn)
    return wf_testkit.dsn_with_db(dsn, db)


def pg_ctl(*args, timeout=90):
    cmd = shlex.split(os.environ["WF_TEST_PG_CTL"]) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def pg_running():
    try:
        return pg_ctl("status", timeout=20).returncode == 0
    except Exception:
        return False


# ---------------------------------------------------------------------------
# Replicas
# ---------------------------------------------------------------------------


free_port = wf_testkit.free_port


def new_channel(port):
    return wf_testkit.new_channel("127.0.0.1:%d" % port)


class Replica:
    """One workflowd process; its client channel survives restarts on the
    same port and is replaced when the port changes."""

    def __init__(self, idx, database_url):
        self.idx = idx
        self.database_url = database_url
        self.lock = threading.Lock()
        self.proc = None
        self.port = None
        self.channel = None
        self.stub = None
        self.gen = 0
        self.channel_port = None
        self.logs = []

    def env(self):
        return wf_testkit.server_env(
            WF_ENV="development", WF_API_KEYS=API_KEY, DATABASE_URL=self.database_url,
            WF_ADDR="127.0.0.1:%d" % self.port, WF_LOG_LEVEL="warn", WF_THREADS="2",
            WF_BATCH_LEASE="%ds" % BATCH_LEASE, WF_SIGNAL_FANOUT_CHUNK=str(FANOUT_CHUNK))

    def start(self, port=None):
        """Starts the process (on `port` when given) and waits for SERVING."""
        for attempt in range(3):
            self.port = port if (port is not None and attempt == 0) else free_port()
            self.gen += 1
            path = os.path.join(OPTS.work, "replica-%d-%d.log" % (self.idx, self.gen))
            self.logs.append(path)
            with open(path, "ab") as log:
                self.proc = subprocess.Popen([OPTS.server], env=self.env(),
                                             stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            if self.wait_ready():
                with self.lock:
                    if self.channel is None or self.channel_port != self.port:
                        old = self.channel
                        self.channel = new_channel(self.port)
                        self.channel_port = self.port
                        self.stub = pbg.WorkflowServiceStub(self.channel)
                        if old is not None:
                            old.close()
                return
            self.kill()
        raise SetupError("replica %d did not become ready; see %s" % (self.idx, self.logs[-1]))

    def wait_ready(self):
        ch = new_channel(self.port)
        try:
            return wf_testkit.wait_serving(STUBS, ch, self.proc, self.port, READY_TIMEOUT)
        finally:
            ch.close()

    def workflow(self):
        with self.lock:
            return self.stub

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        self.kill()
        with self.lock:
            if self.channel is not None:
                self.channel.close()
                self.channel = None


# ---------------------------------------------------------------------------
# Client calls with retries, and the recorded history
# ---------------------------------------------------------------------------

ID_COLS = ("root_id", "instance_id", "task_id", "job_id", "job_key")
HCOLS = ["op", "flow", "rid", "actor", "root_id", "instance_id", "task_id", "job_id",
         "job_key", "code", "reason", "attempts", "t0", "t1", "extra"]


class Result:
    def __init__(self, code, resp=None, reason=None, detail=""):
        self.code, self.resp, self.reason, self.detail = code, resp, reason, detail
        self.attempts = 1
        self.t0 = self.t1 = time.time()

    @property
    def ok(self):
        return self.code == SC.OK

    def name(self):
        return "OK" if self.ok else "%s/%s" % (self.code.name, self.reason)


class Recorder:
    """History rows, per-RPC statistics and client-side violations."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []
        self.stats = {}      # method -> counters
        self.transient = {}  # "CODE/reason" -> count
        self.refusals = {}   # "method CODE/reason" -> count (expected ones)
        self.violations = []
        self.flows = {}
        self.phase = "until the replica restart"
        self.answers = {}    # (phase, replica) -> [attempts, OK answers]

    def row(self, op, flow, res=None, **kw):
        r = dict.fromkeys(HCOLS, "")
        r.update(op=op, flow=flow, **kw)
        if res is not None:
            r.update(code="OK" if res.ok else res.code.name, reason=res.reason or "",
                     attempts=res.attempts, t0=int(res.t0 * 1e6), t1=int(res.t1 * 1e6))
        with self.lock:
            self.rows.append(r)

    def call_done(self, method, res, retries, expected):
        with self.lock:
            s = self.stats.setdefault(method, dict(calls=0, ok=0, refused=0, failed=0,
                                                   retried=0, retries=0))
            s["calls"] += 1
            s["retries"] += retries
            s["retried"] += 1 if retries else 0
            if res.ok:
                s["ok"] += 1
            elif res.reason in expected:
                s["refused"] += 1
                k = "%s %s" % (method, res.reason)
                self.refusals[k] = self.refusals.get(k, 0) + 1
            else:
                s["failed"] += 1

    def answered(self, idx, ok):
        with self.lock:
            a = self.answers.setdefault((self.phase, idx), [0, 0])
            a[0] += 1
            a[1] += 1 if ok else 0

    def transient_seen(self, key):
        with self.lock:
            key = (self.phase, key)
            self.transient[key] = self.transient.get(key, 0) + 1

    def violation(self, msg):
        with self.lock:
            self.violations.append(msg)

    def flow(self, name, outcome):
        with self.lock:
            d = self.flows.setdefault(name, {})
            d[outcome] = d.get(outcome, 0) + 1


REC = Recorder()


class Client:
    """One client thread's view: calls go round-robin over the replicas; a
    transient failure resends the same request to the next replica."""

    def __init__(self, name, replicas):
        self.name = name
        self.replicas = replicas
        self.rr = random.randrange(len(replicas))

    def _next(self):
        rep = self.replicas[self.rr % len(self.replicas)]
        self.rr += 1
        return rep

    @staticmethod
    def _md(actor, rid):
        md = [("x-api-key", API_KEY), ("x-request-id", rid or uuid.uuid4().hex)]
        if actor:
            md.append(("x-actor-id", actor))
        return md

    @staticmethod
    def _result(fn):
        try:
            resp = fn()
            return Result(SC.OK, resp)
        except grpc.RpcError as e:
            return Result(e.code(), reason=error_reason(e), detail=e.details() or "")

    @staticmethod
    def _transient(res):
        if res.code in TRANSIENT:
            return True
        # A transport failure surfaces as INTERNAL/UNKNOWN without the
        # server's ErrorInfo (e.g. RST_STREAM when the peer dies).
        return res.code in (SC.INTERNAL, SC.UNKNOWN) and res.reason is None

    def _attempt(self, method, req, actor, timeout):
        rep = self._next()
        stub = rep.workflow()
        rid = getattr(req, "request_id", "")
        res = self._result(lambda: getattr(stub, method)(
            req, metadata=self._md(actor, rid), timeout=timeout))
        REC.answered(rep.idx, res.ok)
        return res

    def _finish(self, method, req, actor, res, start, t0, timeout, expected):
        """Retries res (if transient) until final; records statistics."""
        retries = 0
        while self._transient(res) and time.monotonic() - start < OP_BUDGET:
            REC.transient_seen("%s/%s" % (res.code.name, res.reason or "transport"))
            retries += 1
            time.sleep(min(0.05 * retries, 0.5) * (0.5 + random.random()))
            res = self._attempt(method, req, actor, timeout)
        res.attempts = retries + 1
        res.t0, res.t1 = t0, time.time()
        REC.call_done(method, res, retries, expected)
        if not res.ok and res.reason not in expected:
            REC.violation("%s by %s failed: %s %r (after %d attempts)"
                          % (method, actor or self.name, res.name(), res.detail, res.attempts))
        return res

    def call(self, method, req, actor=None, expected=(), timeout=RPC_TIMEOUT):
        start, t0 = time.monotonic(), time.time()
        res = self._attempt(method, req, actor, timeout)
        return self._finish(method, req, actor, res, start, t0, timeout, expected)

    def call_together(self, calls):
        """Sends [(method, req, actor, expected)] at the same moment, each to
        another replica, then finishes each (retries one by one)."""
        start, t0 = time.monotonic(), time.time()
        futs = []
        for method, req, actor, expected in calls:
            rep = self._next()
            futs.append((rep, getattr(rep.workflow(), method).future(
                req, metadata=self._md(actor, req.request_id), timeout=RPC_TIMEOUT)))
        out = []
        for (method, req, actor, expected), (rep, fut) in zip(calls, futs):
            res = self._result(fut.result)
            REC.answered(rep.idx, res.ok)
            out.append(self._finish(method, req, actor, res, start, t0, RPC_TIMEOUT, expected))
        return out


def rid():
    return str(uuid.uuid4())


# ---------------------------------------------------------------------------
# Workflows
# ---------------------------------------------------------------------------


def referral_flow(cl, i, n):
    hr, a, b, c = ("ref%d-%s" % (i, r) for r in ("hr", "a", "b", "c"))
    res = cl.call("StartInstance", pb.StartInstanceRequest(
        definition_key=REF_KEY, variables_json=json.dumps({"flow": "%d-%d" % (i, n)}),
        request_id=rid()), hr)
    if not res.ok:
        return REC.flow("referral", "aborted")
    root = res.resp.instance.id
    REC.row("START", "referral", res, actor=hr, root_id=root, instance_id=root)
    req = pb.AssignToRequest(
        parent_instance_id=root, title="check %d-%d" % (i, n),
        assignee=pb.Assignee(kind=pb.ASSIGNEE_KIND_USERS, ids=[a, b]),
        join=pb.JoinPolicy(mode=pb.COMPLETION_MODE_ALL),
        on_all_completed=pb.AssignToRequest(
            title="approve %d-%d" % (i, n),
            assignee=pb.Assignee(kind=pb.ASSIGNEE_KIND_USER, ids=[c])),
        request_id=rid())
    res = cl.call("AssignTo", req, hr)
    if not res.ok:
        return REC.flow("referral", "aborted")
    child = res.resp.instance_id
    tasks = list(res.resp.tasks)
    for t in tasks:
        REC.row("ASSIGN", "referral", res, actor=hr, root_id=root, instance_id=child,
                task_id=t.id, extra=t.assignee_id)
    if [t.assignee_id for t in tasks] != [a, b]:
        REC.violation("AssignTo USERS [%s, %s] returned tasks for %s"
                      % (a, b, [t.assignee_id for t in tasks]))
        return REC.flow("referral", "aborted")
    if random.random() < 0.3:  # a personal task may be claimed by its assignee
        outs = cl.call_together([
            ("ClaimTask", pb.ClaimTaskRequest(task_id=t.id, request_id=rid()), who, ())
            for t, who in zip(tasks, (a, b))])
        for t, who, r in zip(tasks, (a, b), outs):
            REC.row("CLAIM", "referral", r, actor=who, root_id=root, instance_id=child,
                    task_id=t.id)
    outs = cl.call_together([
        ("CompleteTask", pb.CompleteTaskRequest(
            task_id=t.id, variables_json=json.dumps({who: True}), request_id=rid()), who, ())
        for t, who in zip(tasks, (a, b))])
    nexts = []
    for t, who, r in zip(tasks, (a, b), outs):
        REC.row("COMPLETE", "referral", r, actor=who, root_id=root, instance_id=child,
                task_id=t.id)
        if r.ok and r.resp.HasField("next"):
            nexts.append(r.resp.next)
    if not all(r.ok for r in outs):
        return REC.flow("referral", "aborted")
    if len(nexts) != 1:
        REC.violation("referral %s: the two completions of join %s carried %d `next` "
                      "referrals (expected exactly 1)" % (root, child, len(nexts)))
        return REC.flow("referral", "aborted")
    nxt = nexts[0]
    REC.row("JOIN_NEXT", "referral", None, actor=c, root_id=root, instance_id=nxt.instance_id,
            task_id=nxt.task.id, extra=child, code="OK")
    if nxt.task.assignee_id != c or nxt.task.root_instance_id != root:
        REC.violation("referral %s: next task %s is for %s under root %s" % (
            root, nxt.task.id, nxt.task.assignee_id, nxt.task.root_instance_id))
    if random.random() < 0.5:
        r = cl.call("CompleteAndEnd", pb.CompleteAndEndRequest(
            task_id=nxt.task.id, variables_json='{"approved": true}', request_id=rid()), c)
        REC.row("COMPLETE_END", "referral", r, actor=c, root_id=root,
                instance_id=nxt.instance_id, task_id=nxt.task.id)
        if r.ok and r.resp.root_instance.status != pb.INSTANCE_STATUS_COMPLETED:
            REC.violation("CompleteAndEnd of %s answered root status %d" % (
                nxt.task.id, r.resp.root_instance.status))
        end = "ended"
    else:
        r = cl.call("CompleteTask", pb.CompleteTaskRequest(
            task_id=nxt.task.id, variables_json='{"approved": true}', request_id=rid()), c)
        REC.row("COMPLETE", "referral", r, actor=c, root_id=root, instance_id=nxt.instance_id,
                task_id=nxt.task.id)
        end = "left_open"
    if r.ok:
        REC.row("FLOW_END", "referral", None, root_id=root, extra=end, code="OK")
    REC.flow("referral", end if r.ok else "aborted")


def claim_flow(cl, i, n):
    lead, x, y, group = "clm%d-lead" % i, "clm%d-x" % i, "clm%d-y" % i, "grp%d" % i
    res = cl.call("StartInstance", pb.StartInstanceRequest(
        definition_key=CLAIM_KEY, variables_json=json.dumps({"flow": "%d-%d" % (i, n)}),
        request_id=rid()), lead)
    if not res.ok:
        return REC.flow("claim", "aborted")
    root = res.resp.instance.id
    REC.row("START", "claim", res, actor=lead, root_id=root, instance_id=root)
    res = cl.call("AssignTo", pb.AssignToRequest(
        parent_instance_id=root, title="pick up %d-%d" % (i, n),
        assignee=pb.Assignee(kind=pb.ASSIGNEE_KIND_GROUP, ids=[group]), request_id=rid()), lead)
    if not res.ok:
        return REC.flow("claim", "aborted")
    child, task = res.resp.instance_id, res.resp.task.id
    REC.row("ASSIGN", "claim", res, actor=lead, root_id=root, instance_id=child, task_id=task,
            extra=group)
    members = [x, y] if random.random() < 0.5 else [y, x]
    outs = cl.call_together([
        ("ClaimTask", pb.ClaimTaskRequest(task_id=task, request_id=rid()), who,
         ("TASK_ALREADY_CLAIMED",)) for who in members])
    for who, r in zip(members, outs):
        REC.row("CLAIM", "claim", r, actor=who, root_id=root, instance_id=child, task_id=task)
    winners = [who for who, r in zip(members, outs) if r.ok]
    refused = [r.reason for r in outs if not r.ok]
    if len(winners) != 1 or refused != ["TASK_ALREADY_CLAIMED"]:
        if all(r.ok or r.reason == "TASK_ALREADY_CLAIMED" for r in outs):
            REC.violation("claim race on task %s: winners %s, refusals %s (expected exactly "
                          "one winner)" % (task, winners, refused))
        return REC.flow("claim", "aborted")
    winner = winners[0]
    loser = x if winner == y else y
    REC.row("CLAIM_RACE", "claim", None, actor=winner, root_id=root, instance_id=child,
            task_id=task, code="OK")
    r = cl.call("CompleteTask", pb.CompleteTaskRequest(task_id=task, request_id=rid()), loser,
                expected=("NOT_ASSIGNEE",))
    REC.row("COMPLETE", "claim", r, actor=loser, root_id=root, instance_id=child, task_id=task)
    if r.ok:
        REC.violation("task %s claimed by %s was completed by %s" % (task, winner, loser))
    if random.random() < 0.5:
        r = cl.call("CompleteAndEnd", pb.CompleteAndEndRequest(task_id=task, request_id=rid()),
                    winner)
        REC.row("COMPLETE_END", "claim", r, actor=winner, root_id=root, instance_id=child,
                task_id=task)
        end = "ended"
    else:
        r = cl.call("CompleteTask", pb.CompleteTaskRequest(task_id=task, request_id=rid()),
                    winner)
        REC.row("COMPLETE", "claim", r, actor=winner, root_id=root, instance_id=child,
                task_id=task)
        end = "left_open"
    if r.ok:
        REC.row("FLOW_END", "claim", None, root_id=root, extra=end, code="OK")
    REC.flow("claim", end if r.ok else "aborted")


def net_definition():
    return pb.Definition(
        key=NET_KEY, kind=pb.DEFINITION_KIND_NET, name="replicas: job, then review or timeout",
        places=[pb.Place(id="start", kind=pb.PLACE_KIND_START),
                pb.Place(id="prepared", kind=pb.PLACE_KIND_NORMAL),
                pb.Place(id="end", kind=pb.PLACE_KIND_END)],
        transitions=[
            pb.Transition(id="prepare", name="prepare", trigger=pb.TRIGGER_AUTO,
                          job_type=JOB_TYPE, lease=dur(JOB_LEASE)),
            pb.Transition(id="review", name="review", trigger=pb.TRIGGER_USER,
                          assignee=pb.Assignee(kind=pb.ASSIGNEE_KIND_USER, ids=[REVIEWER])),
            pb.Transition(id="timeout", name="timeout", trigger=pb.TRIGGER_TIME,
                          delay=dur(NET_DELAY))],
        arcs=[pb.Arc(source="start", target="prepare"),
              pb.Arc(source="prepare", target="prepared"),
              pb.Arc(source="prepared", target="review"),
              pb.Arc(source="review", target="end"),
              pb.Arc(source="prepared", target="timeout"),
              pb.Arc(source="timeout", target="end")])


def net_flow(cl, i, n):
    starter = "net%d-starter" % i
    res = cl.call("StartInstance", pb.StartInstanceRequest(
        definition_key=NET_KEY, variables_json=json.dumps({"flow": "%d-%d" % (i, n)}),
        request_id=rid()), starter)
    if not res.ok:
        return REC.flow("net", "aborted")
    inst = res.resp.instance.id
    REC.row("START", "net", res, actor=starter, root_id=inst, instance_id=inst)
    # Wait for the job to be done by a worker: the review task appears.
    until = time.monotonic() + 25.0
    task = None
    while time.monotonic() < until:
        r = cl.call("GetInstance", pb.GetInstanceRequest(instance_id=inst))
        if not r.ok:
            return REC.flow("net", "aborted")
        tasks = [t for t in r.resp.tasks if t.transition_id == "review"]
        if tasks or r.resp.instance.status != pb.INSTANCE_STATUS_RUNNING:
            task = tasks[0] if tasks else None
            break
        time.sleep(0.1)
    else:
        REC.violation("net instance %s: no review task 25 s after its start (job not done?)"
                      % inst)
        return REC.flow("net", "aborted")
    if task is None:
        REC.violation("net instance %s ended (status %d) without a review task"
                      % (inst, r.resp.instance.status))
        return REC.flow("net", "aborted")
    if task.status != pb.TASK_STATUS_OPEN:
        REC.row("FLOW_END", "net", None, root_id=inst, instance_id=inst, task_id=task.id,
                extra="timer_first", code="OK")
        return REC.flow("net", "timer won before the review was seen")
    mode = "fast" if random.random() < 0.5 else "race"
    if mode == "race":
        due = ts_seconds(task.due_at) if task.HasField("due_at") else \
            ts_seconds(task.created_at) + NET_DELAY
        delay = due + random.uniform(-0.25, 0.25) - time.time()
        time.sleep(max(0.0, min(delay, NET_DELAY + 1.0)))
    r = cl.call("CompleteTask", pb.CompleteTaskRequest(task_id=task.id, request_id=rid()),
                REVIEWER, expected=("TASK_NOT_OPEN",))
    REC.row("COMPLETE", "net", r, actor=REVIEWER, root_id=inst, instance_id=inst,
            task_id=task.id, extra=mode)
    if r.ok or r.reason == "TASK_NOT_OPEN":
        REC.row("FLOW_END", "net", None, root_id=inst, instance_id=inst, task_id=task.id,
                extra="review" if r.ok else "timer", code="OK")
        REC.flow("net", "%s: %s" % (mode, "review won" if r.ok else "timer won"))
    else:
        REC.flow("net", "aborted")


def job_worker(cl, name, stop):
    while not stop.is_set():
        req_id = rid()
        r = cl.call("ActivateJobs", pb.ActivateJobsRequest(
            job_type=JOB_TYPE, worker=name, max_jobs=3, lease=dur(JOB_LEASE), wait=dur(0.5),
            request_id=req_id), timeout=RPC_TIMEOUT)
        if not r.ok:
            time.sleep(0.2)
            continue
        for j in r.resp.jobs:
            REC.row("ACTIVATED", "net", r, rid=req_id, actor=name, root_id=j.root_instance_id,
                    instance_id=j.instance_id, job_id=j.id, job_key=j.key)
        for j in r.resp.jobs:
            stale = random.random() < 0.15
            if stale:  # outlive the lease on purpose: another worker may take over
                time.sleep(JOB_LEASE + 0.4)
            c = cl.call("CompleteJob", pb.CompleteJobRequest(
                job_key=j.key, variables_json=json.dumps({"prepared_by": name}),
                request_id=rid()), expected=("JOB_LEASE_LOST",))
            REC.row("COMPLETE_JOB", "net", c, actor=name, root_id=j.root_instance_id,
                    instance_id=j.instance_id, job_id=j.id, job_key=j.key,
                    extra="late" if stale else "")


def event_watcher(cl, stop, seen):
    """Follows WatchEvents during the whole run, resuming after the last
    sequence seen (each stream lasts at most 5 s, or until a fault ends it):
    every event must arrive exactly once, densely, in order."""
    last, complaints = 0, 0
    while not stop.is_set():
        rep = cl._next()
        stream = None
        try:
            stream = rep.workflow().WatchEvents(
                pb.WatchEventsRequest(after_sequence=last, follow=True),
                metadata=[("x-api-key", API_KEY)], timeout=5.0)
            for m in stream:
                s = m.event.sequence
                if s != last + 1 and complaints < 10:
                    complaints += 1
                    REC.violation("live watcher on replica %d: sequence %d arrived after %d "
                                  "(resumed with after_sequence=%d)" % (rep.idx, s, last, last))
                seen.append(s)
                last = max(last, s)
                if stop.is_set():
                    break
        except grpc.RpcError as e:
            if not cl._transient(Result(e.code(), reason=error_reason(e))) and complaints < 10:
                complaints += 1
                REC.violation("live watcher on replica %d: %s %s"
                              % (rep.idx, e.code().name, e.details()))
        finally:
            if stream is not None:
                stream.cancel()
        REC.watch_resumes = getattr(REC, "watch_resumes", 0) + 1
        time.sleep(0.05)


def run_thread(target, name, *args):
    def body():
        try:
            target(*args)
        except Exception:
            REC.violation("client thread %s crashed:\n%s" % (name, traceback.format_exc()))
    t = threading.Thread(target=body, name=name, daemon=True)
    t.start()
    return t


def flow_loop(flow, cl, i, stop):
    n = 0
    while not stop.is_set():
        flow(cl, i, n)
        n += 1


# ---------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------

# Parsed events (created after the load, in the scratch database).
EV_SQL = """
CREATE TABLE rep_ev AS SELECT id, sequence, type, time,
    instance_id, root_id, actor,
    (d->>'taskId') COLLATE "C" AS task_id,
    d->>'completedBy' AS completed_by,
    d->>'claimedBy' AS claimed_by,
    coalesce(d->>'jobId', d->>'job_id') COLLATE "C" AS job_id,
    coalesce(d->>'jobKey', d->>'job_key') COLLATE "C" AS job_key,
    (d->>'timerId') COLLATE "C" AS timer_id,
    (d->>'transitionId') COLLATE "C" AS transition_id,
    d->>'dueAt' AS due_at
FROM (SELECT *, data_json::json AS d FROM events) e;
CREATE INDEX ON rep_ev (task_id); CREATE INDEX ON rep_ev (job_id);
CREATE INDEX ON rep_ev (timer_id); CREATE INDEX ON rep_ev (instance_id);
ANALYZE rep_ev;
"""

# (name, SQL counting what is checked, SQL listing violations). H = the
# client history (rep_history), E = rep_ev.
INVARIANTS = [
    ("acknowledged StartInstance: instance exists, root, started_by = actor",
     "SELECT count(*) FROM rep_history WHERE op = 'START' AND code = 'OK'",
     """SELECT h.instance_id, i.id, i.root_id, i.started_by, h.actor FROM rep_history h
        LEFT JOIN instances i ON i.id = h.instance_id
        WHERE h.op = 'START' AND h.code = 'OK'
          AND (i.id IS NULL OR i.root_id <> i.id OR i.parent_id IS NOT NULL
               OR i.started_by IS DISTINCT FROM h.actor)"""),
    ("acknowledged AssignTo: referral under its root, task assigned as requested",
     "SELECT count(*) FROM rep_history WHERE op = 'ASSIGN' AND code = 'OK'",
     """SELECT h.task_id, h.instance_id, t.id, t.instance_id, t.assignee_id FROM rep_history h
        LEFT JOIN tasks t ON t.id = h.task_id LEFT JOIN instances i ON i.id = h.instance_id
        WHERE h.op = 'ASSIGN' AND h.code = 'OK'
          AND (t.id IS NULL OR i.id IS NULL OR t.instance_id <> h.instance_id
               OR i.parent_id IS DISTINCT FROM h.root_id OR i.root_id <> h.root_id
               OR t.assignee_id IS DISTINCT FROM h.extra
               OR t.assigned_by IS DISTINCT FROM h.actor)"""),
    ("acknowledged CompleteTask/CompleteAndEnd: task DONE, completed_by = the actor",
     "SELECT count(*) FROM rep_history WHERE op IN ('COMPLETE', 'COMPLETE_END') AND code = 'OK'",
     """SELECT h.op, h.task_id, h.actor, t.status, t.completed_by FROM rep_history h
        LEFT JOIN tasks t ON t.id = h.task_id
        WHERE h.op IN ('COMPLETE', 'COMPLETE_END') AND h.code = 'OK'
          AND (t.id IS NULL OR t.status <> 3 OR t.completed_by IS DISTINCT FROM h.actor)"""),
    ("one acknowledged completer per task (history)",
     """SELECT count(DISTINCT task_id) FROM rep_history
        WHERE op IN ('COMPLETE', 'COMPLETE_END') AND code = 'OK'""",
     """SELECT task_id, string_agg(actor || ':' || rid, ', ') FROM rep_history
        WHERE op IN ('COMPLETE', 'COMPLETE_END') AND code = 'OK'
        GROUP BY task_id HAVING count(*) > 1"""),
    ("no task completed twice (TASK_COMPLETED per task <= 1)",
     "SELECT count(*) FROM tasks",
     """SELECT task_id, count(*) FROM rep_ev WHERE type = 'TASK_COMPLETED'
        GROUP BY task_id HAVING count(*) > 1"""),
    ("acknowledged CompleteAndEnd: root COMPLETED, nothing left running or pending in its tree",
     "SELECT count(*) FROM rep_history WHERE op = 'COMPLETE_END' AND code = 'OK'",
     """SELECT h.root_id, r.status,
          (SELECT count(*) FROM instances i WHERE i.root_id = h.root_id AND i.status = 1),
          (SELECT count(*) FROM tasks t WHERE t.root_id = h.root_id AND t.status IN (1, 2))
        FROM rep_history h JOIN instances r ON r.id = h.root_id
        WHERE h.op = 'COMPLETE_END' AND h.code = 'OK'
          AND (r.status <> 2
               OR EXISTS (SELECT 1 FROM instances i WHERE i.root_id = h.root_id AND i.status = 1)
               OR EXISTS (SELECT 1 FROM tasks t WHERE t.root_id = h.root_id
                          AND t.status IN (1, 2)))"""),
    ("claims: one winner per task (acknowledged claimers, claimed_by, TASK_CLAIMED events)",
     "SELECT count(DISTINCT task_id) FROM rep_history WHERE op = 'CLAIM' AND code = 'OK'",
     """SELECT task_id, 'acknowledged claimers: ' || string_agg(DISTINCT actor, ',')
          FROM rep_history WHERE op = 'CLAIM' AND code = 'OK'
          GROUP BY task_id HAVING count(DISTINCT actor) > 1
        UNION ALL
        SELECT h.task_id, 'race winner ' || h.actor || ', claimed_by ' ||
               coalesce(t.claimed_by, '-') || ', TASK_CLAIMED events ' ||
               (SELECT count(*) FROM rep_ev e WHERE e.type = 'TASK_CLAIMED'
                 AND e.task_id = h.task_id) || ' by ' ||
               coalesce((SELECT string_agg(e.claimed_by, ',') FROM rep_ev e
                 WHERE e.type = 'TASK_CLAIMED' AND e.task_id = h.task_id), '-')
          FROM rep_history h JOIN tasks t ON t.id = h.task_id
          WHERE h.op = 'CLAIM_RACE'
            AND (t.claimed_by IS DISTINCT FROM h.actor
                 OR (SELECT count(*) FROM rep_ev e WHERE e.type = 'TASK_CLAIMED'
                     AND e.task_id = h.task_id) <> 1
                 OR EXISTS (SELECT 1 FROM rep_ev e WHERE e.type = 'TASK_CLAIMED'
                     AND e.task_id = h.task_id AND e.claimed_by IS DISTINCT FROM h.actor))"""),
    ("joins: each fired join made exactly one next referral (children of the root not "
     "created by an acknowledged AssignTo)",
     """SELECT count(*) FROM instances WHERE parent_id IS NOT NULL
        AND on_all_completed IS NOT NULL""",
     """WITH assigned AS (SELECT DISTINCT instance_id FROM rep_history
                           WHERE op = 'ASSIGN' AND code = 'OK'),
        roots AS (SELECT DISTINCT root_id FROM rep_history WHERE op = 'START' AND code = 'OK'
                  AND flow IN ('referral', 'claim'))
        SELECT r.root_id,
          (SELECT count(*) FROM instances c WHERE c.parent_id = r.root_id
             AND c.id NOT IN (SELECT instance_id FROM assigned)) AS by_joins,
          (SELECT count(*) FROM instances c WHERE c.parent_id = r.root_id AND c.join_fired
             AND c.on_all_completed IS NOT NULL) AS fired
        FROM roots r
        WHERE (SELECT count(*) FROM instances c WHERE c.parent_id = r.root_id
                 AND c.id NOT IN (SELECT instance_id FROM assigned))
           <> (SELECT count(*) FROM instances c WHERE c.parent_id = r.root_id AND c.join_fired
                 AND c.on_all_completed IS NOT NULL)
        UNION ALL
        SELECT h.root_id, -1, -1 FROM rep_history h
          LEFT JOIN instances n ON n.id = h.instance_id
          WHERE h.op = 'JOIN_NEXT' AND (n.id IS NULL OR n.parent_id IS DISTINCT FROM h.root_id
            OR (SELECT count(*) FROM tasks t WHERE t.instance_id = n.id) <> 1
            OR NOT (SELECT join_fired FROM instances j WHERE j.id = h.extra COLLATE "C"))"""),
    ("joins: a referral COMPLETED iff its join is met (ALL tasks DONE)",
     "SELECT count(*) FROM instances WHERE parent_id IS NOT NULL",
     """SELECT i.id, i.status, i.join_fired,
          (SELECT count(*) FROM tasks t WHERE t.instance_id = i.id AND t.status = 3),
          (SELECT count(*) FROM tasks t WHERE t.instance_id = i.id)
        FROM instances i WHERE i.parent_id IS NOT NULL AND i.status IN (1, 2)
          AND ((i.status = 2) <> (NOT EXISTS (SELECT 1 FROM tasks t WHERE t.instance_id = i.id
                                               AND t.status <> 3)))
          AND NOT EXISTS (SELECT 1 FROM rep_history h WHERE h.op = 'COMPLETE_END'
                          AND h.code = 'OK' AND h.root_id = i.root_id)"""),
    ("events: none left without a sequence",
     "SELECT count(*) FROM events",
     "SELECT id, type, instance_id FROM events WHERE sequence IS NULL"),
    ("events: sequences unique and dense 1..N (count = max = sequencer's last)",
     "SELECT count(*) FROM events WHERE sequence IS NOT NULL",
     """SELECT count(*), count(DISTINCT sequence), min(sequence), max(sequence),
               (SELECT last FROM event_sequencer)
        FROM events WHERE sequence IS NOT NULL
        HAVING count(*) <> count(DISTINCT sequence) OR count(*) <> coalesce(max(sequence), 0)
           OR coalesce(min(sequence), 1) <> 1
           OR coalesce(max(sequence), 0) <> (SELECT last FROM event_sequencer)"""),
    ("events: every instance has exactly one INSTANCE_STARTED; ended ones one "
     "INSTANCE_COMPLETED/CANCELLED, running ones none",
     "SELECT count(*) FROM instances",
     """SELECT i.id, i.status, s.n, c.n, x.n FROM instances i
        LEFT JOIN LATERAL (SELECT count(*) n FROM rep_ev e WHERE e.instance_id = i.id
                           AND e.type = 'INSTANCE_STARTED') s ON true
        LEFT JOIN LATERAL (SELECT count(*) n FROM rep_ev e WHERE e.instance_id = i.id
                           AND e.type = 'INSTANCE_COMPLETED') c ON true
        LEFT JOIN LATERAL (SELECT count(*) n FROM rep_ev e WHERE e.instance_id = i.id
                           AND e.type = 'INSTANCE_CANCELLED') x ON true
        WHERE s.n <> 1 OR c.n <> (CASE WHEN i.status = 2 THEN 1 ELSE 0 END)
           OR x.n <> (CASE WHEN i.status = 3 THEN 1 ELSE 0 END)"""),
    ("events: every task has one TASK_CREATED; DONE one TASK_COMPLETED (by completed_by), "
     "CANCELLED one TASK_CANCELLED, others none",
     "SELECT count(*) FROM tasks",
     """SELECT t.id, t.status, cr.n, co.n, ca.n, co.who, t.completed_by FROM tasks t
        LEFT JOIN LATERAL (SELECT count(*) n FROM rep_ev e WHERE e.task_id = t.id
                           AND e.type = 'TASK_CREATED') cr ON true
        LEFT JOIN LATERAL (SELECT count(*) n, max(e.completed_by) who FROM rep_ev e
                           WHERE e.task_id = t.id AND e.type = 'TASK_COMPLETED') co ON true
        LEFT JOIN LATERAL (SELECT count(*) n FROM rep_ev e WHERE e.task_id = t.id
                           AND e.type = 'TASK_CANCELLED') ca ON true
        WHERE cr.n <> 1 OR co.n <> (CASE WHEN t.status = 3 THEN 1 ELSE 0 END)
           OR ca.n <> (CASE WHEN t.status = 4 THEN 1 ELSE 0 END)
           OR (t.status = 3 AND co.who IS DISTINCT FROM t.completed_by)"""),
    ("events: causal order per object (instance started first; task created before it "
     "ends; job created < activated < completed; timer scheduled < fired)",
     "SELECT count(*) FROM rep_ev",
     """SELECT 'instance', i.id, NULL::bigint FROM instances i
          WHERE (SELECT min(sequence) FROM rep_ev e WHERE e.instance_id = i.id)
             <> (SELECT min(sequence) FROM rep_ev e WHERE e.instance_id = i.id
                 AND e.type = 'INSTANCE_STARTED')
        UNION ALL
        SELECT 'task', e.task_id, e.sequence FROM rep_ev e
          WHERE e.type IN ('TASK_CLAIMED', 'TASK_COMPLETED', 'TASK_CANCELLED', 'TASK_RELEASED')
            AND NOT EXISTS (SELECT 1 FROM rep_ev c WHERE c.type = 'TASK_CREATED'
                            AND c.task_id = e.task_id AND c.sequence < e.sequence)
        UNION ALL
        SELECT 'job', e.job_id, e.sequence FROM rep_ev e
          WHERE e.type IN ('JOB_ACTIVATED', 'JOB_COMPLETED')
            AND NOT EXISTS (SELECT 1 FROM rep_ev c WHERE c.type = 'JOB_CREATED'
                            AND c.job_id = e.job_id AND c.sequence < e.sequence)
        UNION ALL
        SELECT 'job completed unactivated', e.job_id, e.sequence FROM rep_ev e
          WHERE e.type = 'JOB_COMPLETED'
            AND NOT EXISTS (SELECT 1 FROM rep_ev c WHERE c.type = 'JOB_ACTIVATED'
                            AND c.job_id = e.job_id AND c.sequence < e.sequence)
        UNION ALL
        SELECT 'timer', e.timer_id, e.sequence FROM rep_ev e WHERE e.type = 'TIMER_FIRED'
            AND NOT EXISTS (SELECT 1 FROM rep_ev c WHERE c.type = 'TIMER_SCHEDULED'
                            AND c.timer_id = e.timer_id AND c.sequence < e.sequence)"""),
    ("events: none about an unknown instance",
     "SELECT count(*) FROM rep_ev",
     """SELECT e.sequence, e.type, e.instance_id FROM rep_ev e
        WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = e.instance_id)"""),
    ("no instance RUNNING with nothing pending in its tree (except NOT_STARTED roots and "
     "roots the client left open on purpose)",
     "SELECT count(*) FROM instances WHERE status = 1",
     """WITH RECURSIVE sub(top, id) AS (
            SELECT id, id FROM instances WHERE status = 1
            UNION ALL
            SELECT s.top, c.id FROM sub s JOIN instances c ON c.parent_id = s.id),
        live AS (
            SELECT s.top, bool_or(
                EXISTS (SELECT 1 FROM tasks t WHERE t.instance_id = s.id AND t.status IN (1, 2))
                OR EXISTS (SELECT 1 FROM jobs j WHERE j.instance_id = s.id)
                OR EXISTS (SELECT 1 FROM timers m WHERE m.instance_id = s.id)
                OR EXISTS (SELECT 1 FROM subscriptions b WHERE b.instance_id = s.id)) AS pending
            FROM sub s GROUP BY s.top)
        SELECT i.id, i.definition_key, i.parent_id,
               (SELECT count(*) FROM instances c WHERE c.parent_id = i.id) AS children
        FROM live l JOIN instances i ON i.id = l.top
        LEFT JOIN definitions d ON d.tenant_id = i.tenant_id
             AND d.key = i.definition_key COLLATE "C" AND d.version = i.definition_version
        WHERE NOT l.pending
          AND NOT (i.parent_id IS NULL AND coalesce(d.kind, 1) = 1
                   AND NOT EXISTS (SELECT 1 FROM instances c WHERE c.parent_id = i.id))
          AND NOT (i.parent_id IS NULL AND EXISTS (
                   SELECT 1 FROM rep_history h WHERE h.op = 'FLOW_END'
                   AND h.extra = 'left_open' AND h.root_id = i.id))"""),
]

NET_INVARIANTS = [
    ("jobs: none completed twice (JOB_COMPLETED per job <= 1)",
     "SELECT count(DISTINCT job_id) FROM rep_ev WHERE type = 'JOB_CREATED'",
     """SELECT job_id, count(*) FROM rep_ev WHERE type = 'JOB_COMPLETED'
        GROUP BY job_id HAVING count(*) > 1"""),
    ("jobs: every acknowledged CompleteJob used the job's current key (the last "
     "JOB_ACTIVATED before its JOB_COMPLETED)",
     "SELECT count(*) FROM rep_history WHERE op = 'COMPLETE_JOB' AND code = 'OK'",
     """SELECT h.job_id, h.job_key, h.actor, c.sequence,
          (SELECT a.job_key FROM rep_ev a WHERE a.type = 'JOB_ACTIVATED' AND a.job_id = h.job_id
             AND a.sequence < c.sequence ORDER BY a.sequence DESC LIMIT 1) AS current_key
        FROM rep_history h
        LEFT JOIN rep_ev c ON c.type = 'JOB_COMPLETED' AND c.job_id = h.job_id
        WHERE h.op = 'COMPLETE_JOB' AND h.code = 'OK'
          AND (c.sequence IS NULL
               OR (SELECT a.job_key FROM rep_ev a WHERE a.type = 'JOB_ACTIVATED'
                     AND a.job_id = h.job_id AND a.sequence < c.sequence
                     ORDER BY a.sequence DESC LIMIT 1) IS DISTINCT FROM h.job_key)"""),
    ("jobs: every JOB_LEASE_LOST refusal was justified (a later activation of the job with "
     "another key, or the expiry of the lease, had committed before the refusal)",
     """SELECT count(*) FROM rep_history WHERE op = 'COMPLETE_JOB'
        AND reason = 'JOB_LEASE_LOST'""",
     """SELECT h.job_id, h.job_key, h.actor, h.extra FROM rep_history h
        WHERE h.op = 'COMPLETE_JOB' AND h.reason = 'JOB_LEASE_LOST'
          AND NOT EXISTS (
            SELECT 1 FROM rep_ev mine JOIN rep_ev later
                   ON later.type IN ('JOB_ACTIVATED', 'JOB_LEASE_EXPIRED')
                 AND later.job_id = mine.job_id AND later.sequence > mine.sequence
                 AND (later.type = 'JOB_LEASE_EXPIRED'
                      OR later.job_key IS DISTINCT FROM mine.job_key)
            WHERE mine.type = 'JOB_ACTIVATED' AND mine.job_key = h.job_key
              AND later.time <= h.t1)"""),
    ("jobs: every key a worker received is in exactly one JOB_ACTIVATED event",
     "SELECT count(*) FROM rep_history WHERE op = 'ACTIVATED'",
     """SELECT h.job_id, h.job_key, (SELECT count(*) FROM rep_ev e WHERE e.type =
          'JOB_ACTIVATED' AND e.job_key = h.job_key) FROM rep_history h
        WHERE h.op = 'ACTIVATED' AND (SELECT count(*) FROM rep_ev e WHERE e.type =
          'JOB_ACTIVATED' AND e.job_key = h.job_key) <> 1"""),
    ("jobs: no job leased twice at once (between two JOB_ACTIVATED of a job, its lease "
     "ended: JOB_LEASE_EXPIRED or JOB_FAILED)",
     "SELECT count(*) FROM rep_ev WHERE type = 'JOB_ACTIVATED'",
     """SELECT a.job_id, a.sequence, b.sequence FROM rep_ev a
        JOIN LATERAL (SELECT n.sequence FROM rep_ev n WHERE n.type = 'JOB_ACTIVATED'
                        AND n.job_id = a.job_id AND n.sequence > a.sequence
                        ORDER BY n.sequence LIMIT 1) b ON true
        WHERE a.type = 'JOB_ACTIVATED'
          AND NOT EXISTS (SELECT 1 FROM rep_ev x WHERE x.job_id = a.job_id
                          AND x.type IN ('JOB_LEASE_EXPIRED', 'JOB_FAILED')
                          AND x.sequence > a.sequence AND x.sequence < b.sequence)"""),
    ("requests: no request id whose effect committed without its record (every "
     "JOB_ACTIVATED key is in the recorded response of an ActivateJobs request id)",
     "SELECT count(*) FROM rep_ev WHERE type = 'JOB_ACTIVATED'",
     """SELECT e.job_id, e.job_key FROM rep_ev e WHERE e.type = 'JOB_ACTIVATED'
          AND NOT EXISTS (SELECT 1 FROM idempotency r WHERE r.method LIKE '%ActivateJobs'
                          AND position(convert_to(e.job_key, 'UTF8') IN r.response) > 0)"""),
    ("requests: every acknowledged ActivateJobs has its record, holding the keys its worker "
     "got (a retry with the request id answers the first response)",
     "SELECT count(*) FROM rep_history WHERE op = 'ACTIVATED'",
     """SELECT h.rid, h.job_key FROM rep_history h WHERE h.op = 'ACTIVATED'
          AND NOT EXISTS (SELECT 1 FROM idempotency r WHERE r.method LIKE '%ActivateJobs'
                          AND r.request_id = h.rid COLLATE "C"
                          AND position(convert_to(h.job_key, 'UTF8') IN r.response) > 0)"""),
    ("timers: none fired twice (TIMER_FIRED per timer <= 1)",
     "SELECT count(*) FROM rep_ev WHERE type = 'TIMER_SCHEDULED'",
     """SELECT timer_id, count(*) FROM rep_ev WHERE type = 'TIMER_FIRED'
        GROUP BY timer_id HAVING count(*) > 1"""),
    ("timers: none fired before its due time (event time >= dueAt)",
     "SELECT count(*) FROM rep_ev WHERE type = 'TIMER_FIRED'",
     """SELECT f.timer_id, f.time, s.due_at FROM rep_ev f
        JOIN rep_ev s ON s.type = 'TIMER_SCHEDULED' AND s.timer_id = f.timer_id
        WHERE f.type = 'TIMER_FIRED'
          AND f.time < (extract(epoch FROM s.due_at::timestamptz) * 1000000)::bigint"""),
    ("timers: none overdue (> 5 s) on a running instance after the run",
     "SELECT count(*) FROM timers",
     """SELECT m.id, m.instance_id, m.due_at FROM timers m JOIN instances i ON i.id = m.instance_id
        WHERE i.status = 1
          AND m.due_at < (extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 5000000"""),
    ("net: exactly one of review/timeout fired per finished flow, as the client saw it; "
     "the instance COMPLETED",
     "SELECT count(*) FROM rep_history WHERE op = 'FLOW_END' AND flow = 'net'",
     """SELECT h.instance_id, h.extra, i.status,
          (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
             AND e.type = 'TASK_COMPLETED') AS reviews,
          (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
             AND e.type = 'TIMER_FIRED') AS timers,
          (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
             AND e.type = 'JOB_COMPLETED') AS jobs
        FROM rep_history h JOIN instances i ON i.id = h.instance_id
        WHERE h.op = 'FLOW_END' AND h.flow = 'net'
          AND (i.status <> 2
            OR (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
                AND e.type = 'JOB_COMPLETED') <> 1
            OR (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
                AND e.type = 'TASK_COMPLETED')
               <> (CASE WHEN h.extra = 'review' THEN 1 ELSE 0 END)
            OR (SELECT count(*) FROM rep_ev e WHERE e.instance_id = h.instance_id
                AND e.type = 'TIMER_FIRED')
               <> (CASE WHEN h.extra = 'review' THEN 0 ELSE 1 END))"""),
]


# ---------------------------------------------------------------------------
# A batch operation while the replica running it is killed
# ---------------------------------------------------------------------------

BATCH_KEY = "rep-batch"


def batch_scenario(db_dsn, replicas, faults, results):
    """SUSPEND over BATCH_N instances; SIGKILL the replica holding the
    batch mid-way; every instance must be suspended exactly once and the
    batch must complete with done == total."""
    cl = Client("batch", replicas)
    ids, lock = [], threading.Lock()

    def starter(k):
        for i in range(k, BATCH_N, 6):
            res = cl_k[k].call("StartInstance", pb.StartInstanceRequest(
                definition_key=BATCH_KEY, request_id=rid()), actor="batch-starter")
            if res.ok:
                with lock:
                    ids.append(res.resp.instance.id)

    cl_k = [Client("batch-%d" % k, replicas) for k in range(6)]
    starters = [threading.Thread(target=starter, args=(k,)) for k in range(6)]
    for t in starters:
        t.start()
    for t in starters:
        t.join(OP_BUDGET * 4)
    bad = []
    if len(ids) != BATCH_N:
        bad.append("started %d of %d instances" % (len(ids), BATCH_N))
    res = cl.call("StartBatchOperation", pb.StartBatchOperationRequest(
        filter=pb.InstanceFilter(started_by="*", definition_key=BATCH_KEY),
        action=pb.BATCH_ACTION_SUSPEND, reason="replica test", request_id=rid()),
        actor="batch-ops")
    if not res.ok:
        results.append(("batch operation under a replica kill", 0,
                        ["StartBatchOperation failed: %s %s" % (res.name(), res.detail)]))
        return
    bid, total = res.resp.batch_operation.id, res.resp.batch_operation.total
    faults.note("batch %s started: SUSPEND over %d instances" % (bid, total))
    # The replica holding the batch, once it has suspended instances of a
    # chunk whose progress it has not written yet. On a loaded machine the
    # poll may never land inside a chunk: past half the window, a replica
    # seen holding the batch between chunks is killed instead.
    victim, start = None, time.monotonic()
    window = 20 * wf_testkit.time_scale()
    while victim is None and time.monotonic() < start + window:
        row = psql(db_dsn, "SELECT coalesce(lease_owner, ''), done, state, (SELECT count(*) "
                           "FROM events WHERE type = 'INSTANCE_SUSPENDED') FROM "
                           "batch_operations WHERE id = '%s'" % bid)[0]
        owner, done, suspended = row[0], int(row[1]), int(row[3])
        if row[2] != "1":
            break
        late = time.monotonic() > start + window / 2
        if owner and (suspended > done or late):
            pid = int(owner.split("/")[0])
            victim = next((r for r in replicas if r.proc.pid == pid), None)
    if victim is None:
        bad.append("no replica was seen holding the batch while it ran")
    else:
        pid, port = victim.proc.pid, victim.port
        victim.kill()
        row = psql(db_dsn, "SELECT done, coalesce(lease_owner, ''), (SELECT count(*) FROM "
                           "events WHERE type = 'INSTANCE_SUSPENDED') FROM batch_operations "
                           "WHERE id = '%s'" % bid)[0]
        faults.note("SIGKILL replica %d (pid %d) holding batch %s: done %s, %s suspended, "
                    "chunk %s" % (victim.idx, pid, bid, row[0], row[2],
                                  "interrupted" if row[1].startswith("%d/" % pid)
                                  else "already written"))
        time.sleep(KILL_DOWN)
        victim.start(port=port)
        faults.note("replica %d restarted (pid %d)" % (victim.idx, victim.proc.pid))
    state, until = None, time.monotonic() + BATCH_BUDGET
    while time.monotonic() < until:
        g = cl.call("GetBatchOperation", pb.GetBatchOperationRequest(id=bid), actor="batch-ops")
        if g.ok and g.resp.batch_operation.state != pb.BATCH_OPERATION_STATE_RUNNING:
            state = g.resp.batch_operation
            break
        time.sleep(0.3)
    if state is None:
        bad.append("batch %s did not complete within %.0f s" % (bid, BATCH_BUDGET))
    else:
        faults.note("batch %s: %s, done %d of %d, failed %d"
                    % (bid, pb.BatchOperationState.Name(state.state), state.done, state.total,
                       state.failed))
        if state.state != pb.BATCH_OPERATION_STATE_COMPLETED:
            bad.append("batch ended %s" % pb.BatchOperationState.Name(state.state))
        if not (state.done == state.total == BATCH_N) or state.failed != 0:
            bad.append("done %d, failed %d, total %d; want done == total == %d"
                       % (state.done, state.failed, state.total, BATCH_N))
    rows = psql(db_dsn, "SELECT i.id, i.status, (SELECT count(*) FROM events e WHERE "
                        "e.tenant_id = i.tenant_id AND e.instance_id = i.id AND "
                        "e.type = 'INSTANCE_SUSPENDED') FROM instances i WHERE "
                        "i.definition_key = '%s' AND i.parent_id IS NULL" % BATCH_KEY)
    for iid, status, n in rows:
        if status != "7" or n != "1":
            bad.append("instance %s: status %s, %s INSTANCE_SUSPENDED events" % (iid, status, n))
    results.append(("batch operation SUSPEND over %d instances, the replica running it "
                    "killed: COMPLETED, done == total, one INSTANCE_SUSPENDED per instance"
                    % BATCH_N, len(rows), bad[:10]))
    number_events(db_dsn, replicas)


def number_events(db_dsn, replicas):
    """A scenario's events are numbered by readers, as the load's were:
    read until none is left unnumbered, so that the event checks see them
    all."""
    until = time.monotonic() + 15
    while time.monotonic() < until:
        try:
            watch_all(replicas[0], after=0)
        except grpc.RpcError:
            pass
        if int(psql(db_dsn, "SELECT count(*) FROM events WHERE sequence IS NULL")[0][0]) == 0:
            break
        time.sleep(0.2)



# ---------------------------------------------------------------------------
# A signal fanned out to a crowd while a replica running its deliveries dies
# ---------------------------------------------------------------------------

FANOUT_KEY = "rep-fanout"


def fanout_definition():
    return pb.Definition(
        key=FANOUT_KEY, kind=pb.DEFINITION_KIND_NET, name="replicas: wait for go",
        places=[pb.Place(id="s", kind=pb.PLACE_KIND_START),
                pb.Place(id="e", kind=pb.PLACE_KIND_END)],
        transitions=[pb.Transition(id="w", name="w", trigger=pb.TRIGGER_MSG, signal_name="go",
                                   correlation=pb.CORRELATION_AGGREGATE)],
        arcs=[pb.Arc(source="s", target="w"), pb.Arc(source="w", target="e")])


def fanout_start(replicas, agg):
    ids, lock = [], threading.Lock()
    cl_k = [Client("fanout-%d" % k, replicas) for k in range(6)]

    def starter(k):
        for _ in range(k, FANOUT_N, 6):
            res = cl_k[k].call("StartInstance", pb.StartInstanceRequest(
                definition_key=FANOUT_KEY, aggregate=pb.Aggregate(type="order", id=agg),
                request_id=rid()), actor="fanout-starter")
            if res.ok:
                with lock:
                    ids.append(res.resp.instance.id)

    threads = [threading.Thread(target=starter, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(OP_BUDGET * 4)
    return ids


def fanout_kill(db_dsn, replicas, faults, log_id):
    """SIGKILLs a replica once some deliveries of log_id are done and some
    pending; restarts it. Returns a problem or None."""
    until = time.monotonic() + 20
    while time.monotonic() < until:
        done, pending = (int(x) for x in psql(
            db_dsn, "SELECT count(*) FILTER (WHERE state <> 0), count(*) FILTER (WHERE state = 0) "
                    "FROM signal_deliveries WHERE signal_log_id = '%s'" % log_id)[0])
        if pending == 0:
            return "the deliveries ended before a replica could be killed"
        if done > 0:
            break
        time.sleep(0.05)
    victim = replicas[0]
    pid, port = victim.proc.pid, victim.port
    victim.kill()
    claimed = psql(db_dsn, "SELECT count(*) FROM signal_deliveries WHERE signal_log_id = '%s' "
                           "AND state = 0 AND claimed_until > 0" % log_id)[0][0]
    faults.note("SIGKILL replica %d (pid %d) mid-fan-out: %d delivered, %s pending claimed"
                % (victim.idx, pid, done, claimed))
    time.sleep(KILL_DOWN)
    victim.start(port=port)
    faults.note("replica %d restarted (pid %d)" % (victim.idx, victim.proc.pid))
    return None


def fanout_scenario(db_dsn, replicas, faults, results):
    """SendSignal to an aggregate FANOUT_N instances wait on; a replica is
    killed mid-fan-out; every instance must get the signal exactly once."""
    name = "signal fanned out to %d instances, a replica killed mid-way: each instance " \
           "fired exactly once, every delivery DELIVERED, the replay the first answer" % FANOUT_N
    cl = Client("fanout", replicas)
    res = cl.call("DeployDefinition", pb.DeployDefinitionRequest(
        definition=fanout_definition(), request_id=rid()), actor="rep-deployer")
    if not res.ok:
        results.append((name, 0, ["DeployDefinition failed: %s %s" % (res.name(), res.detail)]))
        return
    agg = "crowd-%s" % rid()
    ids = fanout_start(replicas, agg)
    bad = [] if len(ids) == FANOUT_N else ["started %d of %d instances" % (len(ids), FANOUT_N)]
    req = pb.SendSignalRequest(name="go", aggregate=pb.Aggregate(type="order", id=agg),
                               payload_json='{"went": true}', request_id=rid())
    sent = cl.call("SendSignal", req, actor="fanout-hook")
    if not sent.ok:
        results.append((name, 0, bad + ["SendSignal failed: %s %s" % (sent.name(), sent.detail)]))
        return
    if sent.resp.instance_count != len(ids) or sent.resp.outcome != pb.SIGNAL_OUTCOME_CORRELATED:
        bad.append("answer: outcome %d, instance_count %d; want CORRELATED, %d"
                   % (sent.resp.outcome, sent.resp.instance_count, len(ids)))
    log_id = psql(db_dsn, "SELECT id FROM signals WHERE aggregate_id = '%s'" % agg)[0][0]
    problem = fanout_kill(db_dsn, replicas, faults, log_id)
    if problem:
        bad.append(problem)
    until, pending = time.monotonic() + BATCH_BUDGET, -1
    while time.monotonic() < until:
        pending = int(psql(db_dsn, "SELECT count(*) FROM signal_deliveries WHERE "
                                   "signal_log_id = '%s' AND state = 0" % log_id)[0][0])
        if pending == 0:
            break
        time.sleep(0.3)
    if pending != 0:
        bad.append("%d deliveries still pending after %.0f s" % (pending, BATCH_BUDGET))
    again = cl.call("SendSignal", req, actor="fanout-hook")
    if not again.ok or again.resp.SerializeToString() != sent.resp.SerializeToString():
        bad.append("the replay of the request id answered differently")
    rows = psql(db_dsn, "SELECT i.id, i.status, (SELECT count(*) FROM events e WHERE "
                        "e.tenant_id = i.tenant_id AND e.instance_id = i.id AND "
                        "e.type = 'SIGNAL_CONSUMED'), (SELECT string_agg(d.state::text, ',') "
                        "FROM signal_deliveries d WHERE d.tenant_id = i.tenant_id AND "
                        "d.instance_id = i.id) FROM instances i WHERE i.aggregate_id = '%s'"
                        % agg)
    for iid, status, n, states in rows:
        if status != "2" or n != "1" or states != "1":
            bad.append("instance %s: status %s, %s SIGNAL_CONSUMED events, deliveries %s"
                       % (iid, status, n, states))
    faults.note("fan-out of %s: %d instances checked" % (log_id, len(rows)))
    results.append((name, len(rows), bad[:10]))


SCHED_KEY = "rep-sched"


def schedules_create(replicas):
    """Creates SCHED_N schedules whose fire times fall in the window of the
    faults; returns (prefix, aggregate id, first and last fire time in
    seconds). Their instances wait for a signal to the aggregate."""
    cl = Client("schedules", replicas)
    defn = fanout_definition()
    defn.key = SCHED_KEY
    res = cl.call("DeployDefinition", pb.DeployDefinitionRequest(
        definition=defn, request_id=rid()), actor="rep-deployer")
    if not res.ok:
        raise SetupError("DeployDefinition of %s failed: %s %s" % (SCHED_KEY, res.name(),
                                                                   res.detail))
    first = int(time.time()) + SCHED_FROM
    first += -first % SCHED_EVERY
    last = first + (SCHED_TO - SCHED_FROM) // SCHED_EVERY * SCHED_EVERY
    prefix, agg = "rs-%s-" % rid()[:8], "sched-%s" % rid()
    for k in range(SCHED_N):
        res = cl.call("CreateSchedule", pb.CreateScheduleRequest(
            id="%s%03d" % (prefix, k), definition_key=SCHED_KEY,
            aggregate=pb.Aggregate(type="order", id=agg),
            spec=pb.ScheduleSpec(interval="every %ds" % SCHED_EVERY,
                                 start_at=pb_ts(first), end_at=pb_ts(last)),
            policy=pb.SchedulePolicy(overlap=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
                                     catchup_window=dur(600)),
            request_id=rid()), actor="rep-scheduler")
        if not res.ok:
            raise SetupError("CreateSchedule failed: %s %s" % (res.name(), res.detail))
    say("%d schedules fire every %d s from %s to %s UTC" % (
        SCHED_N, SCHED_EVERY, time.strftime("%H:%M:%S", time.gmtime(first)),
        time.strftime("%H:%M:%S", time.gmtime(last))))
    return prefix, agg, first, last


def pb_ts(seconds):
    from google.protobuf import timestamp_pb2
    return timestamp_pb2.Timestamp(seconds=seconds)


def schedule_scenario(db_dsn, sched, faults, results):
    """Every fire time of the schedules, which fired through a replica's
    SIGKILL and a Postgres restart, started exactly once."""
    prefix, agg, first, last = sched
    per = (last - first) // SCHED_EVERY + 1
    want = SCHED_N * per
    name = "%d schedules every %d s through the faults: each of the %d fire times one run, " \
           "STARTED, and one instance" % (SCHED_N, SCHED_EVERY, want)
    like = "schedule_id LIKE '%s%%'" % prefix
    until, runs = time.monotonic() + BATCH_BUDGET, -1
    while time.monotonic() < until:
        runs = int(psql(db_dsn, "SELECT count(*) FROM schedule_runs WHERE " + like)[0][0])
        if runs >= want:
            break
        time.sleep(0.5)
    bad = [] if runs == want else ["%d runs, want %d" % (runs, want)]
    checks = [
        ("schedules without exactly %d runs" % per,
         "SELECT count(*) FROM (SELECT s.id FROM schedules s LEFT JOIN schedule_runs r ON "
         "r.tenant_id = s.tenant_id AND r.schedule_id = s.id WHERE s.id LIKE '%s%%' GROUP BY s.id "
         "HAVING count(r.nominal_at) <> %d) x" % (prefix, per)),
        ("runs not STARTED or without an instance",
         "SELECT count(*) FROM schedule_runs WHERE %s AND (outcome <> 1 OR instance_id IS NULL)"
         % like),
        ("runs outside the window or off the interval",
         "SELECT count(*) FROM schedule_runs WHERE %s AND (nominal_at < %d OR nominal_at > %d "
         "OR nominal_at %% %d <> 0)" % (like, first * 1000000, last * 1000000,
                                        SCHED_EVERY * 1000000)),
        ("runs whose instance does not exist",
         "SELECT count(*) FROM schedule_runs r LEFT JOIN instances i ON i.tenant_id = r.tenant_id "
         "AND i.id = r.instance_id WHERE r.%s AND i.id IS NULL" % like),
        ("instances beyond one per schedule and fire time",
         "SELECT count(*) - count(DISTINCT (variables_json::json->'schedule'->>'id', "
         "variables_json::json->'schedule'->>'nominalTime')) FROM instances "
         "WHERE aggregate_id = '%s'" % agg),
        ("instances without a run",
         "SELECT count(*) FROM instances i WHERE i.aggregate_id = '%s' AND NOT EXISTS (SELECT 1 "
         "FROM schedule_runs r WHERE r.tenant_id = i.tenant_id AND r.instance_id = i.id)" % agg),
    ]
    for what, sql in checks:
        n = int(psql(db_dsn, sql)[0][0])
        if n != 0:
            bad.append("%d %s" % (n, what))
    started = int(psql(db_dsn, "SELECT count(*) FROM instances WHERE aggregate_id = '%s'"
                               % agg)[0][0])
    if started != want:
        bad.append("%d instances started, want %d" % (started, want))
    faults.note("schedules: %d runs, %d instances of %d fire times" % (runs, started, want))
    results.append((name, want, bad))


# ---------------------------------------------------------------------------
# A for-each transition completed on every replica while one of them dies
# ---------------------------------------------------------------------------

FOREACH_N = 32         # items of the for-each
FOREACH_KEY = "rep-foreach"


FOREACH_CALL_KEY, FOREACH_PAY_KEY = "rep-foreach-call", "rep-foreach-pay"


def foreach_call_definitions(job_type):
    """The payment process (one job of job_type) and its caller, a
    for-each over a CALL of it whose children give back their index."""
    pay = pb.Definition(
        key=FOREACH_PAY_KEY, kind=pb.DEFINITION_KIND_NET, name="replicas: pay one line",
        places=[pb.Place(id="s", kind=pb.PLACE_KIND_START),
                pb.Place(id="e", kind=pb.PLACE_KIND_END)],
        transitions=[pb.Transition(id="charge", name="charge", trigger=pb.TRIGGER_AUTO,
                                   job_type=job_type)],
        arcs=[pb.Arc(source="s", target="charge"), pb.Arc(source="charge", target="e")])
    caller = pb.Definition(
        key=FOREACH_CALL_KEY, kind=pb.DEFINITION_KIND_NET, name="replicas: pay each line",
        places=[pb.Place(id="s", kind=pb.PLACE_KIND_START),
                pb.Place(id="e", kind=pb.PLACE_KIND_END)],
        transitions=[pb.Transition(id="each", name="each", trigger=pb.TRIGGER_CALL,
                                   call_definition_key=FOREACH_PAY_KEY,
                                   call_output_expression="{index}", for_each=".lines",
                                   for_each_output="charged")],
        arcs=[pb.Arc(source="s", target="each"), pb.Arc(source="each", target="e")])
    return [pay, caller]


def foreach_definition(job_type):
    return pb.Definition(
        key=FOREACH_KEY, kind=pb.DEFINITION_KIND_NET, name="replicas: charge each line",
        places=[pb.Place(id="s", kind=pb.PLACE_KIND_START),
                pb.Place(id="e", kind=pb.PLACE_KIND_END)],
        transitions=[pb.Transition(id="each", name="each", trigger=pb.TRIGGER_AUTO,
                                   job_type=job_type, for_each=".lines",
                                   for_each_output="charged")],
        arcs=[pb.Arc(source="s", target="each"), pb.Arc(source="each", target="e")])


def foreach_count(db_dsn, iid, kind):
    return int(psql(db_dsn, "SELECT count(*) FROM events WHERE instance_id = '%s' AND type = "
                            "'%s'" % (iid, kind))[0][0])


def foreach_worker(k, replicas, job_type, iid, db_dsn, stop):
    """Takes jobs of job_type (2 s leases) on any replica and completes them
    until stop is set; a completion refused with JOB_LEASE_LOST (its item
    withdrawn, or its lease lost with the replica) is expected."""
    cl = Client("foreach-%d" % k, replicas)
    while not stop.is_set():
        res = cl.call("ActivateJobs", pb.ActivateJobsRequest(
            job_type=job_type, worker="foreach-%d" % k, max_jobs=2,
            lease=dur(2), wait=dur(1),
            request_id=rid()))
        for j in (res.resp.jobs if res.ok else []):
            v = json.loads(j.variables_json)
            cl.call("CompleteJob", pb.CompleteJobRequest(
                job_key=j.key, variables_json=json.dumps({"index": v["item_index"]})),
                expected=("JOB_LEASE_LOST",))


def foreach_scenario(db_dsn, replicas, faults, results, calls=False):
    """One for-each of FOREACH_N items whose jobs 8 workers complete on all
    replicas at once (calls: each item a call child of one job); a replica
    is SIGKILLed once some items completed. Checked: every item completed
    once, the transition fired once, the outputs in item order."""
    name = "for-each of %d items%s completed across the replicas, one killed mid-way: every " \
           "item once, the join once, the outputs in item order" \
           % (FOREACH_N, " (call children)" if calls else "")
    cl = Client("foreach", replicas)
    job_type = "rep-each-" + rid()
    for d in (foreach_call_definitions(job_type) if calls else [foreach_definition(job_type)]):
        res = cl.call("DeployDefinition", pb.DeployDefinitionRequest(
            definition=d, request_id=rid()), actor="rep-deployer")
        if not res.ok:
            results.append((name, 0, ["DeployDefinition failed: %s %s"
                                      % (res.name(), res.detail)]))
            return
    lines = [{"sku": "L%d" % i} for i in range(FOREACH_N)]
    res = cl.call("StartInstance", pb.StartInstanceRequest(
        definition_key=FOREACH_CALL_KEY if calls else FOREACH_KEY,
        variables_json=json.dumps({"lines": lines}),
        request_id=rid()), actor="rep-shop")
    if not res.ok:
        results.append((name, 0, ["StartInstance failed: %s %s" % (res.name(), res.detail)]))
        return
    iid, stop = res.resp.instance.id, threading.Event()
    workers = [threading.Thread(target=foreach_worker,
                                args=(k, replicas, job_type, iid, db_dsn, stop))
               for k in range(8)]
    for t in workers:
        t.start()
    bad, until = [], time.monotonic() + 20
    while time.monotonic() < until and foreach_count(db_dsn, iid, "FOREACH_ITEM_COMPLETED") < 4:
        time.sleep(0.02)
    victim = replicas[1]
    pid, port = victim.proc.pid, victim.port
    victim.kill()
    faults.note("SIGKILL replica %d (pid %d) mid-for-each: %d items completed"
                % (victim.idx, pid, foreach_count(db_dsn, iid, "FOREACH_ITEM_COMPLETED")))
    time.sleep(KILL_DOWN)
    victim.start(port=port)
    until, status = time.monotonic() + BATCH_BUDGET, None
    while time.monotonic() < until:
        status = psql(db_dsn, "SELECT status FROM instances WHERE id = '%s'" % iid)[0][0]
        if status != "1":
            break
        time.sleep(0.3)
    stop.set()
    for t in workers:
        t.join(OP_BUDGET * 2)
    if status != "2":
        bad.append("instance %s: status %s, want COMPLETED" % (iid, status))
    per_item = psql(db_dsn, "SELECT (data_json::json->>'index'), count(*) FROM events WHERE "
                            "instance_id = '%s' AND type = 'FOREACH_ITEM_COMPLETED' GROUP BY 1"
                            % iid)
    if sorted(int(i) for i, n in per_item) != list(range(FOREACH_N)) or \
            any(n != "1" for i, n in per_item):
        bad.append("items completed: %r" % sorted(per_item)[:10])
    fired = foreach_count(db_dsn, iid, "TRANSITION_FIRED")
    if fired != 1:
        bad.append("TRANSITION_FIRED %d times" % fired)
    charged = json.loads(psql(db_dsn, "SELECT variables_json FROM instances WHERE id = '%s'"
                                      % iid)[0][0]).get("charged")
    if charged != [{"index": i} for i in range(FOREACH_N)]:
        bad.append("charged: %r" % (charged,))
    results.append((name, len(per_item), bad[:10]))
    number_events(db_dsn, replicas)


def load_history(dsn):
    # Ids compare with the schema's COLLATE "C" id columns; the rest (actors,
    # reasons) with its default-collation text columns.
    cols = ", ".join("%s %s" % (c, "bigint" if c in ("attempts", "t0", "t1") else
                                'text COLLATE "C"' if c in ID_COLS else "text") for c in HCOLS)
    psql(dsn, "CREATE TABLE rep_history (%s)" % cols)
    buf = io.StringIO()
    w = csv.writer(buf)
    for r in REC.rows:
        w.writerow([r[c] if r[c] != "" else None for c in HCOLS])
    psql(dsn, "COPY rep_history FROM STDIN WITH (FORMAT csv)", stdin=buf.getvalue())
    psql(dsn, "CREATE INDEX ON rep_history (task_id); CREATE INDEX ON rep_history (job_id); "
              "ANALYZE rep_history")


def check_sql(dsn, invariants, results):
    for name, count_sql, viol_sql in invariants:
        try:
            checked = int(psql(dsn, count_sql)[0][0])
            bad = psql(dsn, viol_sql, timeout=120)
        except Exception as e:
            results.append((name, 0, ["could not evaluate: %s" % e]))
            continue
        results.append((name, checked, ["|".join(r) for r in bad]))


def check_api_reads(replicas, results):
    """GetInstance/GetTask of sampled acknowledged writes, on every replica."""
    starts = [r for r in REC.rows if r["op"] == "START" and r["code"] == "OK"]
    ends = {r["root_id"] for r in REC.rows if r["op"] == "COMPLETE_END" and r["code"] == "OK"}
    done = [r for r in REC.rows if r["op"] in ("COMPLETE", "COMPLETE_END") and r["code"] == "OK"]
    rnd = random.Random(7)
    sample_s = rnd.sample(starts, min(40, len(starts)))
    sample_d = rnd.sample(done, min(40, len(done)))
    bad, n = [], 0
    md = [("x-api-key", API_KEY)]
    for rep in replicas:
        stub = rep.workflow()
        for r in sample_s:
            n += 1
            try:
                v = stub.GetInstance(pb.GetInstanceRequest(instance_id=r["instance_id"]),
                                     metadata=md, timeout=RPC_TIMEOUT)
                if r["root_id"] in ends and v.instance.status != pb.INSTANCE_STATUS_COMPLETED:
                    bad.append("replica %d: root %s ended by CompleteAndEnd has status %d"
                               % (rep.idx, r["root_id"], v.instance.status))
            except grpc.RpcError as e:
                bad.append("replica %d: GetInstance %s: %s" % (rep.idx, r["instance_id"],
                                                               e.code().name))
        for r in sample_d:
            n += 1
            try:
                t = stub.GetTask(pb.GetTaskRequest(task_id=r["task_id"]), metadata=md,
                                 timeout=RPC_TIMEOUT).task
                if t.status != pb.TASK_STATUS_DONE or t.completed_by != r["actor"]:
                    bad.append("replica %d: task %s status %d completed_by %r, acknowledged "
                               "for %s" % (rep.idx, t.id, t.status, t.completed_by, r["actor"]))
            except grpc.RpcError as e:
                bad.append("replica %d: GetTask %s: %s" % (rep.idx, r["task_id"], e.code().name))
    results.append(("API reads on every replica: sampled acknowledged starts and completions "
                    "(GetInstance, GetTask) agree with the history", n, bad))


def watch_all(rep, after=0):
    """(sequence, type name, instance_id) of WatchEvents(after, follow=false)."""
    stub = rep.workflow()
    out = []
    for m in stub.WatchEvents(pb.WatchEventsRequest(after_sequence=after, follow=False),
                              metadata=[("x-api-key", API_KEY)], timeout=60):
        e = m.event
        out.append((e.sequence, pb.EventType.Name(e.type)[len("EVENT_TYPE_"):], e.instance_id))
    return out


def check_watch(dsn, replicas, results):
    rows = psql(dsn, "SELECT sequence, type, instance_id FROM events WHERE sequence IS NOT NULL "
                     "ORDER BY sequence", timeout=120)
    table = [(int(s), t, i) for s, t, i in rows]
    for rep in replicas:
        name = ("WatchEvents(after 0, follow=false) on replica %d: every event once, in "
                "increasing order, equal to the table" % rep.idx)
        bad = []
        try:
            got = watch_all(rep)
        except grpc.RpcError as e:
            results.append((name, 0, ["stream failed: %s %s" % (e.code().name, e.details())]))
            continue
        seqs = [g[0] for g in got]
        if any(b <= a for a, b in zip(seqs, seqs[1:])):
            bad.append("sequences not strictly increasing")
        if len(set(seqs)) != len(seqs):
            bad.append("%d duplicate sequences" % (len(seqs) - len(set(seqs))))
        if len(got) != len(table):
            bad.append("stream has %d events, table %d" % (len(got), len(table)))
        if seqs != list(range(1, len(seqs) + 1)):
            missing = sorted(set(range(1, max(seqs or [0]) + 1)) - set(seqs))
            bad.append("sequences are not 1..%d (missing e.g. %s)" % (len(seqs), missing[:5]))
        diff = [(g, t) for g, t in zip(got, table) if g != t]
        if diff:
            bad.append("%d events differ from the table, e.g. %s" % (len(diff), diff[:3]))
        results.append((name, len(got), bad))
    # Resuming in the middle returns exactly the rest.
    if table:
        mid = table[len(table) // 2][0]
        name = "WatchEvents resumed after sequence %d returns exactly the rest" % mid
        try:
            got = watch_all(replicas[0], after=mid)
            rest = [t for t in table if t[0] > mid]
            results.append((name, len(rest), [] if got == rest else
                            ["got %d events, expected %d" % (len(got), len(rest))]))
        except grpc.RpcError as e:
            results.append((name, 0, ["stream failed: %s %s" % (e.code().name, e.details())]))


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


class Faults:
    def __init__(self):
        self.log = []

    def note(self, msg):
        self.log.append((time.monotonic(), msg))
        say(msg)


def main():
    global OPTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="path of the workflowd binary")
    parser.add_argument("--proto", required=True, help="the project's proto/ directory")
    parser.add_argument("--work", required=True, help="work directory (stubs, replica logs)")
    parser.add_argument("--seconds", type=float, default=40.0, help="load duration (>= 30)")
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    OPTS = parser.parse_args()
    dsn, ctl = os.environ.get("WF_TEST_PG_DSN"), os.environ.get("WF_TEST_PG_CTL")
    if not dsn or not ctl:
        print("skipped: WF_TEST_PG_DSN and WF_TEST_PG_CTL are not both set (./test.sh sets them)")
        return wf_testkit.SKIP
    OPTS.server = os.path.abspath(OPTS.server)
    OPTS.proto = os.path.abspath(OPTS.proto)
    OPTS.work = os.path.abspath(OPTS.work)
    OPTS.seconds = max(30.0, OPTS.seconds)
    if not os.access(OPTS.server, os.X_OK):
        print("not an executable: %s" % OPTS.server, file=sys.stderr)
        return 2
    # Waits and the watchdog stretch under sanitizers and load; the
    # watchdog stays within ctest's 400 s.
    global READY_TIMEOUT, BATCH_BUDGET, SUITE_TIMEOUT
    scale = wf_testkit.time_scale(OPTS.server)
    READY_TIMEOUT *= scale
    BATCH_BUDGET *= scale
    SUITE_TIMEOUT = min(SUITE_TIMEOUT * scale, 370.0)
    os.makedirs(OPTS.work, exist_ok=True)
    for old in os.listdir(OPTS.work):
        if old.startswith("replica-") and old.endswith(".log"):
            os.remove(os.path.join(OPTS.work, old))

    db = "wf_replicas_%s" % uuid.uuid4().hex[:10]
    db_dsn = dsn_with_db(dsn, db)
    replicas = []
    state = {"db_created": False, "pg_stopped": False}

    def cleanup():
        for r in replicas:
            try:
                r.close()
            except Exception:
                pass
        if state["pg_stopped"] or not pg_running():
            say("cleanup: starting Postgres again")
            try:
                pg_ctl("start", "-w", "-t", "60")
            except Exception as e:
                print("cleanup: could not start Postgres: %s" % e, file=sys.stderr)
        if state["db_created"] and not OPTS.keep_db:
            try:
                psql(dsn, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % db)
            except Exception as e:
                print("cleanup: could not drop %s: %s" % (db, e), file=sys.stderr)

    def watchdog():
        print("\nrun_replicas.py: the suite exceeded %d s; cleaning up" % SUITE_TIMEOUT,
              file=sys.stderr, flush=True)
        try:
            cleanup()
        finally:
            os._exit(3)

    timer = threading.Timer(SUITE_TIMEOUT, watchdog)
    timer.daemon = True
    timer.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(dsn, db, db_dsn, replicas, state)
    except SetupError as e:
        print("setup failed: %s" % e, file=sys.stderr)
        return 2
    finally:
        timer.cancel()
        cleanup()


def run(dsn, db, db_dsn, replicas, state):
    generate_stubs(OPTS.proto, OPTS.work)
    psql(dsn, "CREATE DATABASE %s" % db)
    state["db_created"] = True
    for i in range(3):
        replicas.append(Replica(i + 1, db_dsn))
    # Released together: they migrate the empty database concurrently.
    failures = []

    def start(r):
        try:
            r.start()
        except Exception as e:
            failures.append(str(e))

    starters = [threading.Thread(target=start, args=(r,)) for r in replicas]
    for t in starters:
        t.start()
    for t in starters:
        t.join(READY_TIMEOUT * 3 + 5)
    if failures or any(r.proc is None or r.proc.poll() is not None or r.stub is None
                       for r in replicas):
        raise SetupError("not every replica started (%s); logs in %s"
                         % ("; ".join(failures), OPTS.work))
    say("3 replicas serving on 127.0.0.1:%s, database %s"
        % (",".join(str(r.port) for r in replicas), db))

    # Probe NET support once (before the load; not counted in the statistics).
    probe = Client("probe", replicas)
    req = pb.DeployDefinitionRequest(definition=net_definition(), request_id=rid())
    until = time.monotonic() + 10
    while True:
        res = probe._attempt("DeployDefinition", req, "rep-deployer", RPC_TIMEOUT)
        if not probe._transient(res) or time.monotonic() > until:
            break
        time.sleep(0.2)
    net_enabled = res.ok
    if res.code == SC.UNIMPLEMENTED:
        say("net workflows: n/a (DeployDefinition is UNIMPLEMENTED)")
    elif not res.ok:
        raise SetupError("DeployDefinition of the net failed: %s %s" % (res.name(), res.detail))
    else:
        say("net workflows: enabled (%s version %d)" % (NET_KEY, res.resp.definition.version))

    stop, workers_stop = threading.Event(), threading.Event()
    threads, workers = [], []
    if net_enabled:
        plan = [("referral", referral_flow, 4), ("claim", claim_flow, 2), ("net", net_flow, 2)]
    else:
        plan = [("referral", referral_flow, 5), ("claim", claim_flow, 5)]
    for kind, fn, count in plan:
        for i in range(count):
            name = "%s-%d" % (kind, i)
            threads.append(run_thread(flow_loop, name, fn, Client(name, replicas), i, stop))
    if net_enabled:
        for i in range(2):
            name = "worker-%d" % i
            workers.append(run_thread(job_worker, name, Client(name, replicas), name,
                                      workers_stop))
    watch_stop, watched = threading.Event(), []
    watcher = run_thread(event_watcher, "watcher", Client("watcher", replicas), watch_stop,
                         watched)
    n_threads = len(threads) + len(workers) + 1
    faults = Faults()
    sched = schedules_create(replicas)
    t_load = time.monotonic()
    faults.note("load started: %d client threads" % n_threads)

    def at(offset):
        delay = t_load + offset - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    # (a) SIGKILL one replica, start it again on the same port.
    victim = replicas[1]
    at(OPTS.seconds * 0.25)
    pid, port = victim.proc.pid, victim.port
    victim.kill()
    faults.note("SIGKILL replica %d (pid %d, port %d)" % (victim.idx, pid, port))
    at(OPTS.seconds * 0.25 + KILL_DOWN)
    t = time.monotonic()
    victim.start(port=port)
    REC.phase = "until the Postgres restart"
    faults.note("replica %d restarted (pid %d, port %d%s), serving after %.2f s"
                % (victim.idx, victim.proc.pid, victim.port,
                   "" if victim.port == port else ", a NEW port", time.monotonic() - t))

    # (b) Postgres stopped (fast) and started again.
    at(OPTS.seconds * 0.55)
    state["pg_stopped"] = True
    r = pg_ctl("stop", "-m", "fast", "-w", "-t", "60")
    faults.note("Postgres stop -m fast (exit %d)" % r.returncode)
    time.sleep(PG_DOWN)
    r = pg_ctl("start", "-w", "-t", "60")
    if r.returncode != 0:
        raise SetupError("Postgres did not start again: %s" % r.stderr)
    state["pg_stopped"] = False
    REC.phase = "after the Postgres restart"
    faults.note("Postgres start -w done")

    at(OPTS.seconds)
    stop.set()
    faults.note("load stopping: flows finish their current step")
    for th in threads:
        th.join(OP_BUDGET * 2)
    workers_stop.set()
    for th in workers:
        th.join(OP_BUDGET)
    for rep in replicas:
        if REC.answers.get(("after the Postgres restart", rep.idx), [0, 0])[1] == 0:
            REC.violation("replica %d gave no OK answer after the Postgres restart" % rep.idx)
    if REC.answers.get(("until the Postgres restart", victim.idx), [0, 0])[1] == 0:
        REC.violation("replica %d gave no OK answer between its restart and the Postgres "
                      "restart" % victim.idx)
    alive = [th.name for th in threads + workers if th.is_alive()]
    if alive:
        REC.violation("client threads still running after the load: %s" % alive)
    faults.note("load stopped")

    # Settle: timers of the last net instances fire; replicas go idle.
    if net_enabled:
        until = time.monotonic() + NET_DELAY + 12
        while time.monotonic() < until:
            left = int(psql(db_dsn, "SELECT count(*) FROM timers m JOIN instances i ON "
                                    "i.id = m.instance_id WHERE i.status = 1")[0][0])
            if left == 0:
                break
            time.sleep(0.5)
    time.sleep(1.0)
    for rep in replicas:
        if rep.proc.poll() is not None:
            REC.violation("replica %d exited by itself (status %s); log %s"
                          % (rep.idx, rep.proc.returncode, rep.logs[-1]))
    # Reading events runs the sequencer: read until nothing is left unnumbered.
    until = time.monotonic() + 15
    while time.monotonic() < until:
        try:
            watch_all(replicas[0], after=0)
        except grpc.RpcError:
            pass
        if int(psql(db_dsn, "SELECT count(*) FROM events WHERE sequence IS NULL")[0][0]) == 0:
            break
        time.sleep(0.2)
    # The live watcher catches up, then stops.
    top = int(psql(db_dsn, "SELECT coalesce(max(sequence), 0) FROM events")[0][0])
    until = time.monotonic() + 15
    while time.monotonic() < until and (max(watched) if watched else 0) < top:
        time.sleep(0.2)
    watch_stop.set()
    watcher.join(10)
    faults.note("replicas idle; checking invariants")

    results = []
    schedule_scenario(db_dsn, sched, faults, results)
    fanout_scenario(db_dsn, replicas, faults, results)
    batch_scenario(db_dsn, replicas, faults, results)
    foreach_scenario(db_dsn, replicas, faults, results)
    foreach_scenario(db_dsn, replicas, faults, results, calls=True)
    check_watch(db_dsn, replicas, results)
    bad = []
    if watched != list(range(1, len(watched) + 1)) or len(watched) != top:
        bad.append("received %d events (%d distinct, max %d); the table has %d"
                   % (len(watched), len(set(watched)), max(watched or [0]), top))
    results.append(("live WatchEvents(follow=true) during the faults, resumed after the last "
                    "sequence %d times: every event exactly once, 1..N in order"
                    % getattr(REC, "watch_resumes", 0), len(watched), bad))
    check_api_reads(replicas, results)
    # Indexes for the checks only (the database is dropped afterwards).
    psql(db_dsn, "CREATE INDEX ON instances (parent_id); CREATE INDEX ON instances (root_id); "
                 "CREATE INDEX ON tasks (instance_id); CREATE INDEX ON tasks (root_id); "
                 "ANALYZE instances; ANALYZE tasks")
    load_history(db_dsn)
    psql(db_dsn, EV_SQL, timeout=120)
    check_sql(db_dsn, INVARIANTS, results)
    if net_enabled:
        check_sql(db_dsn, NET_INVARIANTS, results)
    errors_in_logs = {}
    for rep in replicas:
        for path in rep.logs:
            with open(path, errors="replace") as f:
                for line in f:
                    if '"level":"error"' in line or "AddressSanitizer" in line or \
                            "runtime error" in line:
                        errors_in_logs.setdefault(path, []).append(line.strip()[:300])
    info = psql(db_dsn, """SELECT
        (SELECT count(*) FROM instances), (SELECT count(*) FROM tasks),
        (SELECT count(*) FROM events),
        (SELECT count(*) FROM rep_ev WHERE type = 'JOB_ACTIVATED'),
        (SELECT count(*) FROM rep_ev a WHERE a.type = 'JOB_ACTIVATED' AND NOT EXISTS
            (SELECT 1 FROM rep_history h WHERE h.op = 'ACTIVATED' AND h.job_key = a.job_key)),
        (SELECT count(*) FROM rep_ev WHERE type = 'JOB_LEASE_EXPIRED'),
        (SELECT count(*) FROM (SELECT job_id FROM rep_ev WHERE type = 'JOB_ACTIVATED'
            GROUP BY job_id HAVING count(*) > 1) x),
        (SELECT count(*) FROM events WHERE type = 'JOB_ACTIVATED'
            AND data_json::json->>'jobId' IS NULL)""")[0]
    summary(db, replicas, n_threads, net_enabled, faults, t_load, results, errors_in_logs, info)
    failed = sum(1 for _, _, bad in results if bad) + len(REC.violations)
    return 1 if failed else 0


def summary(db, replicas, n_threads, net_enabled, faults, t_load, results, errors_in_logs,
            info):
    p = print
    p("\n===== replicas under faults: summary =====")
    p("replicas: 3 workflowd on 127.0.0.1 (ports %s), database %s, %d client threads, "
      "%.0f s of load" % (",".join(str(r.port) for r in replicas), db, n_threads,
                          OPTS.seconds))
    p("net workflows: %s" % ("enabled" if net_enabled else "n/a (DeployDefinition "
                                                           "UNIMPLEMENTED)"))
    p("faults (seconds since the load started):")
    for t, msg in faults.log:
        p("  %6.1f  %s" % (t - t_load, msg))
    p("operations (final outcomes; retried = operations that needed another attempt):")
    p("  %-16s %7s %7s %8s %7s %8s %8s" % ("rpc", "calls", "ok", "refused", "failed",
                                           "retried", "retries"))
    tot = dict(calls=0, ok=0, refused=0, failed=0, retried=0, retries=0)
    for m in sorted(REC.stats):
        s = REC.stats[m]
        for k in tot:
            tot[k] += s[k]
        p("  %-16s %7d %7d %8d %7d %8d %8d" % (m, s["calls"], s["ok"], s["refused"],
                                               s["failed"], s["retried"], s["retries"]))
    p("  %-16s %7d %7d %8d %7d %8d %8d" % ("total", tot["calls"], tot["ok"], tot["refused"],
                                           tot["failed"], tot["retried"], tot["retries"]))
    p("  transient errors retried, by phase: %s" % ("; ".join(
        "%s: %s %d" % (ph, k, n) for (ph, k), n in sorted(REC.transient.items())) or "none"))
    p("  expected refusals: %s" % (", ".join(
        "%s %d" % kv for kv in sorted(REC.refusals.items())) or "none"))
    p("answers per replica and phase (attempts / OK; refusals and transient errors are "
      "not OK):")
    for phase in ("until the replica restart", "until the Postgres restart",
                  "after the Postgres restart"):
        p("  %-27s %s" % (phase + ":", "  ".join(
            "r%d %d/%d" % ((i,) + tuple(REC.answers.get((phase, i), [0, 0])))
            for i in (1, 2, 3))))
    p("flows: %s" % "; ".join("%s: %s" % (f, ", ".join("%s %d" % kv for kv in sorted(d.items())))
                              for f, d in sorted(REC.flows.items())))
    p("database: %s instances, %s tasks, %s events" % (info[0], info[1], info[2]))
    if net_enabled:
        p("jobs: %s activations (%s not received by any worker: a lost ActivateJobs answer "
          "that a retry could not replay), %s jobs activated more than once, "
          "%s JOB_LEASE_EXPIRED events" % (info[3], info[4], info[6], info[5]))
        notes = []
        if int(info[6]) > 0 and int(info[5]) == 0:
            notes.append("%s jobs were activated again after their lease expired, yet no "
                         "JOB_LEASE_EXPIRED event was written (design section 4 lists it)"
                         % info[6])
        if int(info[7]) > 0:
            notes.append("%s JOB_ACTIVATED events name the job as job_id/job_key, not in "
                         "lowerCamelCase (jobId) as Event.data_json promises" % info[7])
        for n in notes:
            p("  note (not counted as a violation): %s" % n)
    p("invariants:")
    for name, checked, bad in results:
        p("  [%s] %s (%d checked%s)" % ("ok" if not bad else "FAIL", name, checked,
                                         "" if not bad else ", %d violations" % len(bad)))
        for b in bad[:5]:
            p("         %s" % b)
    if REC.violations:
        p("  [FAIL] client-side checks (%d violations)" % len(REC.violations))
        for v in REC.violations[:15]:
            p("         %s" % v)
    else:
        p("  [ok] client-side checks (every operation reached a final answer; claim races "
          "had one winner; each join answered one `next`)")
    if errors_in_logs:
        p("replica logs with error lines:")
        for path, lines in errors_in_logs.items():
            p("  %s: %d lines, e.g. %s" % (path, len(lines), lines[0]))
    failed = sum(1 for _, _, bad in results if bad) + (1 if REC.violations else 0)
    p("result: %s" % ("PASS" if not failed else "FAIL (%d invariants violated)" % failed))
    p("replica logs: %s" % OPTS.work)


if __name__ == "__main__":
    sys.exit(main())
