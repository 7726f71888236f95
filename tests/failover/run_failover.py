#!/usr/bin/python3
"""Failover of the Postgres primary under load, without restarting workflowd.

The suite builds its own pair of clusters with Postgres's tools, in a
scratch directory under $TMPDIR, on ports free at run time
(tests/support/pg.sh):

  * a primary, durable (fsync, synchronous_commit and full_page_writes on),
    and a streaming standby made from it with pg_basebackup -R; the
    primary's synchronous_standby_names names the standby, so a commit is
    acknowledged only once the standby has it;
  * one workflowd whose DATABASE_URL lists both hosts:
    postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?target_session_attrs=read-write

Client threads run two flows in a loop, every call with its own request_id
(a call that fails transiently is sent again, unchanged, with the same
request_id, for at most OP_BUDGET seconds):

  steps   StartInstance of a STEPS definition (a job, then a wait for a
          signal of its aggregate) -> ActivateJobs -> CompleteJob ->
          SendSignal (CORRELATED) -> the instance completes;
  task    StartInstance (AD_HOC) -> AssignTo USER -> CompleteTask.

After LOAD_BEFORE seconds the primary fails, by --mode:

  kill    every process of the primary is killed with SIGKILL (a crash);
  freeze  every process of the primary is stopped with SIGSTOP (a host that
          hangs: its port still accepts TCP connections, nothing answers).

PROMOTE_AFTER seconds later the standby is promoted (pg_ctl promote), as a
failover manager would. The load goes on until LOAD_AFTER seconds after the
first OK answer to a call sent after the failure. Then:

  * the same workflowd process serves (it was not restarted) and Health is
    SERVING;
  * no client operation failed for good (each got OK or an expected answer
    within its budget);
  * every acknowledged call is on the new primary: its request record, and
    its effect (the instance, the task, the completion, the job's
    completion, the delivered signal; instances whose signal was
    acknowledged are COMPLETED);
  * replaying every acknowledged call with its request_id returns an
    answer identical to the first one.

It prints the time to recover: from the failure (and from the promotion)
to the first OK answer of a call sent after the failure.

Skips (exit 77) without WF_TEST_PG_DSN (the Postgres suites run when the
run was given a database; this one builds its own) or without the Postgres
binaries. Exit status: 0 passed, 1 violations, 2 setup error, 3 the suite
exceeded its time bound. Every process it starts is killed at the end, and
the scratch directory removed (the logs are copied to --work first).
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import wf_testkit  # noqa: E402  (the Python suites' shared kit)

PG_SH = os.path.join(HERE, "..", "support", "pg.sh")
PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")

CLIENTS = 6            # client threads
RPC_TIMEOUT = 5.0      # seconds, one attempt of a call
OP_BUDGET = 40.0       # seconds, every attempt of one operation
LOAD_BEFORE = 4.0      # seconds of load before the failure
PROMOTE_AFTER = 1.0    # seconds from the failure to the promotion
LOAD_AFTER = 4.0       # seconds of load after the service answered again
RECOVER_LIMIT = 30.0   # seconds: no OK answer this long after the failure fails the suite
SUITE_TIMEOUT = 200.0  # hard bound of the whole run (ctest allows 260)
API_KEY = "failover-key-8c1e6f2d-secret"
STANDBY_NAME = "wf_standby"

SC = grpc.StatusCode
TRANSIENT = (SC.UNAVAILABLE, SC.DEADLINE_EXCEEDED, SC.CANCELLED)

T0 = time.monotonic()
pb = STUBS = None


def say(msg):
    print("[%6.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


class SetupError(Exception):
    pass


# ---------------------------------------------------------------------------
# The two clusters
# ---------------------------------------------------------------------------


def run(cmd, timeout=90, check=True):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    if check and res.returncode != 0:
        raise SetupError("%s failed (%d): %s%s" % (" ".join(cmd), res.returncode, res.stdout,
                                                   res.stderr))
    return res


def psql(dsn, sql, timeout=30):
    """Rows of one statement (lists of strings; NULL = ''). The statement goes
    on stdin: one that lists thousands of request ids passes what a command
    line may hold."""
    res = subprocess.run([wf_testkit.psql_path(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At",
                          "-F", "\x1f", "-d", dsn], input=sql.rstrip().rstrip(";") + ";\n", capture_output=True, text=True,
                         timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError("psql failed (%s): %s" % (sql.strip()[:200], res.stderr.strip()))
    return [line.split("\x1f") for line in res.stdout.splitlines() if line != ""]


def children(parent):
    """The pids whose parent is parent (from /proc/PID/stat)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(parent):
            out.append(int(name))
    return out


class Cluster:
    def __init__(self, scratch, name):
        self.dir = os.path.join(scratch, name)
        self.port = None
        self.dsn = None
        self.pids = []  # the processes of a failed primary
        self.shmid = None

    def ctl(self, *args, timeout=90, check=True):
        return run(["sh", PG_SH, "ctl", self.dir] + list(args), timeout=timeout, check=check)

    def start_primary(self):
        for attempt in range(3):
            self.port = wf_testkit.free_port()
            res = run(["sh", PG_SH, "start", self.dir, str(self.port), "--durable"], check=False)
            if res.returncode == 0:
                self.dsn = res.stdout.strip().splitlines()[-1]
                return
            shutil.rmtree(self.dir, ignore_errors=True)
        raise SetupError("the primary did not start: %s" % res.stderr)

    def start_standby(self, primary):
        for attempt in range(3):
            self.port = wf_testkit.free_port()
            res = run(["sh", PG_SH, "standby", self.dir, str(self.port), str(primary.port),
                       STANDBY_NAME], check=False)
            if res.returncode == 0:
                self.dsn = res.stdout.strip().splitlines()[-1]
                return
            self.ctl("stop", "-m", "immediate", "-w", check=False)
            shutil.rmtree(self.dir, ignore_errors=True)
        raise SetupError("the standby did not start: %s" % res.stderr)

    def processes(self):
        """The postmaster (postmaster.pid) and its children; notes the id of
        its System V shared memory segment (left behind by a killed
        postmaster) in self.shmid."""
        try:
            with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
                lines = f.read().splitlines()
            pm = int(lines[0])
            if len(lines) > 6 and len(lines[6].split()) == 2:
                self.shmid = lines[6].split()[1]
        except (OSError, ValueError, IndexError):
            return []
        return [pm] + children(pm)

    def fail(self, mode):
        """Kills (SIGKILL) or freezes (SIGSTOP) every process of the cluster,
        postmaster first, so that it cannot restart its children. Returns
        the moment the postmaster got the signal."""
        self.pids = self.processes()
        if not self.pids:
            raise SetupError("no processes found for the primary in %s" % self.dir)
        sig = signal.SIGKILL if mode == "kill" else signal.SIGSTOP
        for pid in self.pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        at = time.monotonic()
        # A child forked just now (a new backend) is caught by a second pass.
        for pid in self.processes():
            if pid not in self.pids:
                self.pids.append(pid)
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        return at

    def destroy(self):
        """Stops the cluster: SIGKILL for the processes of a failed one
        (frozen ones too), pg_ctl stop for a running one."""
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.pids and self.shmid is not None:
            until = time.monotonic() + 10
            while time.monotonic() < until and any(os.path.exists("/proc/%d" % p)
                                                   for p in self.pids):
                time.sleep(0.05)
            res = run(["ipcrm", "-m", self.shmid], check=False, timeout=10)
            if res.returncode != 0:
                say("ipcrm -m %s: %s" % (self.shmid, res.stderr.strip()))
        if not self.pids and os.path.exists(os.path.join(self.dir, "data", "postmaster.pid")):
            self.ctl("stop", "-m", "immediate", "-w", "-t", "30", check=False, timeout=60)


def wait_sync_standby(primary, until):
    while time.monotonic() < until:
        rows = psql(primary.dsn, "SELECT sync_state FROM pg_stat_replication "
                                 "WHERE application_name = '%s'" % STANDBY_NAME)
        if rows and rows[0][0] == "sync":
            return
        time.sleep(0.2)
    raise SetupError("the standby did not become a synchronous standby")


# ---------------------------------------------------------------------------
# workflowd
# ---------------------------------------------------------------------------


class Server:
    def __init__(self, work, database_url):
        self.work = work
        self.database_url = database_url
        self.proc = None
        self.port = None
        self.channel = None
        self.log = os.path.join(work, "workflowd.log")

    def start(self, binary):
        for attempt in range(3):
            self.port = wf_testkit.free_port()
            env = wf_testkit.server_env(
                WF_ENV="development", WF_API_KEYS=API_KEY, DATABASE_URL=self.database_url,
                WF_ADDR="127.0.0.1:%d" % self.port, WF_LOG_LEVEL="warn", WF_THREADS="4")
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen([binary], env=env, stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=log)
            ch = wf_testkit.new_channel("127.0.0.1:%d" % self.port)
            if wf_testkit.wait_serving(STUBS, ch, self.proc, self.port, 20.0):
                self.channel = ch
                return
            ch.close()
            self.kill()
        raise SetupError("workflowd did not become ready; see %s" % self.log)

    def serving(self):
        health = STUBS.health_grpc.HealthStub(self.channel)
        try:
            r = health.Check(STUBS.health_pb2.HealthCheckRequest(service=""), timeout=2.0)
            return r.status == STUBS.health_pb2.HealthCheckResponse.SERVING
        except grpc.RpcError:
            return False

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


# ---------------------------------------------------------------------------
# Calls, their history and the clients
# ---------------------------------------------------------------------------


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.acked = []       # (method, request, actor, response, t_sent, t_answer)
        self.violations = []
        self.transient = {}   # code name -> count
        self.calls = 0
        self.fail_at = None   # monotonic time of the failure
        self.first_ok = None  # first OK answer of a call sent after the failure

    def ok(self, method, req, actor, resp, t_sent, t_answer):
        with self.lock:
            self.acked.append((method, req, actor, resp, t_sent, t_answer))
            if (self.fail_at is not None and t_sent >= self.fail_at and
                    (self.first_ok is None or t_answer < self.first_ok)):
                self.first_ok = t_answer

    def violation(self, msg):
        with self.lock:
            self.violations.append(msg)

    def count(self, code):
        with self.lock:
            self.calls += 1
            if code != SC.OK:
                self.transient[code.name] = self.transient.get(code.name, 0) + 1


HIST = History()


def md(actor, rid):
    out = [("x-api-key", API_KEY), ("x-request-id", rid)]
    if actor:
        out.append(("x-actor-id", actor))
    return out


def transient(code, err):
    if code in TRANSIENT:
        return True
    # A transport failure without the server's status details.
    if code in (SC.INTERNAL, SC.UNKNOWN):
        md_ = err.trailing_metadata() or ()
        return not any(k == "grpc-status-details-bin" for k, _ in md_)
    return False


class Failed(Exception):
    pass


def call(stub, method, req, actor, stop=None):
    """Sends req until it is answered for good; records the OK answer.
    Raises Failed when the answer is an error or the budget runs out."""
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        t_sent = time.monotonic()
        try:
            resp = getattr(stub, method)(req, metadata=md(actor, req.request_id),
                                         timeout=RPC_TIMEOUT)
            t_answer = time.monotonic()
            HIST.count(SC.OK)
            HIST.ok(method, req, actor, resp, t_sent, t_answer)
            return resp
        except grpc.RpcError as e:
            code = e.code()
            HIST.count(code)
            if not transient(code, e):
                raise Failed("%s by %s: %s %s" % (method, actor, code.name, e.details()))
            if time.monotonic() - start > OP_BUDGET:
                raise Failed("%s by %s: still %s after %.0f s (%d attempts)" % (
                    method, actor, code.name, OP_BUDGET, attempt))
        time.sleep(min(0.05 * attempt, 0.3) * (0.5 + random.random()))


def rid():
    return str(uuid.uuid4())


def steps_key(i):
    return "fo-steps-%d" % i


def job_type(i):
    return "fo-prep-%d" % i


def deploy(stub, i):
    from google.protobuf import duration_pb2
    d = pb.Definition(key=steps_key(i), kind=pb.DEFINITION_KIND_STEPS, steps=[
        pb.Step(id="prepare", job=pb.JobStep(job_type=job_type(i))),
        pb.Step(id="carrier", await_signal=pb.AwaitStep(
            signal_name="picked_up", correlation=pb.CORRELATION_AGGREGATE,
            timeout=duration_pb2.Duration(seconds=3600)))])
    call(stub, "DeployDefinition", pb.DeployDefinitionRequest(definition=d, request_id=rid()),
         "fo-dev")


def steps_flow(stub, i, n, run_id):
    from google.protobuf import duration_pb2
    order = "fo-%s-%d-%d" % (run_id, i, n)
    agg = pb.Aggregate(type="fo-order", id=order)
    inst = call(stub, "StartInstance", pb.StartInstanceRequest(
        definition_key=steps_key(i), variables_json=json.dumps({"n": n}), aggregate=agg,
        request_id=rid()), "fo-shop-%d" % i).instance
    # The job of this instance: this client's job type has no other job
    # open (the flows of one client run one after the other).
    got = call(stub, "ActivateJobs", pb.ActivateJobsRequest(
        job_type=job_type(i), worker="fo-worker-%d" % i, max_jobs=1,
        lease=duration_pb2.Duration(seconds=120), wait=duration_pb2.Duration(seconds=2),
        request_id=rid()), None)
    if len(got.jobs) != 1 or got.jobs[0].instance_id != inst.id:
        raise Failed("ActivateJobs for %s returned %s" % (
            inst.id, [(j.id, j.instance_id) for j in got.jobs]))
    call(stub, "CompleteJob", pb.CompleteJobRequest(
        job_key=got.jobs[0].key, variables_json=json.dumps({"prepared": n}),
        request_id=rid()), None)
    sent = call(stub, "SendSignal", pb.SendSignalRequest(
        name="picked_up", aggregate=agg, payload_json=json.dumps({"tracking": order}),
        signal_id="sig-" + order, request_id=rid()), "fo-carrier")
    if sent.outcome != pb.SIGNAL_OUTCOME_CORRELATED or list(sent.instance_ids) != [inst.id]:
        raise Failed("SendSignal to %s answered outcome %d for %s" % (
            order, sent.outcome, list(sent.instance_ids)))


def task_flow(stub, i, n, run_id):
    lead, clerk = "fo-lead-%d" % i, "fo-clerk-%d" % i
    inst = call(stub, "StartInstance", pb.StartInstanceRequest(
        definition_key="fo-adhoc", variables_json=json.dumps({"n": n}), request_id=rid()),
        lead).instance
    assigned = call(stub, "AssignTo", pb.AssignToRequest(
        parent_instance_id=inst.id, title="check %s-%d-%d" % (run_id, i, n),
        assignee=pb.Assignee(kind=pb.ASSIGNEE_KIND_USER, ids=[clerk]), request_id=rid()), lead)
    call(stub, "CompleteTask", pb.CompleteTaskRequest(
        task_id=assigned.task.id, variables_json=json.dumps({"checked": n}), request_id=rid()),
        clerk)


def client(stub, i, run_id, stop):
    n = 0
    try:
        while not stop.is_set():
            n += 1
            (steps_flow if n % 2 else task_flow)(stub, i, n, run_id)
    except Failed as e:
        HIST.violation("client %d: %s" % (i, e))
        stop.set()
    except Exception:
        HIST.violation("client %d crashed: %s" % (i, traceback.format_exc()))
        stop.set()


# ---------------------------------------------------------------------------
# Checks after the failover
# ---------------------------------------------------------------------------


def sql_list(values):
    return ",".join("'%s'" % v.replace("'", "''") for v in values) or "NULL"


def check_effects(dsn):
    """Every acknowledged call's request record and effect is on the new
    primary. Returns the violations."""
    out = []
    acked = list(HIST.acked)
    rids = [r.request_id for (_, r, _, _, _, _) in acked]
    have = {row[0] for row in psql(dsn, "SELECT request_id FROM idempotency WHERE request_id "
                                        "IN (%s)" % sql_list(rids))}
    for (method, req, actor, resp, _, _) in acked:
        if req.request_id not in have:
            out.append("the request record of an acknowledged %s (%s) is missing"
                       % (method, req.request_id))

    def ids(method, get):
        return [get(req, resp) for (m, req, _, resp, _, _) in acked if m == method]

    started = ids("StartInstance", lambda q, r: r.instance.id)
    found = {row[0] for row in psql(dsn, "SELECT id FROM instances WHERE id IN (%s)"
                                         % sql_list(started))}
    out += ["acknowledged instance %s is missing" % x for x in started if x not in found]

    tasks = ids("AssignTo", lambda q, r: r.task.id)
    found = {row[0] for row in psql(dsn, "SELECT id FROM tasks WHERE id IN (%s)"
                                         % sql_list(tasks))}
    out += ["acknowledged task %s is missing" % x for x in tasks if x not in found]

    done = {(q.task_id): a for (m, q, a, r, _, _) in acked if m == "CompleteTask"}
    rows = psql(dsn, "SELECT id, status, completed_by FROM tasks WHERE id IN (%s)"
                     % sql_list(list(done)))
    state = {r[0]: (r[1], r[2]) for r in rows}
    for task, actor in done.items():
        if state.get(task) != (str(pb.TASK_STATUS_DONE), actor):
            out.append("acknowledged completion of task %s by %s: the task is %s"
                       % (task, actor, state.get(task)))

    jobs = {}
    for (m, q, a, r, _, _) in acked:
        if m == "ActivateJobs":
            for j in r.jobs:
                jobs[j.key] = j
    completed = [jobs[q.job_key] for (m, q, a, r, _, _) in acked if m == "CompleteJob"]
    rows = psql(dsn, "SELECT data_json::jsonb->>'jobId' FROM events WHERE type = 'JOB_COMPLETED' "
                     "AND instance_id IN (%s)" % sql_list([j.instance_id for j in completed]))
    found = {r[0] for r in rows}
    out += ["acknowledged completion of job %s has no JOB_COMPLETED event" % j.id
            for j in completed if j.id not in found]

    signalled = ids("SendSignal", lambda q, r: (q.signal_id, r.instance_ids[0]))
    rows = psql(dsn, "SELECT signal_id, outcome FROM signals WHERE signal_id IN (%s)"
                     % sql_list([s for s, _ in signalled]))
    outcome = {r[0]: r[1] for r in rows}
    rows = psql(dsn, "SELECT id, status FROM instances WHERE id IN (%s)"
                     % sql_list([x for _, x in signalled]))
    status = {r[0]: r[1] for r in rows}
    for sig, inst in signalled:
        if outcome.get(sig) != str(pb.SIGNAL_OUTCOME_CORRELATED):
            out.append("acknowledged signal %s: delivery log outcome %s" % (sig, outcome.get(sig)))
        if status.get(inst) != str(pb.INSTANCE_STATUS_COMPLETED):
            out.append("instance %s, whose signal was acknowledged, has status %s"
                       % (inst, status.get(inst)))
    return out


def check_replays(stub):
    """Every acknowledged call, sent again with its request_id, answers as
    the first time. Returns (replays, violations)."""
    out = []
    acked = list(HIST.acked)
    lock = threading.Lock()

    def worker(part):
        for (method, req, actor, resp, _, _) in part:
            try:
                again = getattr(stub, method)(req, metadata=md(actor, req.request_id),
                                              timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                with lock:
                    out.append("replay of %s %s failed: %s %s" % (
                        method, req.request_id, e.code().name, e.details()))
                continue
            if again != resp:
                with lock:
                    out.append("replay of %s %s answered differently:\n  first: %s\n  again: %s"
                               % (method, req.request_id, str(resp)[:400], str(again)[:400]))

    threads = [threading.Thread(target=worker, args=(acked[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(acked), out


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def main():
    global pb, STUBS
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", choices=("kill", "freeze"), default="kill")
    opts = ap.parse_args()

    if not wf_testkit.pg_dsn():
        print("skipped: WF_TEST_PG_DSN is not set")
        return wf_testkit.SKIP
    for tool in ("initdb", "pg_ctl", "pg_basebackup"):
        if not os.access(os.path.join(PG_BIN, tool), os.X_OK):
            print("skipped: %s not found in %s" % (tool, PG_BIN))
            return wf_testkit.SKIP

    # The recovery bound and the watchdog stretch under sanitizers and load;
    # the watchdog stays within ctest's 260 s.
    global RECOVER_LIMIT, SUITE_TIMEOUT
    scale = wf_testkit.time_scale(os.path.abspath(opts.server))
    RECOVER_LIMIT *= scale
    SUITE_TIMEOUT = min(SUITE_TIMEOUT * scale, 245.0)

    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    STUBS = wf_testkit.generate_stubs(opts.proto, opts.work)
    pb = STUBS.wf_pb2

    # Short paths (unix socket directories) and readable by the postgres
    # OS user when we run as root.
    scratch = tempfile.mkdtemp(prefix="wf-failover-")
    os.chmod(scratch, 0o755)
    primary, standby = Cluster(scratch, "primary"), Cluster(scratch, "standby")
    held = {}  # "server": the workflowd, once started
    done = threading.Event()

    def cleanup():
        if "server" in held:
            held["server"].kill()
        for c in (primary, standby):
            try:
                c.destroy()
            except Exception as e:
                say("cleanup of %s: %s" % (c.dir, e))
        for c in (primary, standby):
            log = os.path.join(c.dir, "server.log")
            if os.path.exists(log):
                shutil.copy(log, os.path.join(opts.work, "postgres-%s.log"
                                              % os.path.basename(c.dir)))
        shutil.rmtree(scratch, ignore_errors=True)

    def watchdog():
        if not done.wait(SUITE_TIMEOUT):
            say("FAILED: the suite ran longer than %.0f s" % SUITE_TIMEOUT)
            try:
                cleanup()
            finally:
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        return run_suite(opts, primary, standby, held)
    except SetupError as e:
        say("setup error: %s" % e)
        return 2
    finally:
        cleanup()
        done.set()


def run_suite(opts, primary, standby, held):
    say("mode %s: starting a durable primary and a synchronous standby" % opts.mode)
    primary.start_primary()
    standby.start_standby(primary)
    psql(primary.dsn, "ALTER SYSTEM SET synchronous_standby_names = '%s'" % STANDBY_NAME)
    psql(primary.dsn, "SELECT pg_reload_conf()")
    wait_sync_standby(primary, time.monotonic() + 30)
    settings = psql(primary.dsn, "SELECT current_setting('fsync'), "
                                 "current_setting('synchronous_commit')")[0]
    if settings != ["on", "on"]:
        raise SetupError("the primary is not durable: fsync, synchronous_commit = %s" % settings)
    url = ("postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres"
           "?target_session_attrs=read-write" % (primary.port, standby.port))
    say("primary 127.0.0.1:%d, standby 127.0.0.1:%d (sync); DATABASE_URL=%s"
        % (primary.port, standby.port, url))

    server = Server(opts.work, url)
    held["server"] = server
    server.start(opts.server)
    pid = server.proc.pid
    stub = STUBS.wf_grpc.WorkflowServiceStub(server.channel)
    for i in range(CLIENTS):
        deploy(stub, i)

    run_id = uuid.uuid4().hex[:8]
    stop = threading.Event()
    threads = [threading.Thread(target=client, args=(stub, i, run_id, stop))
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    stop.wait(LOAD_BEFORE)
    before = len(HIST.acked)

    fail_at = primary.fail(opts.mode)
    with HIST.lock:
        HIST.fail_at = fail_at
    say("%d calls acknowledged so far; primary %s (%d processes)"
        % (before, "killed (SIGKILL)" if opts.mode == "kill" else "frozen (SIGSTOP)",
           len(primary.pids)))
    stop.wait(PROMOTE_AFTER)
    promote_at = time.monotonic()
    standby.ctl("promote", "-w", "-t", "30")
    promoted = time.monotonic()
    say("standby promoted (pg_ctl promote took %.2f s)" % (promoted - promote_at))

    deadline = fail_at + RECOVER_LIMIT
    while not stop.is_set() and time.monotonic() < deadline:
        with HIST.lock:
            first = HIST.first_ok
        if first is not None and time.monotonic() > first + LOAD_AFTER:
            break
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=OP_BUDGET + RPC_TIMEOUT + 5)
        if t.is_alive():
            HIST.violation("a client thread did not stop")

    violations = list(HIST.violations)
    first = HIST.first_ok
    if first is None:
        violations.append("no call sent after the failure was answered OK within %.0f s"
                          % RECOVER_LIMIT)
    else:
        say("RECOVERY: first OK answer %.2f s after the primary failed, %.2f s after the "
            "promotion was issued (%.2f s after it completed)"
            % (first - fail_at, first - promote_at, first - promoted))
    if server.proc.poll() is not None or server.proc.pid != pid:
        violations.append("workflowd exited (status %s): it must survive the failover"
                          % server.proc.poll())
    elif not server.serving():
        violations.append("workflowd is not SERVING after the failover")
    say("%d calls, %d acknowledged (%d after the failure); transient answers: %s"
        % (HIST.calls, len(HIST.acked), len(HIST.acked) - before,
           json.dumps(HIST.transient, sort_keys=True) or "none"))

    in_recovery = psql(standby.dsn, "SELECT pg_is_in_recovery()")[0][0]
    if in_recovery != "f":
        violations.append("the promoted standby is still in recovery")
    lost = check_effects(standby.dsn)
    say("effects of %d acknowledged calls checked on the new primary: %d missing"
        % (len(HIST.acked), len(lost)))
    violations += lost
    if server.proc.poll() is None:
        n, bad = check_replays(stub)
        say("%d acknowledged calls replayed with their request_id: %d differed" % (n, len(bad)))
        violations += bad

    if violations:
        say("FAILED: %d violations" % len(violations))
        for v in violations[:40]:
            print("  - " + v)
        return 1
    say("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
