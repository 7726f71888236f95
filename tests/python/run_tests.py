#!/usr/bin/python3
"""End-to-end tests of workflowd, driven the way a generated Python client would.

What it covers (each failing call is checked for its gRPC code AND for the
google.rpc.ErrorInfo{reason, domain "workflow.v1"} carried in the
`grpc-status-details-bin` trailer):

* health: Check "", "workflow.v1.WorkflowService", "liveness" -> SERVING,
  an unknown service -> NOT_FOUND, Watch sends SERVING first;
* auth (WF_API_KEYS="<k1>,<k2>=tenant-b"): missing key, wrong key, malformed
  or duplicated key metadata, `authorization: Bearer`, keys bound to a tenant
  (TENANT_FORBIDDEN), and that no key text reaches the server's log;
* API keys from a file (ApiKeysFileTests, again on Postgres as
  ApiKeysFilePgTests): WF_API_KEYS_FILE in the layout of a Kubernetes
  Secret volume; a new key refused, then accepted once the file holds it
  beside the old one, the old one refused once removed (and the web console
  session opened with it ended), a malformed content refused as a whole
  with the last good set kept and the refusal logged without a key; the
  start refuses WF_API_KEYS with WF_API_KEYS_FILE, and a malformed or
  missing file;
* actor: ACTOR_MISSING on an RPC that acts for a person, invalid x-actor-id;
* protocol: accepted calls never fail with UNAUTHENTICATED/PERMISSION_DENIED
  (whether or not the RPC is implemented yet), unknown methods answer
  UNIMPLEMENTED at once, malformed protobuf -> INVALID_ARGUMENT, oversized
  requests -> RESOURCE_EXHAUSTED TOO_LARGE, expired deadlines ->
  DEADLINE_EXCEEDED, x-request-id is echoed in the initial metadata;
* startup: a dev server without keys is open; a production server without
  WF_API_KEYS exits with code 2 and says why;
* default client (DefaultClientTests): a channel without options (4 MiB
  received a message, every gRPC client's default) reads every answer:
  ActivateJobs{max_jobs: 4} over four jobs of 3 MiB leases one an answer
  and no job stays leased to nobody, an instance at the variables bound
  reads beside its job, ListInstances pages of 3 MiB roots stop by bytes;
  again on Postgres (DefaultClientPgTests);
* waiting for a result (AwaitResultTests, AwaitResultPgTests): a starter
  whose StartInstance with await_result answers with the completed instance
  once the test, as the worker, completes its job; AwaitInstance timing out
  with the view, then seeing the END place marked;
* one channel: while a slow call (a guard running into the expression time
  limit) is in flight on a channel, Health/Check and cheap calls on the same
  channel answer in < 0.3 s, and 32 calls at once on it all complete (memory
  store, and Postgres when WF_TEST_PG_DSN is set);
* shutdown: SIGTERM during a burst of calls only yields answers or retryable
  statuses (UNAVAILABLE, CANCELLED), Health.Watch sees NOT_SERVING, and the
  process exits 0 within 10 s;
* referrals (ReferralFlowTests): start -> AssignTo USERS with a join ->
  complete all -> the on_all_completed referral in the next inbox ->
  CompleteAndEnd; REQUEST_ID_REUSED, TASK_ALREADY_CLAIMED, INVALID_JSON and
  another tenant's ids; again on Postgres (ReferralFlowPgTests) when
  WF_TEST_PG_DSN is set;
* correlate or start (CorrelateOrStartTests): SendSignal with `start` to an
  aggregate starts one instance (STARTED) whose first wait consumes the
  signal, correlates with a waiting one, buffers for a running one, replays
  a request_id, and 8 concurrent senders (each on its own channel) start
  exactly one instance; again on Postgres (CorrelateOrStartPgTests, also
  through two server processes);
* suspend and resume (SuspendResumeTests): a signal sent to a suspended
  instance is buffered with its TTL counting, the resume consumes it, a
  request_id replays, an ended instance is refused; again on Postgres
  (SuspendResumePgTests);
* job priority (JobPriorityTests): a transition's job_priority_expression
  over the start variables, UpdateJob with its request_id replay and
  refusals, ActivateJobs by priority, fairness keys sharing a pass (a
  backlog of one key and the single jobs of two others); again on Postgres
  (JobPriorityPgTests);
* for-each (ForEachTests): an order fans out per line item, one job each
  with its item and index, the charges collected in item order, the
  progress in GetInstance, FOREACH_NOT_ARRAY at the start; again on
  Postgres (ForEachPgTests);
* migration (MigrateInstanceTests): a claimed task moved to a new version
  through a place mapping, its problems listed first (dry run, then the
  refusal MIGRATION_INVALID with google.rpc.BadRequest), the request_id
  replay, INSTANCE_MIGRATED, the next step of the new version; again on
  Postgres through two server processes (MigrateInstancePgTests), both
  replicas migrating the same instance at once;
* schedules (ScheduleTests): CreateSchedule with a BUFFER_ONE policy and
  its next fire times, INVALID_CRON, TriggerSchedule with a request_id
  replayed, the runs followed page by page with ListScheduleRuns, each
  started instance carrying its schedule; BackfillSchedule over three past
  hours, replayed by its request_id, repeated without starting anything,
  and refused over a range too large (BACKFILL_TOO_LARGE); again on
  Postgres (SchedulePgTests).

Every server is a workflowd process started here, on 127.0.0.1 and a free
port (never 50051), with its stderr captured in the work directory; all of
them are killed at the end, also when a test fails.

Run (Debian's python3, which has python3-grpcio and python3-protobuf):

    /usr/bin/python3 tests/python/run_tests.py --server BUILD/server/workflowd \\
        --proto proto --work BUILD/tests/python [--wfctl BUILD/client/wfctl] \\
        [unittest args, e.g. -k Auth]

Stubs are generated into WORK/gen with the system `protoc` and
/usr/bin/grpc_python_plugin at every run (tests/support/wf_testkit.py).
--store memory runs the classes on the memory store, --store pg only the
*PgTests classes (CTest test_python / test_python_pg). Exit status 0 = all
tests passed, 77 = skipped (--store pg without WF_TEST_PG_DSN).
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse
import uuid

import grpc
from google.protobuf import duration_pb2
from google.protobuf import timestamp_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import wf_testkit  # noqa: E402  (the Python suites' shared kit)

RPC_TIMEOUT = 5.0  # seconds, every unary call (times the time scale: rpc_timeout)
READY_TIMEOUT = 10.0  # seconds for a server to answer SERVING (times TIME_SCALE)
TIME_SCALE = 1  # wall-clock bounds stretch by it (wf_testkit.time_scale; set in main)
SUITE_TIMEOUT = 180.0  # hard bound of the whole run
DOMAIN = "workflow.v1"
SERVICE = "workflow.v1.WorkflowService"

# Distinctive key texts, so that "the key never appears in the log" cannot
# match by accident (a two-letter key could appear inside any word).
KEY1 = "k1-3e8c5d1f-secret"
KEY2 = "k2-9a4b7c2e-secret"
WRONG_KEY = "k9-wrong-0b1d2f-secret"

# Set by main(): command line and the generated modules.
OPTS = None
wf_pb2 = wf_grpc = status_pb2 = error_details_pb2 = health_pb2 = health_grpc = None
STUBS = None  # wf_testkit.generate_stubs' namespace
reflection_modules = []  # (pb2, pb2_grpc) for reflection v1 and v1alpha

SC = grpc.StatusCode


# ---------------------------------------------------------------------------
# Stubs
# ---------------------------------------------------------------------------


def generate_stubs(proto_dir, work):
    """Compiles the contract, health.proto and reflection into WORK/gen
    (wf_testkit) and imports them."""
    global wf_pb2, wf_grpc, status_pb2, error_details_pb2, health_pb2, health_grpc, STUBS
    STUBS = wf_testkit.generate_stubs(proto_dir, work, reflection=True)
    wf_pb2, wf_grpc = STUBS.wf_pb2, STUBS.wf_grpc
    status_pb2, error_details_pb2 = STUBS.status_pb2, STUBS.error_details_pb2
    health_pb2, health_grpc = STUBS.health_pb2, STUBS.health_grpc
    reflection_modules.extend(STUBS.reflection)


# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------

_servers = []  # every process started, for the final cleanup
_servers_lock = threading.Lock()


free_port = wf_testkit.free_port


def server_env(dev=True, keys=None, **extra):
    """The environment of a workflowd: ours minus any WF_*/DATABASE_URL."""
    if dev:
        extra.setdefault("WF_ENV", "development")
    if keys is not None:
        extra["WF_API_KEYS"] = keys
    return wf_testkit.server_env(**extra)


class Server:
    """One workflowd process on 127.0.0.1:<free port>."""

    _seq = 0

    def __init__(self, name, env):
        Server._seq += 1
        self.name = name
        self.env = dict(env)
        self.log_path = os.path.join(OPTS.work, "server-%02d-%s.log" % (Server._seq, name))
        self.proc = None
        self.port = None
        self.channel = None

    @property
    def target(self):
        return "127.0.0.1:%d" % self.port

    def spawn(self):
        """Starts the process (no readiness wait); returns the Popen."""
        self.port = free_port()
        self.env["WF_ADDR"] = self.target
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen([OPTS.server], env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        finally:
            log.close()
        with _servers_lock:
            _servers.append(self)
        return self.proc

    def start(self):
        """Starts the server and waits until Health.Check("") says SERVING."""
        for attempt in range(3):  # the free port may be taken meanwhile
            self.spawn()
            self.channel = self.new_channel()
            if self._wait_ready():
                return self
            self.channel.close()
            if self.proc.poll() != 1:  # 1 = could not start (e.g. address in use)
                break
        self.kill()
        raise RuntimeError("server %s did not become ready; log %s:\n%s"
                           % (self.name, self.log_path, self.log()[-2000:]))

    def _wait_ready(self):
        return wf_testkit.wait_serving(STUBS, self.channel, self.proc, self.port,
                                       READY_TIMEOUT * TIME_SCALE)

    tls_root = None  # PEM of the CA to trust when the server speaks TLS

    def new_channel(self):
        """A channel with its own connection (not shared with other channels)
        that retries a lost connection quickly."""
        options = list(wf_testkit.CHANNEL_OPTIONS)
        if self.tls_root is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=self.tls_root)
            options.append(("grpc.ssl_target_name_override", "localhost"))
            return grpc.secure_channel(self.target, creds, options=options)
        return grpc.insecure_channel(self.target, options=options)

    def workflow(self):
        return wf_grpc.WorkflowServiceStub(self.channel)

    def health(self):
        return health_grpc.HealthStub(self.channel)

    def log(self):
        with open(self.log_path, "r", errors="replace") as f:
            return f.read()

    def wait_for_log(self, needles, timeout=3.0):
        """Waits until every string in needles is in the log (lines are
        written right after the response is sent, so they may lag a bit)."""
        until = time.monotonic() + timeout * TIME_SCALE
        while True:
            text = self.log()
            missing = [n for n in needles if n not in text]
            if not missing or time.monotonic() > until:
                return text, missing
            time.sleep(0.05)

    def kill(self):
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def kill_all_servers():
    with _servers_lock:
        servers = list(_servers)
    for s in servers:
        try:
            s.kill()
        except Exception:  # cleanup must go on
            pass


def pg_dsn_or_skip(what):
    """The test cluster's DSN; skips the Postgres run of what without one."""
    dsn = wf_testkit.pg_dsn()
    if dsn is None:
        raise unittest.SkipTest("WF_TEST_PG_DSN is not set: the Postgres run of "
                                "%s is skipped (./test.sh sets it)" % what)
    return dsn


def start_server(testcase_cls, name, **env_kw):
    """Starts a server for a test class and registers its cleanup."""
    srv = Server(name, server_env(**env_kw)).start()
    testcase_cls.addClassCleanup(srv.kill)
    return srv


# ---------------------------------------------------------------------------
# Calls and errors
# ---------------------------------------------------------------------------


def md(key=None, bearer=None, tenant=None, actor=None, request_id=None, extra=()):
    """Call metadata from the design's keys (None = not sent)."""
    out = []
    if key is not None:
        out.append(("x-api-key", key))
    if bearer is not None:
        out.append(("authorization", "Bearer " + bearer))
    if tenant is not None:
        out.append(("x-tenant-id", tenant))
    if actor is not None:
        out.append(("x-actor-id", actor))
    if request_id is not None:
        out.append(("x-request-id", request_id))
    out.extend(extra)
    return out


class Outcome:
    """The result of one unary call, successful or not."""

    def __init__(self, code, response=None, call=None, error=None, elapsed=0.0):
        self.code = code
        self.response = response
        self.call = call  # grpc.Call (the RpcError itself on failure)
        self.error = error
        self.elapsed = elapsed
        self.status = decode_status(call) if error is not None else None
        self.info = error_info(self.status)

    @property
    def reason(self):
        return self.info.reason if self.info is not None else None

    def initial_metadata(self):
        return dict(self.call.initial_metadata() or ()) if self.call is not None else {}

    def __repr__(self):
        details = self.error.details() if self.error is not None else ""
        return "<%s reason=%s %r>" % (self.code.name, self.reason, details)


def rpc_timeout():
    """RPC_TIMEOUT stretched by TIME_SCALE, or by the load average now when
    the machine got busier since the suite started."""
    try:
        now = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        now = 1.0
    return RPC_TIMEOUT * max(TIME_SCALE, now, 1.0)


def invoke(method, request, metadata=(), timeout=None):
    """Calls a unary multi-callable and returns an Outcome (never raises
    grpc.RpcError). The deadline is rpc_timeout() unless given."""
    if timeout is None:
        timeout = rpc_timeout()
    t0 = time.monotonic()
    try:
        resp, call = method.with_call(request, metadata=metadata, timeout=timeout)
        return Outcome(SC.OK, response=resp, call=call, elapsed=time.monotonic() - t0)
    except grpc.RpcError as e:
        return Outcome(e.code(), call=e, error=e, elapsed=time.monotonic() - t0)


def decode_status(call):
    """The google.rpc.Status of the grpc-status-details-bin trailer, or None."""
    for k, v in call.trailing_metadata() or ():
        if k == "grpc-status-details-bin":
            st = status_pb2.Status()
            st.ParseFromString(v)
            return st
    return None


def status_detail(status, cls):
    """The first detail of type cls (a google.rpc message class) inside a
    google.rpc.Status, or None."""
    if status is None:
        return None
    for any_msg in status.details:
        if any_msg.Is(cls.DESCRIPTOR):
            detail = cls()
            any_msg.Unpack(detail)
            return detail
    return None


def error_info(status):
    """The google.rpc.ErrorInfo inside a google.rpc.Status, or None."""
    return status_detail(status, error_details_pb2.ErrorInfo)


def bad_request(status):
    """The google.rpc.BadRequest inside a google.rpc.Status, or None."""
    return status_detail(status, error_details_pb2.BadRequest)


def raw_method(channel, path):
    """A unary multi-callable that sends and receives raw bytes."""
    return channel.unary_unary(path, request_serializer=None, response_deserializer=None)


# What an accepted GetTask/ClaimTask of an unknown id may answer, whether the
# RPC is built yet or not: code -> the reason it must carry.
UNKNOWN_TASK_ANSWERS = {
    SC.NOT_FOUND: "TASK_NOT_FOUND",
    SC.UNIMPLEMENTED: "UNIMPLEMENTED",
}
UNKNOWN_TASK_ID = "00000000-0000-7000-8000-00000000dead"


class WorkflowTestCase(unittest.TestCase):
    """Assertions shared by the suites."""

    def assert_error(self, outcome, code, reason):
        """code, plus an ErrorInfo with this reason in the workflow.v1 domain."""
        self.assertEqual(outcome.code, code, "unexpected outcome %r" % outcome)
        self.assertIsNotNone(outcome.status, "no grpc-status-details-bin trailer in %r" % outcome)
        self.assertEqual(outcome.status.code, code.value[0],
                         "google.rpc.Status.code differs from the call's status")
        self.assertIsNotNone(outcome.info, "no google.rpc.ErrorInfo in the status details")
        self.assertEqual(outcome.info.domain, DOMAIN)
        self.assertEqual(outcome.info.reason, reason, "unexpected outcome %r" % outcome)

    def assert_one_of(self, outcome, answers):
        """OK, or one of the {code: reason} answers (reason checked too)."""
        if outcome.code == SC.OK:
            return
        self.assertIn(outcome.code, answers, "unexpected outcome %r" % outcome)
        self.assert_error(outcome, outcome.code, answers[outcome.code])

    def assert_accepted(self, outcome, answers=UNKNOWN_TASK_ANSWERS):
        """The interceptors let the call through: never an auth failure."""
        self.assertNotIn(outcome.code, (SC.UNAUTHENTICATED, SC.PERMISSION_DENIED),
                         "call refused: %r" % outcome)
        self.assert_one_of(outcome, answers)

    def get_unknown_task(self, srv, metadata=()):
        return invoke(srv.workflow().GetTask,
                      wf_pb2.GetTaskRequest(task_id=UNKNOWN_TASK_ID), metadata)


# ---------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------


class HealthTests(WorkflowTestCase):

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "health")

    def check(self, service):
        return invoke(self.srv.health().Check, health_pb2.HealthCheckRequest(service=service))

    def test_check_known_services_serving(self):
        for service in ("", SERVICE, "liveness"):
            with self.subTest(service=service):
                out = self.check(service)
                self.assertEqual(out.code, SC.OK, repr(out))
                self.assertEqual(out.response.status, health_pb2.HealthCheckResponse.SERVING)

    def test_check_unknown_service_not_found(self):
        # The health protocol's answer; it belongs to grpc.health.v1, not to
        # the workflow.v1 error domain, so only the code is the contract.
        out = self.check("no.such.Service")
        self.assertEqual(out.code, SC.NOT_FOUND, repr(out))

    def test_check_needs_no_key_on_keyed_server(self):
        srv = Server("health-keyed", server_env(keys=KEY1)).start()
        self.addCleanup(srv.kill)
        out = invoke(srv.health().Check, health_pb2.HealthCheckRequest(service=""))
        self.assertEqual(out.code, SC.OK, repr(out))

    def test_watch_sends_serving_first(self):
        stream = self.srv.health().Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
        try:
            first = next(stream)
            self.assertEqual(first.status, health_pb2.HealthCheckResponse.SERVING)
        finally:
            stream.cancel()

    def test_watch_unknown_service_reports_service_unknown(self):
        # Watch does not fail for an unknown service: it says SERVICE_UNKNOWN.
        stream = self.srv.health().Watch(health_pb2.HealthCheckRequest(service="nope"),
                                         timeout=10)
        try:
            first = next(stream)
            self.assertEqual(first.status, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
        finally:
            stream.cancel()


# ---------------------------------------------------------------------------
# API keys and tenants
# ---------------------------------------------------------------------------


class AuthTests(WorkflowTestCase):

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "auth", keys="%s,%s=tenant-b" % (KEY1, KEY2))
        cls.request_ids = []

    def call(self, **md_kw):
        rid = "auth-%s-%d" % (self.id().rsplit(".", 1)[-1], len(self.request_ids))
        self.request_ids.append(rid)
        return self.get_unknown_task(self.srv, md(request_id=rid, **md_kw))

    def test_no_key_unauthenticated(self):
        self.assert_error(self.call(), SC.UNAUTHENTICATED, "API_KEY_MISSING")

    def test_wrong_key_unauthenticated(self):
        self.assert_error(self.call(key=WRONG_KEY), SC.UNAUTHENTICATED, "API_KEY_INVALID")
        self.assert_error(self.call(bearer=WRONG_KEY), SC.UNAUTHENTICATED, "API_KEY_INVALID")

    def test_malformed_or_duplicated_key_metadata(self):
        out = self.call(extra=[("authorization", "Basic " + KEY1)])
        self.assert_error(out, SC.UNAUTHENTICATED, "API_KEY_INVALID")
        out = self.call(extra=[("x-api-key", KEY1), ("x-api-key", KEY1)])
        self.assert_error(out, SC.UNAUTHENTICATED, "API_KEY_INVALID")

    def test_valid_key_accepted(self):
        self.assert_accepted(self.call(key=KEY1))
        self.assert_accepted(self.call(bearer=KEY1))
        # A key bound to no tenant may act in any tenant.
        self.assert_accepted(self.call(key=KEY1, tenant="tenant-a"))

    def test_tenant_bound_key(self):
        out = self.call(key=KEY2, tenant="tenant-a")
        self.assert_error(out, SC.PERMISSION_DENIED, "TENANT_FORBIDDEN")
        self.assert_accepted(self.call(key=KEY2))
        self.assert_accepted(self.call(key=KEY2, tenant="tenant-b"))

    def test_tenant_id_malformed(self):
        out = self.call(key=KEY1, tenant="no spaces allowed")
        self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        out = self.call(key=KEY1, extra=[("x-tenant-id", "a"), ("x-tenant-id", "b")])
        self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    def test_zz_keys_never_logged(self):
        # Runs last in this class (name order): every call above is logged.
        for kw in ({"key": KEY1}, {"bearer": KEY2}, {"key": WRONG_KEY}, {"bearer": WRONG_KEY}):
            self.call(**kw)
        text, missing = self.srv.wait_for_log(self.request_ids)
        self.assertEqual(missing, [], "calls missing from the access log")
        for secret in (KEY1, KEY2, WRONG_KEY):
            self.assertNotIn(secret, text, "an API key appears in the server log")


# ---------------------------------------------------------------------------
# API keys from a file that rotates (WF_API_KEYS_FILE)
# ---------------------------------------------------------------------------


class KeyDir:
    """A folder laid out as the kubelet mounts a Secret: FOLDER/api-keys is a
    link to ..data/api-keys, and ..data a link to a folder of the current
    content; write() makes a new such folder and swaps ..data over the old
    one with a rename, as the kubelet does when the Secret changes."""

    def __init__(self, name):
        self.root = os.path.join(OPTS.work, "%s-%s" % (name, uuid.uuid4().hex[:8]))
        os.makedirs(self.root)
        self.version = 0
        self.path = os.path.join(self.root, "api-keys")

    def write(self, content):
        self.version += 1
        target = "..%d" % self.version
        os.makedirs(os.path.join(self.root, target))
        with open(os.path.join(self.root, target, "api-keys"), "w") as f:
            f.write(content)
        tmp = os.path.join(self.root, "..data_tmp")
        os.symlink(target, tmp)
        os.rename(tmp, os.path.join(self.root, "..data"))
        if not os.path.islink(self.path):
            os.symlink("..data/api-keys", self.path)

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


KEY_OLD = "kold-5c1e9a7b-secret"
KEY_NEW = "knew-8d2f4c6a-secret"
KEY_THIRD = "kthird-1b7e3d9f-secret"


class ApiKeysFileTests(WorkflowTestCase):
    """WF_API_KEYS_FILE: a key rotates without a restart. The new key is
    refused, then added beside the old one and accepted once the server has
    read the file (the calls are repeated until then, within a bound); the
    old key removed is refused, and a web console session opened with it
    ends; a content that breaks a rule keeps the last good set and is
    logged without a key; the start refuses both settings at once and a
    malformed file."""

    RELOAD_BOUND = 10.0  # seconds for a rewrite to take effect (times TIME_SCALE)

    @classmethod
    def start_keyed_server(cls, name, **env):
        return start_server(cls, name, **env)

    @classmethod
    def setUpClass(cls):
        cls.keys = KeyDir("keys")
        cls.addClassCleanup(cls.keys.remove)
        cls.keys.write(KEY_OLD + "\n")
        cls.console_port = free_port()
        cls.srv = cls.start_keyed_server(
            "keys-file", WF_API_KEYS_FILE=cls.keys.path,
            WF_CONSOLE_ADDR="127.0.0.1:%d" % cls.console_port)
        # The console listens once the gRPC server serves, a moment later.
        if not wf_testkit.wait_port(cls.srv.proc, cls.console_port,
                                    time.monotonic() + READY_TIMEOUT * TIME_SCALE):
            raise RuntimeError("the console of %s did not listen; log:\n%s"
                               % (cls.srv.name, cls.srv.log()[-2000:]))

    def call(self, key, tenant=None):
        return self.get_unknown_task(self.srv, md(key=key, tenant=tenant))

    def assert_refused(self, key):
        self.assert_error(self.call(key), SC.UNAUTHENTICATED, "API_KEY_INVALID")

    def wait_until(self, what, predicate):
        """Repeats predicate until it holds, for at most RELOAD_BOUND."""
        until = time.monotonic() + self.RELOAD_BOUND * TIME_SCALE
        while not predicate():
            if time.monotonic() > until:
                self.fail("%s: not within %.0f s" % (what, self.RELOAD_BOUND * TIME_SCALE))
            time.sleep(0.1)

    def accepted(self, key):
        return self.call(key).code not in (SC.UNAUTHENTICATED, SC.PERMISSION_DENIED)

    def console(self, method, path, body=None, cookie=None):
        """One request to the web console: (status, headers)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.console_port, timeout=rpc_timeout())
        headers = {"Origin": "http://127.0.0.1:%d" % self.console_port}
        data = None
        if body is not None:
            data = urllib.parse.urlencode(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if cookie is not None:
            headers["Cookie"] = cookie
        try:
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()

    def test_rotation(self):
        self.assert_accepted(self.call(KEY_OLD))
        self.assert_refused(KEY_NEW)
        status, h = self.console("POST", "/login", {"api_key": KEY_OLD, "actor": "ann"})
        self.assertEqual(status, 303)
        cookie = h["set-cookie"].split(";")[0]
        self.assertEqual(self.console("GET", "/instances", cookie=cookie)[0], 200)

        # The new key beside the old one, bound to a tenant.
        self.keys.write("%s\n%s=tenant-n\n" % (KEY_OLD, KEY_NEW))
        self.wait_until("the new key accepted", lambda: self.accepted(KEY_NEW))
        self.assert_accepted(self.call(KEY_OLD))
        self.assert_error(self.call(KEY_NEW, tenant="tenant-a"), SC.PERMISSION_DENIED,
                          "TENANT_FORBIDDEN")

        # The old key removed: refused, and its console session ends.
        self.keys.write("%s=tenant-n\n" % KEY_NEW)
        self.wait_until("the old key refused", lambda: not self.accepted(KEY_OLD))
        self.assert_refused(KEY_OLD)
        self.assert_accepted(self.call(KEY_NEW))
        status, h = self.console("GET", "/instances", cookie=cookie)
        self.assertEqual((status, h.get("location")), (303, "/login"))

        # A content that breaks a rule (a key with a blank) is refused as a
        # whole: the last good set stays, and the log names the entry.
        self.keys.write("%s=tenant-n\n%s\n%s with-blank\n" % (KEY_NEW, KEY_THIRD, KEY_THIRD))
        text, missing = self.srv.wait_for_log(
            ["is refused: WF_API_KEYS_FILE entry 3 (line 3) must have a key of printable ASCII"],
            timeout=self.RELOAD_BOUND * TIME_SCALE)
        self.assertEqual(missing, [], "the refusal is not logged")
        self.assert_accepted(self.call(KEY_NEW))
        self.assert_refused(KEY_THIRD)
        self.assert_refused(KEY_OLD)

        # A good content again: it is read.
        self.keys.write(KEY_THIRD + "\n")
        self.wait_until("the third key accepted", lambda: self.accepted(KEY_THIRD))
        self.assert_refused(KEY_NEW)
        for key in (KEY_OLD, KEY_NEW, KEY_THIRD):
            self.assertNotIn(key, self.srv.log(), "an API key appears in the server log")

    def run_to_exit(self, name, env):
        srv = Server(name, env)
        proc = srv.spawn()
        self.addCleanup(srv.kill)
        try:
            rc = proc.wait(timeout=10 * TIME_SCALE)
        except subprocess.TimeoutExpired:
            self.fail("%s kept running; it should have refused to start" % name)
        return rc, srv.log()

    def test_start_refusals(self):
        rc, log = self.run_to_exit("keys-both", server_env(
            keys=KEY_OLD, WF_API_KEYS_FILE=self.keys.path))
        self.assertEqual(rc, 2, log)
        self.assertIn("WF_API_KEYS and WF_API_KEYS_FILE are both set", log)
        bad = KeyDir("keys-bad")
        self.addCleanup(bad.remove)
        bad.write("%s\n%s=not a tenant\n" % (KEY_OLD, KEY_NEW))
        rc, log = self.run_to_exit("keys-bad", server_env(WF_API_KEYS_FILE=bad.path))
        self.assertEqual(rc, 2, log)
        self.assertIn("WF_API_KEYS_FILE entry 2 (line 2) must name a tenant", log)
        self.assertNotIn(KEY_OLD, log)
        self.assertNotIn(KEY_NEW, log)
        rc, log = self.run_to_exit("keys-missing", server_env(
            WF_API_KEYS_FILE=os.path.join(bad.root, "missing")))
        self.assertEqual(rc, 2, log)
        self.assertIn("cannot be read: No such file or directory", log)


class ApiKeysFilePgTests(ApiKeysFileTests):
    """ApiKeysFileTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_keyed_server(cls, name, **env):
        return start_server(cls, name, DATABASE_URL=pg_dsn_or_skip("ApiKeysFileTests"), **env)


# ---------------------------------------------------------------------------
# Actor
# ---------------------------------------------------------------------------


class ActorTests(WorkflowTestCase):

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "actor", keys=KEY1)

    def claim(self, metadata):
        return invoke(self.srv.workflow().ClaimTask,
                      wf_pb2.ClaimTaskRequest(task_id=UNKNOWN_TASK_ID), metadata)

    def test_actor_missing(self):
        self.assert_error(self.claim(md(key=KEY1)), SC.INVALID_ARGUMENT, "ACTOR_MISSING")

    def test_key_checked_before_actor(self):
        self.assert_error(self.claim(md()), SC.UNAUTHENTICATED, "API_KEY_MISSING")

    def test_actor_invalid(self):
        for name, actor in (("too long", "a" * 200), ("129 bytes", "b" * 129)):
            with self.subTest(name):
                out = self.claim(md(key=KEY1, actor=actor))
                self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    def test_actor_accepted(self):
        self.assert_accepted(self.claim(md(key=KEY1, actor="alice")))
        self.assert_accepted(self.claim(md(key=KEY1, actor="c" * 128)))

    def test_actor_optional_where_not_required(self):
        self.assert_accepted(self.get_unknown_task(self.srv, md(key=KEY1)))


# ---------------------------------------------------------------------------
# Protocol: unknown methods, bad bytes, deadlines, request ids
# ---------------------------------------------------------------------------


class ProtocolTests(WorkflowTestCase):

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "protocol")  # development, no keys: open

    def test_dev_server_without_keys_is_open(self):
        self.assert_accepted(self.get_unknown_task(self.srv))
        out = invoke(self.srv.workflow().ClaimTask,
                     wf_pb2.ClaimTaskRequest(task_id=UNKNOWN_TASK_ID), md(actor="alice"))
        self.assert_accepted(out)

    def test_unknown_method_unimplemented_quickly(self):
        nope = raw_method(self.srv.channel, "/%s/Nope" % SERVICE)
        out = invoke(nope, b"", timeout=10)
        self.assert_error(out, SC.UNIMPLEMENTED, "UNIMPLEMENTED")
        self.assertLess(out.elapsed, 2.0 * TIME_SCALE, "UNIMPLEMENTED took %.2f s" % out.elapsed)
        other = raw_method(self.srv.channel, "/no.such.Service/Method")
        out = invoke(other, b"", timeout=10)
        self.assertEqual(out.code, SC.UNIMPLEMENTED, repr(out))
        self.assertLess(out.elapsed, 2.0 * TIME_SCALE)

    def test_malformed_protobuf_invalid_argument(self):
        for method in ("GetTask", "ClaimTask"):
            with self.subTest(method=method):
                call = raw_method(self.srv.channel, "/%s/%s" % (SERVICE, method))
                out = invoke(call, b"\xff\xff\xff", md(actor="alice"))
                self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    def test_expired_deadline(self):
        # grpc core 1.51 keeps deadlines in whole milliseconds and rounds them
        # up, so timeout=0.000001 is really "within the next millisecond": on
        # loopback most such calls (80% measured) are answered before it
        # passes. A deadline 1 ms in the past is expired for certain.
        get = self.srv.workflow().GetTask
        req = wf_pb2.GetTaskRequest(task_id=UNKNOWN_TASK_ID)
        out = invoke(get, req, timeout=-0.001)
        self.assertEqual(out.code, SC.DEADLINE_EXCEEDED, repr(out))

    def test_microsecond_deadline(self):
        # timeout=0.000001: DEADLINE_EXCEEDED (from the client, or from the
        # server's deadline interceptor with its reason) or, when the answer
        # beat the millisecond, the normal answer; nothing else.
        get = self.srv.workflow().GetTask
        req = wf_pb2.GetTaskRequest(task_id=UNKNOWN_TASK_ID)
        answers = {**UNKNOWN_TASK_ANSWERS, SC.DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED"}
        for i in range(50):
            out = invoke(get, req, timeout=0.000001)
            if out.code == SC.DEADLINE_EXCEEDED and out.info is None:
                continue  # the client's own timer: no trailer to check
            self.assert_one_of(out, answers)

    def test_request_id_echoed(self):
        wf = self.srv.workflow()
        health = self.srv.health()
        calls = {
            "Health.Check": lambda m: invoke(
                health.Check, health_pb2.HealthCheckRequest(service=""), m),
            "Health.Check unknown service": lambda m: invoke(
                health.Check, health_pb2.HealthCheckRequest(service="nope"), m),
            "GetTask": lambda m: invoke(
                wf.GetTask, wf_pb2.GetTaskRequest(task_id=UNKNOWN_TASK_ID), m),
            "ClaimTask without actor": lambda m: invoke(
                wf.ClaimTask, wf_pb2.ClaimTaskRequest(task_id=UNKNOWN_TASK_ID), m),
            "unknown method": lambda m: invoke(
                raw_method(self.srv.channel, "/%s/Nope" % SERVICE), b"", m),
            "malformed bytes": lambda m: invoke(
                raw_method(self.srv.channel, "/%s/GetTask" % SERVICE), b"\xff\xff\xff", m),
        }
        for name, fn in calls.items():
            with self.subTest(call=name):
                rid = "rid-%d-%s" % (os.getpid(), name.replace(" ", "-"))
                out = fn(md(request_id=rid))
                self.assertEqual(out.initial_metadata().get("x-request-id"), rid,
                                 "x-request-id not echoed (outcome %r)" % out)

        with self.subTest(call="Health.Watch"):
            rid = "rid-%d-watch" % os.getpid()
            stream = health.Watch(health_pb2.HealthCheckRequest(service=""),
                                  metadata=md(request_id=rid), timeout=10)
            try:
                next(stream)
                self.assertEqual(dict(stream.initial_metadata()).get("x-request-id"), rid,
                                 "x-request-id not echoed on Health.Watch")
            finally:
                stream.cancel()

        with self.subTest(call="no x-request-id sent"):
            out = self.get_unknown_task(self.srv)
            self.assertTrue(out.initial_metadata().get("x-request-id"),
                            "the server should generate a request id")


# ---------------------------------------------------------------------------
# Message size
# ---------------------------------------------------------------------------


class SizeLimitTests(WorkflowTestCase):
    LIMIT = 65536

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "size", WF_MAX_MESSAGE_BYTES=cls.LIMIT)

    def start_instance(self, nbytes):
        variables = '{"blob": "%s"}' % ("x" * nbytes)
        req = wf_pb2.StartInstanceRequest(definition_key="py-size-test", variables_json=variables)
        return invoke(self.srv.workflow().StartInstance, req, md(actor="alice"))

    def test_oversized_request_too_large(self):
        out = self.start_instance(100 * 1024)
        self.assert_error(out, SC.RESOURCE_EXHAUSTED, "TOO_LARGE")

    def test_far_oversized_request_resource_exhausted(self):
        # Beyond twice the limit grpc core refuses the message by itself
        # (rpc_server.c), so there is no ErrorInfo: only the code is checked.
        out = self.start_instance(3 * self.LIMIT)
        self.assertEqual(out.code, SC.RESOURCE_EXHAUSTED, repr(out))

    def test_request_under_limit_accepted(self):
        out = self.start_instance(10 * 1024)
        self.assertNotIn(out.code, (SC.RESOURCE_EXHAUSTED, SC.UNAUTHENTICATED,
                                    SC.PERMISSION_DENIED, SC.INTERNAL), repr(out))


MIB = 1 << 20
# WF_MAX_VARIABLES_BYTES' default: answers of 4 MiB (WF_MAX_ANSWER_BYTES'
# default) less an eighth.
VARIABLES_BOUND = 3584 * 1024


def doc_blob(nbytes):
    """{"doc":"xxx..."}: exactly nbytes of JSON text."""
    return '{"doc":"%s"}' % ("x" * (nbytes - 10))


class DefaultClientTests(WorkflowTestCase):
    """Answers a client of default settings can read: a channel without
    options receives at most 4 MiB in one message (every gRPC client library
    does unless told otherwise, and generated clients keep that), so no
    answer of a default server passes it. Four jobs of 3 MiB come one an
    answer and none stays leased to nobody; an instance at the variables
    bound reads with its job beside it; ListInstances pages stop by bytes.
    On the memory store; DefaultClientPgTests on Postgres."""

    @classmethod
    def start_default_server(cls):
        return start_server(cls, "default-client")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_default_server()
        cls.channel = grpc.insecure_channel(cls.srv.target)  # no options at all
        cls.addClassCleanup(cls.channel.close)
        cls.wf = wf_grpc.WorkflowServiceStub(cls.channel)
        cls.run_id = uuid.uuid4().hex[:8]

    def ok(self, method, request, timeout=30 * TIME_SCALE):
        out = invoke(method, request, md(actor="py-default"), timeout=timeout)
        self.assertEqual(out.code, SC.OK, "%s: %r" % (type(request).__name__, out))
        return out.response

    def job_definition(self, name):
        key, job_type = "py-%s-%s" % (name, self.run_id), "py-%s-job-%s" % (name, self.run_id)
        d = wf_pb2.Definition(
            key=key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(id="work", trigger=wf_pb2.TRIGGER_AUTO,
                                           job_type=job_type)],
            arcs=[wf_pb2.Arc(source="s", target="work"), wf_pb2.Arc(source="work", target="e")])
        self.ok(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d))
        return key, job_type

    def start(self, key, nbytes):
        req = wf_pb2.StartInstanceRequest(definition_key=key, variables_json=doc_blob(nbytes))
        return self.ok(self.wf.StartInstance, req).instance.id

    def activate(self, job_type, max_jobs):
        return self.ok(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=job_type, worker="py-default", max_jobs=max_jobs))

    def test_four_jobs_of_3_mib_in_answers_the_client_reads(self):
        key, job_type = self.job_definition("big-jobs")
        ids = [self.start(key, 3 * MIB) for _ in range(4)]
        received = {}  # instance id -> job key
        for call_no in range(8):
            if len(received) == 4:
                break
            # A refused answer fails here: RESOURCE_EXHAUSTED on the client.
            jobs = self.activate(job_type, 4).jobs
            self.assertGreaterEqual(len(jobs), 1, "call %d leased nothing" % call_no)
            for j in jobs:
                self.assertEqual(len(j.variables_json), 3 * MIB)
                self.assertNotIn(j.instance_id, received)
                received[j.instance_id] = j.key
        self.assertEqual(sorted(received), sorted(ids))
        self.assertEqual(len(self.activate(job_type, 4).jobs), 0)
        # Every job is leased under the key this client received: none was
        # leased in an answer that never arrived.
        for iid in ids:
            got = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
            self.assertEqual([j.key for j in got.jobs], [received[iid]])
            self.ok(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(job_key=received[iid]))

    def test_instance_at_the_variables_bound_reads_beside_its_job(self):
        key, job_type = self.job_definition("bound")
        out = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, variables_json=doc_blob(VARIABLES_BOUND + 1)),
            md(actor="py-default"), timeout=30 * TIME_SCALE)
        self.assert_error(out, SC.RESOURCE_EXHAUSTED, "VARIABLES_TOO_LARGE")
        iid = self.start(key, VARIABLES_BOUND)
        got = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
        self.assertEqual(len(got.instance.variables_json), VARIABLES_BOUND)
        self.assertFalse(got.instance.variables_omitted)
        self.assertEqual(len(got.jobs), 1)
        self.assertTrue(got.jobs[0].variables_omitted, "the job repeats the variables")
        jobs = self.activate(job_type, 4).jobs
        self.assertEqual(len(jobs), 1)
        self.assertEqual(len(jobs[0].variables_json), VARIABLES_BOUND)
        self.ok(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(job_key=jobs[0].key))

    def test_list_pages_of_3_mib_roots_read_and_lead_on(self):
        key = "py-listed-" + self.run_id
        ids = [self.start(key, 3 * MIB) for _ in range(3)]
        seen, token = [], ""
        for page in range(6):
            r = self.ok(self.wf.ListInstances, wf_pb2.ListInstancesRequest(
                definition_key=key, started_by="*", page_size=500, page_token=token))
            self.assertGreaterEqual(len(r.instances), 1, "page %d is empty" % page)
            seen.extend(i.id for i in r.instances)
            self.assertTrue(all(len(i.variables_json) == 3 * MIB for i in r.instances))
            token = r.next_page_token
            if not token:
                break
        self.assertEqual(token, "", "the pages did not end")
        self.assertEqual(sorted(seen), sorted(ids))


class DefaultClientPgTests(DefaultClientTests):
    """DefaultClientTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_default_server(cls):
        dsn = pg_dsn_or_skip("DefaultClientTests")
        return start_server(cls, "default-client-pg", DATABASE_URL=dsn)


# ---------------------------------------------------------------------------
# Waiting for a result: a starter that answers its caller with the outcome
# ---------------------------------------------------------------------------


class AwaitResultTests(WorkflowTestCase):
    """A starter of a short workflow that needs its outcome: StartInstance
    with await_result (until ended) waits in the call while a worker, here
    the test itself, completes the workflow's job, and answers with the
    instance as GetInstance shows it; AwaitInstance does the same for an
    instance started earlier, and a wait that runs out answers OK with
    timed_out. On the memory store; AwaitResultPgTests on Postgres."""

    @classmethod
    def start_await_server(cls):
        return start_server(cls, "await")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_await_server()
        cls.wf = cls.srv.workflow()
        cls.run_id = uuid.uuid4().hex[:8]
        cls.key, cls.job_type = "py-await-%s" % cls.run_id, "py-await-job-%s" % cls.run_id
        d = wf_pb2.Definition(
            key=cls.key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(id="charge", trigger=wf_pb2.TRIGGER_AUTO,
                                           job_type=cls.job_type)],
            arcs=[wf_pb2.Arc(source="s", target="charge"),
                  wf_pb2.Arc(source="charge", target="e")])
        out = invoke(cls.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="py-await"))
        assert out.code == SC.OK, out

    def ok(self, method, request, timeout=30 * TIME_SCALE):
        out = invoke(method, request, md(actor="py-await"), timeout=timeout)
        self.assertEqual(out.code, SC.OK, "%s: %r" % (type(request).__name__, out))
        return out.response

    def complete_next_job(self, variables_json):
        """The worker: waits for the job (a long poll), completes it."""
        jobs = self.ok(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=self.job_type, worker="py-await", max_jobs=1,
            wait=duration_pb2.Duration(seconds=int(10 * TIME_SCALE)))).jobs
        self.assertEqual(len(jobs), 1)
        self.ok(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=jobs[0].key, variables_json=variables_json))
        return jobs[0]

    def test_start_answers_with_the_outcome(self):
        req = wf_pb2.StartInstanceRequest(
            definition_key=self.key, variables_json='{"amount": 12}',
            await_result=wf_pb2.AwaitResult(until=wf_pb2.AwaitUntil(ended=True),
                                            timeout=duration_pb2.Duration(seconds=30)))
        future = self.wf.StartInstance.future(req, metadata=md(actor="py-await"),
                                              timeout=40 * TIME_SCALE)
        job = self.complete_next_job('{"receipt": "r-1"}')
        resp = future.result()
        self.assertFalse(resp.timed_out)
        self.assertEqual(resp.instance.id, job.instance_id)
        self.assertEqual(resp.view.instance.id, job.instance_id)
        self.assertEqual(resp.view.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(resp.view.instance.variables_json),
                         {"amount": 12, "receipt": "r-1"})

    def test_parent_calls_the_payment_process(self):
        """A CALL transition starts the payment process (the class's
        definition) as a child; its output is mapped back when the worker
        completes the child's job, and the parent ends."""
        parent = "py-checkout-%s" % uuid.uuid4().hex[:8]
        d = wf_pb2.Definition(
            key=parent, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(
                id="pay", trigger=wf_pb2.TRIGGER_CALL, call_definition_key=self.key,
                call_input_expression="{amount: .total}",
                call_output_expression="{receipt: .receipt}")],
            arcs=[wf_pb2.Arc(source="s", target="pay"), wf_pb2.Arc(source="pay", target="e")])
        self.ok(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d))
        iid = self.ok(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=parent, variables_json='{"total": 30}')).instance.id
        view = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
        self.assertEqual(len(view.calls), 1)
        self.assertEqual(view.calls[0].definition_key, self.key)
        self.assertEqual(view.calls[0].transition_id, "pay")
        self.assertEqual(view.calls[0].status, wf_pb2.INSTANCE_STATUS_RUNNING)
        job = self.complete_next_job('{"receipt": "r-9"}')
        self.assertEqual(job.instance_id, view.calls[0].instance_id)
        self.assertEqual(json.loads(job.variables_json), {"amount": 30})
        view = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
        self.assertEqual(view.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(view.calls[0].status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(view.instance.variables_json),
                         {"total": 30, "receipt": "r-9"})

    def test_order_pays_each_line_through_the_payment_process(self):
        """An order process calls the payment process (the class's
        definition) once per line item (for-each over CALL); the starter
        awaits the order's end in StartInstance while the worker pays the
        lines, out of order; the payments come back in line order."""
        order = "py-order-%s" % uuid.uuid4().hex[:8]
        d = wf_pb2.Definition(
            key=order, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(
                id="pay_lines", trigger=wf_pb2.TRIGGER_CALL, call_definition_key=self.key,
                call_input_expression="{amount: .line.amount}",
                call_output_expression="{receipt}", for_each=".lines", for_each_item="line",
                for_each_output="payments")],
            arcs=[wf_pb2.Arc(source="s", target="pay_lines"),
                  wf_pb2.Arc(source="pay_lines", target="e")])
        self.ok(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d))
        lines = [{"sku": "book", "amount": 12}, {"sku": "pen", "amount": 3},
                 {"sku": "lamp", "amount": 40}]
        req = wf_pb2.StartInstanceRequest(
            definition_key=order, variables_json=json.dumps({"lines": lines}),
            await_result=wf_pb2.AwaitResult(until=wf_pb2.AwaitUntil(ended=True),
                                            timeout=duration_pb2.Duration(seconds=30)))
        future = self.wf.StartInstance.future(req, metadata=md(actor="py-await"),
                                              timeout=40 * TIME_SCALE)
        jobs = []
        for _ in range(20):  # bounded: the three jobs, taken as they come
            if len(jobs) == 3:
                break
            jobs += self.ok(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
                job_type=self.job_type, worker="py-await", max_jobs=3 - len(jobs),
                wait=duration_pb2.Duration(seconds=int(10 * TIME_SCALE)))).jobs
        self.assertEqual(len(jobs), 3)
        children = {j.instance_id for j in jobs}
        self.assertEqual(len(children), 3)
        for job in sorted(jobs, key=lambda j: -json.loads(j.variables_json)["line_index"]):
            v = json.loads(job.variables_json)
            self.assertEqual(v["amount"], lines[v["line_index"]]["amount"])
            self.assertEqual(v["line"], lines[v["line_index"]])
            self.ok(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
                job_key=job.key, variables_json=json.dumps({"receipt": "r-%d" % v["line_index"]})))
        resp = future.result()
        self.assertFalse(resp.timed_out)
        self.assertEqual(resp.view.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(resp.view.instance.variables_json)["payments"],
                         [{"receipt": "r-0"}, {"receipt": "r-1"}, {"receipt": "r-2"}])
        self.assertEqual({c.instance_id for c in resp.view.calls}, children)
        self.assertTrue(all(c.status == wf_pb2.INSTANCE_STATUS_COMPLETED
                            for c in resp.view.calls))
    def test_step_list_calls_the_payment_process(self):
        """A step list's call step starts the payment process as a child;
        its output reaches the variables before the list's next step,
        which names it in its rule."""
        parent = "py-steps-%s" % uuid.uuid4().hex[:8]
        d = wf_pb2.Definition(key=parent, kind=wf_pb2.DEFINITION_KIND_STEPS, steps=[
            wf_pb2.Step(id="pay", call=wf_pb2.CallStep(
                definition_key=self.key, input_expression="{amount: .total}",
                output_expression="{receipt: .receipt}"),
                next=[wf_pb2.NextRule(guard='.receipt == "r-7"', step="done")]),
            wf_pb2.Step(id="never", sleep=wf_pb2.SleepStep(
                duration=duration_pb2.Duration(seconds=3600))),
            wf_pb2.Step(id="done", sleep=wf_pb2.SleepStep(
                duration=duration_pb2.Duration(seconds=3600)))])
        dep = self.ok(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d))
        self.assertEqual(dep.definition.steps[0].call.definition_key, self.key)
        iid = self.ok(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=parent, variables_json='{"total": 7}')).instance.id
        view = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
        self.assertEqual([s.id for s in view.current_steps], ["pay"])
        self.assertEqual([(c.transition_id, c.definition_key) for c in view.calls],
                         [("pay", self.key)])
        job = self.complete_next_job('{"receipt": "r-7"}')
        self.assertEqual(job.instance_id, view.calls[0].instance_id)
        self.assertEqual(json.loads(job.variables_json), {"amount": 7})
        view = self.ok(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=iid))
        self.assertEqual(view.calls[0].status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(view.instance.variables_json), {"total": 7, "receipt": "r-7"})
        self.assertEqual([s.id for s in view.current_steps], ["done"])

    def test_await_instance_times_out_with_the_view(self):
        iid = self.ok(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=self.key)).instance.id
        resp = self.ok(self.wf.AwaitInstance, wf_pb2.AwaitInstanceRequest(
            instance_id=iid, until=wf_pb2.AwaitUntil(ended=True),
            timeout=duration_pb2.Duration(nanos=200 * 1000 * 1000)))
        self.assertTrue(resp.timed_out)
        self.assertEqual(resp.view.instance.status, wf_pb2.INSTANCE_STATUS_RUNNING)
        self.assertEqual([j.instance_id for j in resp.view.jobs], [iid])
        self.complete_next_job("")
        resp = self.ok(self.wf.AwaitInstance, wf_pb2.AwaitInstanceRequest(
            instance_id=iid, until=wf_pb2.AwaitUntil(place_marked="e"),
            timeout=duration_pb2.Duration(seconds=10)))
        self.assertFalse(resp.timed_out)
        self.assertEqual(resp.view.marking["e"], 1)


class AwaitResultPgTests(AwaitResultTests):
    """AwaitResultTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_await_server(cls):
        dsn = pg_dsn_or_skip("AwaitResultTests")
        return start_server(cls, "await-pg", DATABASE_URL=dsn)


# ---------------------------------------------------------------------------
# One channel: calls multiplexed on one connection are served side by side
# ---------------------------------------------------------------------------

# A guard that runs far longer than the server's expression time limit: the
# StartInstance that evaluates it takes that limit, then fails with
# EXPRESSION_LIMIT. 10^8 additions, no memory to speak of.
SLOW_GUARD = ('"x" * 10000 | explode as $a '
              '| reduce $a[] as $i (0; reduce $a[] as $j (.; . + 1)) > 0')


def one_channel_scale():
    """TIME_SCALE for the one-channel cases, at most 4: the bounds of the
    cheap calls beside the slow one stretch with it."""
    return min(TIME_SCALE, 4)


class OneChannelTests(WorkflowTestCase):
    """A generated client sends every call of a backend over one channel,
    so one HTTP/2 connection. While one call on that channel is slow (a
    StartInstance whose guard runs into the expression time limit), Health
    and cheap calls on the same channel, and 32 calls at once, answer at
    once instead of waiting behind it.

    On the memory store the slow call's unit of work holds the store's one
    mutex, so the cheap WorkflowService call here is one the handler answers
    without the store (GetInstance without an id); OneChannelPgTests also
    reads the store beside the slow call."""

    # SLOW_MS is CPU time (the worker's), so the slow call lasts at least
    # that long however slow the machine, and longer when it is loaded; the
    # cheap calls' bound is times one_channel_scale(): they stay far quicker.
    SLOW_MS = 2000    # the server's expression time limit: the slow call's length
    QUICK_S = 0.3     # bound for a cheap call beside it
    CONCURRENT = 32
    KEY = "py-one-channel-slow"

    @classmethod
    def start_one_channel_server(cls):
        return start_server(cls, "one-channel-memory", WF_THREADS=4,
                            WF_EXPR_TIMEOUT_MS=cls.SLOW_MS)

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_one_channel_server()
        cls.wf = cls.srv.workflow()      # every call below goes over this one channel
        cls.health = cls.srv.health()
        cls.meta = md(actor="one-channel")
        P, T = wf_pb2.Place, wf_pb2.Transition
        d = wf_pb2.Definition(
            key=cls.KEY, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[P(id="s", kind=wf_pb2.PLACE_KIND_START),
                    P(id="big", kind=wf_pb2.PLACE_KIND_NORMAL),
                    P(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[T(id="decide", trigger=wf_pb2.TRIGGER_AUTO),
                         T(id="after", trigger=wf_pb2.TRIGGER_AUTO)],
            arcs=[wf_pb2.Arc(source="s", target="decide"),
                  wf_pb2.Arc(source="decide", target="big", guard=SLOW_GUARD),
                  wf_pb2.Arc(source="decide", target="e", is_default=True),
                  wf_pb2.Arc(source="big", target="after"),
                  wf_pb2.Arc(source="after", target="e")])
        out = invoke(cls.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     cls.meta, timeout=30)
        if out.code != SC.OK:
            raise RuntimeError("deploy failed: %r" % (out,))

    def cheap_calls(self):
        """(name, callable returning an Outcome) of calls that are quick
        when nothing else runs; each checks its own answer."""
        def health():
            out = invoke(self.health.Check, health_pb2.HealthCheckRequest(service=""))
            self.assertEqual(out.code, SC.OK, repr(out))
            return out

        def no_store():
            out = invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(), self.meta)
            self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
            return out
        return [("Health/Check", health), ("GetInstance without an id", no_store)]

    def test_cheap_calls_beside_a_slow_call_on_one_channel(self):
        out = self.beside(lambda: invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=self.KEY, variables_json="{}"), self.meta, timeout=30))
        # The slow call really was slow: it ran into the time limit.
        self.assert_error(out, SC.RESOURCE_EXHAUSTED, "EXPRESSION_LIMIT")
        self.assertGreaterEqual(out.elapsed, 0.75 * self.SLOW_MS / 1000.0)

    def quick_s(self):
        """The bound of a cheap call: QUICK_S times the whole time scale, yet
        at most a quarter of the slow call, so that "at once" keeps its sense."""
        return min(self.QUICK_S * TIME_SCALE, self.SLOW_MS * one_channel_scale() / 4000.0)

    def beside(self, slow_fn):
        """Runs slow_fn (a call on self.wf) in a thread and, while it is in
        flight, the cheap calls on the same channel: one after another, then
        CONCURRENT at once. Returns slow_fn's Outcome."""
        slow = {}

        def slow_call():
            slow["out"] = slow_fn()
            slow["end"] = time.monotonic()

        # Warm the channel and the handlers first (first calls compile, connect).
        for _, fn in self.cheap_calls():
            fn()
        th = threading.Thread(target=slow_call)
        th.start()
        try:
            time.sleep(0.3 * one_channel_scale())  # the slow call is in its handler by now
            serial = []
            for name, fn in self.cheap_calls() * 3:
                out = fn()
                serial.append(out.elapsed)
                self.assertLess(out.elapsed, self.quick_s(),
                                "%s took %.3f s beside a slow call on the same channel"
                                % (name, out.elapsed))

            # Many calls at once on the same channel: all are answered, each
            # in its own time, while the slow call still runs.
            calls = self.cheap_calls()
            outs, errors = [None] * self.CONCURRENT, []

            def one(i):
                try:
                    outs[i] = calls[i % len(calls)][1]()
                except Exception as e:  # an assertion in a thread: report it below
                    errors.append(e)
            ths = [threading.Thread(target=one, args=(i,)) for i in range(self.CONCURRENT)]
            t0 = time.monotonic()
            for t in ths:
                t.start()
            for t in ths:
                t.join(timeout=30)
            burst = time.monotonic() - t0
            self.assertEqual(errors, [])
            self.assertTrue(all(o is not None for o in outs), "a call did not come back")
            print("\n    one channel beside a slow call (%s): %d cheap calls one after another,"
                  " max %.1f ms; %d at once, max %.1f ms"
                  % (type(self).__name__, len(serial), 1000 * max(serial), self.CONCURRENT,
                     1000 * max(o.elapsed for o in outs)), file=sys.stderr)
            self.assertLess(max(o.elapsed for o in outs), 2 * self.quick_s(),
                            "the slowest of %d calls on one channel took %.3f s"
                            % (self.CONCURRENT, max(o.elapsed for o in outs)))
            self.assertTrue(th.is_alive() or slow["end"] > t0 + burst,
                            "the slow call ended before the cheap calls did")
        finally:
            th.join(timeout=30)
        self.assertFalse(th.is_alive())
        return slow["out"]


class OneChannelPgTests(OneChannelTests):
    """OneChannelTests on Postgres (skipped without WF_TEST_PG_DSN), where
    the cheap calls beside the slow one also read the store: GetInstance of
    an instance and ListDefinitions. A second slow call: SetVariables on an
    instance whose row another connection (psql) holds locked."""

    LOCK_S = 2.5  # times one_channel_scale(): the lock outlasts the cheap calls

    @classmethod
    def start_one_channel_server(cls):
        dsn = pg_dsn_or_skip("OneChannelTests")
        return start_server(cls, "one-channel-pg", DATABASE_URL=dsn, WF_THREADS=4,
                            WF_EXPR_TIMEOUT_MS=cls.SLOW_MS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        ad_hoc = wf_pb2.Definition(key="py-one-channel-fast", kind=wf_pb2.DEFINITION_KIND_AD_HOC)
        out = invoke(cls.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=ad_hoc),
                     cls.meta, timeout=30)
        if out.code != SC.OK:
            raise RuntimeError("deploy failed: %r" % (out,))
        out = invoke(cls.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key="py-one-channel-fast", variables_json="{}"), cls.meta, timeout=30)
        if out.code != SC.OK:
            raise RuntimeError("start failed: %r" % (out,))
        cls.instance_id = out.response.instance.id
        out = invoke(cls.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key="py-one-channel-fast", variables_json="{}"), cls.meta, timeout=30)
        if out.code != SC.OK:
            raise RuntimeError("start failed: %r" % (out,))
        cls.locked_id = out.response.instance.id

    def test_cheap_calls_beside_a_call_waiting_for_a_row_lock(self):
        psql = wf_testkit.psql_path()
        if not os.access(psql, os.X_OK):
            self.skipTest("no psql to hold a row lock with")
        dsn = os.environ["WF_TEST_PG_DSN"]
        sleep_sql = "SELECT pg_sleep(%s) /* one-channel lock %s */;" % (
            self.LOCK_S * one_channel_scale(), self.locked_id)
        holder = subprocess.Popen(
            [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        try:
            holder.stdin.write("BEGIN;\nSELECT 1 FROM instances WHERE id = '%s' FOR UPDATE;\n%s\n"
                               "COMMIT;\n" % (self.locked_id, sleep_sql))
            holder.stdin.close()
            # The lock is held once its transaction runs the sleep.
            until = time.monotonic() + 10
            while time.monotonic() < until:
                seen = subprocess.run(
                    [psql, "-X", "-A", "-t", dsn, "-c",
                     "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                     "AND query LIKE 'SELECT pg_sleep%%one-channel lock %s%%'" % self.locked_id],
                    capture_output=True, text=True, timeout=10).stdout.strip()
                if seen == "1":
                    break
                time.sleep(0.05)
            else:
                self.fail("psql did not take the row lock")
            out = self.beside(lambda: invoke(self.wf.SetVariables, wf_pb2.SetVariablesRequest(
                instance_id=self.locked_id, variables_json='{"a": 1}'), self.meta, timeout=30))
        finally:
            holder.wait(timeout=30 + self.LOCK_S * one_channel_scale())
        self.assertEqual(out.code, SC.OK, repr(out))
        self.assertGreaterEqual(out.elapsed, 1.0, "SetVariables did not wait for the lock")

    def cheap_calls(self):
        def get_instance():
            out = invoke(self.wf.GetInstance,
                         wf_pb2.GetInstanceRequest(instance_id=self.instance_id), self.meta)
            self.assertEqual(out.code, SC.OK, repr(out))
            return out

        def list_definitions():
            out = invoke(self.wf.ListDefinitions, wf_pb2.ListDefinitionsRequest(), self.meta)
            self.assertEqual(out.code, SC.OK, repr(out))
            return out
        return super().cheap_calls() + [("GetInstance", get_instance),
                                        ("ListDefinitions", list_definitions)]


# ---------------------------------------------------------------------------
# Startup rules
# ---------------------------------------------------------------------------


class ReflectionTests(WorkflowTestCase):
    """grpc.reflection v1 and v1alpha, as grpcurl or Postman use them: list
    the services, then build a descriptor pool from the files a symbol needs
    and check the API is fully described (no .proto files on the client)."""

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "reflection", keys=KEY1)

    def ask(self, version, **request):
        pb2, pb2_grpc = reflection_modules[version]
        stub = pb2_grpc.ServerReflectionStub(self.srv.new_channel())
        # Reflection is public, like health: no key is sent.
        return list(stub.ServerReflectionInfo(
            iter([pb2.ServerReflectionRequest(**request)]), timeout=rpc_timeout()))

    def test_list_services_both_versions(self):
        for version in (0, 1):
            (resp,) = self.ask(version, list_services="")
            names = {s.name for s in resp.list_services_response.service}
            self.assertIn("workflow.v1.WorkflowService", names)
            self.assertIn("grpc.health.v1.Health", names)
            self.assertIn("grpc.reflection.v1alpha.ServerReflection", names)

    def test_symbol_resolves_to_a_complete_pool(self):
        from google.protobuf import descriptor_pb2, descriptor_pool
        for version in (0, 1):
            (resp,) = self.ask(version, file_containing_symbol="workflow.v1.WorkflowService")
            files = resp.file_descriptor_response.file_descriptor_proto
            self.assertGreaterEqual(len(files), 2)
            pool = descriptor_pool.DescriptorPool()
            protos = []
            for blob in files:
                fd = descriptor_pb2.FileDescriptorProto()
                fd.ParseFromString(blob)
                protos.append(fd)
            # Dependencies come after the file that needs them: add in reverse.
            for fd in reversed(protos):
                pool.Add(fd)
            svc = pool.FindServiceByName("workflow.v1.WorkflowService")
            self.assertEqual(len(svc.methods), len(
                wf_pb2.DESCRIPTOR.services_by_name["WorkflowService"].methods))
            method = svc.FindMethodByName("CompleteTask")
            self.assertEqual(method.input_type.full_name, "workflow.v1.CompleteTaskRequest")

    def test_method_and_nested_symbols(self):
        (resp,) = self.ask(0, file_containing_symbol="workflow.v1.WorkflowService.GetTask")
        self.assertTrue(resp.HasField("file_descriptor_response"))
        (resp,) = self.ask(0, file_by_filename="workflow/v1/workflow.proto")
        self.assertTrue(resp.HasField("file_descriptor_response"))

    def test_error_detail_types_are_served(self):
        # The details of every error (google.rpc.ErrorInfo, BadRequest, ...)
        # resolve by reflection, so that a dynamic client can decode them.
        from google.protobuf import descriptor_pb2
        for symbol in ("google.rpc.ErrorInfo", "google.rpc.BadRequest", "google.rpc.RetryInfo",
                       "google.rpc.Status"):
            (resp,) = self.ask(0, file_containing_symbol=symbol)
            self.assertTrue(resp.HasField("file_descriptor_response"), symbol)
            names = set()
            for raw in resp.file_descriptor_response.file_descriptor_proto:
                fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
                names.update("%s.%s" % (fd.package, m.name) for m in fd.message_type)
            self.assertIn(symbol, names)

    def test_unknown_symbol_is_not_found_error_response(self):
        (resp,) = self.ask(1, file_containing_symbol="workflow.v1.Nope")
        self.assertEqual(resp.error_response.error_code, SC.NOT_FOUND.value[0])


class ObservabilityTests(WorkflowTestCase):
    """Prometheus metrics on WF_METRICS_ADDR (valid exposition format, RED
    counters per method and code) and the trace id of `traceparent` in the
    access log."""

    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.srv = start_server(cls, "metrics", keys=KEY1,
                               WF_METRICS_ADDR="127.0.0.1:%d" % cls.metrics_port)

    def scrape(self):
        import urllib.request
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=5) as resp:
            self.assertIn("text/plain", resp.headers["Content-Type"])
            return resp.read().decode()

    def test_red_metrics_count_calls_by_code(self):
        for _ in range(3):
            self.get_unknown_task(self.srv, md(key=KEY1))
        invoke(self.srv.workflow().GetTask, wf_pb2.GetTaskRequest(task_id="x"), md())
        text = self.scrape()
        self.assertRegex(text, r'grpc_server_started_total\{grpc_type="unary",'
                               r'grpc_service="workflow.v1.WorkflowService",'
                               r'grpc_method="GetTask"\} [4-9]')
        self.assertRegex(text, r'grpc_server_handled_total\{[^}]*grpc_method="GetTask",'
                               r'grpc_code="Unauthenticated"\} 1')
        self.assertIn('grpc_server_handling_seconds_bucket{grpc_type="unary",'
                      'grpc_service="workflow.v1.WorkflowService",grpc_method="GetTask",'
                      'le="+Inf"}', text)
        self.assertIn("workflow_db_pool_in_use", text)

    def test_build_info_carries_the_version(self):
        import re
        p = subprocess.run([OPTS.server, "--version"], capture_output=True, text=True,
                           timeout=10)
        version = p.stdout.split()[1]
        self.assertRegex(self.scrape(), r'(?m)^# TYPE workflow_build_info gauge\n'
                                        r'workflow_build_info\{version="%s"\} 1$'
                                        % re.escape(version))

    def test_exposition_passes_promtool(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool is not installed (Debian package prometheus)")
        self.get_unknown_task(self.srv, md(key=KEY1))
        res = subprocess.run([promtool, "check", "metrics"], input=self.scrape(),
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_backlog_gauges_are_exposed_and_move(self):
        import re

        def tasks_open():
            m = re.search(r"^workflow_tasks_open (\d+)$", self.scrape(), re.M)
            self.assertIsNotNone(m)
            return int(m.group(1))

        text = self.scrape()
        for family in ("workflow_jobs_activatable", "workflow_tasks_open",
                       "workflow_signals_buffered", "workflow_backlog_age_seconds"):
            self.assertIn("# TYPE %s gauge" % family, text)
        self.assertRegex(text, r"(?m)^workflow_signals_buffered \d+$")
        for family in ("workflow_timers_fired_total", "workflow_job_leases_expired_total",
                       "workflow_signals_expired_total", "workflow_retention_rows_removed_total",
                       "workflow_scheduler_step_errors_total"):
            self.assertRegex(text, r"(?m)^# TYPE %s counter\n%s \d+$" % (family, family))
        before = tasks_open()
        wf = self.srv.workflow()
        meta = md(key=KEY1, actor="gauge-" + uuid.uuid4().hex[:8])
        root = invoke(wf.StartInstance, wf_pb2.StartInstanceRequest(definition_key="gauges"), meta)
        self.assertEqual(root.code, SC.OK, root)
        out = invoke(wf.AssignTo, wf_pb2.AssignToRequest(
            parent_instance_id=root.response.instance.id, title="Counted",
            assignee=wf_pb2.Assignee(kind=wf_pb2.ASSIGNEE_KIND_USERS, ids=["ann", "bob"])), meta)
        self.assertEqual(out.code, SC.OK, out)
        # The counts are cached for up to 5 s between scrapes.
        deadline = time.monotonic() + 15
        while tasks_open() < before + 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual(tasks_open(), before + 2)

    def test_grpc_type_labels_follow_the_proto(self):
        text = self.scrape()
        for method, kind in (("ActivateJobs", "unary"), ("WatchEvents", "server_stream"),
                             ("StreamActivatedJobs", "server_stream"), ("GetTask", "unary")):
            self.assertIn('grpc_server_started_total{grpc_type="%s",'
                          'grpc_service="workflow.v1.WorkflowService",grpc_method="%s"}'
                          % (kind, method), text)
        self.assertIn('grpc_server_started_total{grpc_type="bidi_stream",'
                      'grpc_service="grpc.reflection.v1alpha.ServerReflection",'
                      'grpc_method="ServerReflectionInfo"}', text)
        self.assertIn('grpc_server_started_total{grpc_type="server_stream",'
                      'grpc_service="grpc.health.v1.Health",grpc_method="Watch"}', text)
        # Every code is there from the start, so that a rate sees the first error.
        self.assertRegex(text, r'grpc_server_handled_total\{[^}]*grpc_method="CompleteJob",'
                               r'grpc_code="DataLoss"\} 0')

    def test_process_metrics(self):
        import re
        text = self.scrape()
        for family, kind in (("process_cpu_seconds_total", "counter"),
                             ("process_resident_memory_bytes", "gauge"),
                             ("process_virtual_memory_bytes", "gauge"),
                             ("process_open_fds", "gauge"), ("process_max_fds", "gauge"),
                             ("process_start_time_seconds", "gauge")):
            self.assertRegex(text, r"(?m)^# TYPE %s %s\n%s [0-9.e+]+$" % (family, kind, family))
        rss = float(re.search(r"(?m)^process_resident_memory_bytes (\S+)$", text).group(1))
        self.assertGreater(rss, 1 << 20)
        start = float(re.search(r"(?m)^process_start_time_seconds (\S+)$", text).group(1))
        self.assertLess(start, time.time() + 2)
        self.assertGreater(start, time.time() - 3600)
        fds = int(re.search(r"(?m)^process_open_fds (\d+)$", text).group(1))
        self.assertGreater(fds, 3)

    def test_instance_counters_move_and_the_log_names_the_instance(self):
        import re

        def value(text, series):
            m = re.search(r"(?m)^%s (\d+)$" % re.escape(series), text)
            self.assertIsNotNone(m, series)
            return int(m.group(1))

        started = 'workflow_instances_started_total'
        cancelled = 'workflow_instances_ended_total{status="CANCELLED"}'
        text = self.scrape()
        for series in ('workflow_instances_ended_total{status="COMPLETED"}',
                       'workflow_instances_ended_total{status="COMPENSATED"}',
                       "workflow_incidents_opened_total", "workflow_incidents_resolved_total",
                       'workflow_signals_total{outcome="CORRELATED"}',
                       'workflow_signals_total{outcome="BUFFERED"}',
                       'workflow_signals_total{outcome="DUPLICATE"}'):
            value(text, series)
        before = (value(text, started), value(text, cancelled),
                  value(text, 'workflow_signals_total{outcome="DROPPED"}'))
        wf = self.srv.workflow()
        meta = md(key=KEY1, actor="counter-" + uuid.uuid4().hex[:8])
        root = invoke(wf.StartInstance, wf_pb2.StartInstanceRequest(definition_key="counted"), meta)
        self.assertEqual(root.code, SC.OK, root)
        iid = root.response.instance.id
        sig = invoke(wf.SendSignal, wf_pb2.SendSignalRequest(name="nobody-waits", instance_id=iid),
                     meta)
        self.assertEqual(sig.code, SC.OK, sig)
        self.assertEqual(sig.response.outcome, wf_pb2.SIGNAL_OUTCOME_DROPPED)
        self.assertEqual(invoke(wf.CancelInstance, wf_pb2.CancelInstanceRequest(instance_id=iid),
                                meta).code, SC.OK)
        text = self.scrape()
        self.assertEqual((value(text, started), value(text, cancelled),
                          value(text, 'workflow_signals_total{outcome="DROPPED"}')),
                         (before[0] + 1, before[1] + 1, before[2] + 1))
        # The access-log lines of both calls carry the instance id: the
        # start's from its response, the cancel's from its request.
        self.srv.wait_for_log(['"method":"/workflow.v1.WorkflowService/CancelInstance"'])
        for method in ("StartInstance", "CancelInstance"):
            entry = next(json.loads(l) for l in self.srv.log().splitlines()
                         if '"%s"' % iid in l and "/" + method in l)
            self.assertEqual(entry["instance_id"], iid)

    def test_other_paths_are_not_found(self):
        import urllib.error
        import urllib.request
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen("http://127.0.0.1:%d/" % self.metrics_port, timeout=5)
        self.assertEqual(ctx.exception.code, 404)

    def test_traceparent_is_logged_with_the_call(self):
        trace = uuid.uuid4().hex
        rid = "trace-test-" + uuid.uuid4().hex[:8]
        self.get_unknown_task(self.srv, md(key=KEY1, request_id=rid,
                                          extra=[("traceparent",
                                                  "00-%s-00f067aa0ba902b7-01" % trace)]))
        self.srv.wait_for_log([rid])
        line = next(l for l in self.srv.log().splitlines() if rid in l)
        entry = json.loads(line)
        self.assertEqual(entry["trace_id"], trace)
        self.assertEqual(entry["request_id"], rid)
        self.assertEqual(entry["task_id"], UNKNOWN_TASK_ID)
        self.assertEqual(entry["method"], "/workflow.v1.WorkflowService/GetTask")


class TlsTests(WorkflowTestCase):
    """WF_TLS_CERT/WF_TLS_KEY: the server speaks TLS with a self-signed
    certificate, for use without a mesh; plaintext clients are refused."""

    @classmethod
    def setUpClass(cls):
        openssl = shutil.which("openssl")
        if openssl is None:
            raise unittest.SkipTest("openssl is not installed")
        d = os.path.join(OPTS.work, "tls")
        os.makedirs(d, exist_ok=True)
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True,
                       timeout=60)
        with open(cert, "rb") as f:
            root = f.read()
        srv = Server("tls", server_env(keys=KEY1, WF_TLS_CERT=cert, WF_TLS_KEY=key))
        srv.tls_root = root
        cls.srv = srv.start()
        cls.addClassCleanup(srv.kill)

    def test_tls_health_and_call(self):
        r = self.srv.health().Check(health_pb2.HealthCheckRequest(service=""),
                                    timeout=rpc_timeout())
        self.assertEqual(r.status, health_pb2.HealthCheckResponse.SERVING)
        self.assert_accepted(self.get_unknown_task(self.srv, md(key=KEY1)))

    def test_health_probe_over_tls(self):
        # Docker's HEALTHCHECK runs `workflowd --health-probe` in the same
        # environment as the server: WF_ADDR and WF_TLS_CERT come from there.
        env = dict(self.srv.env)
        env["WF_ADDR"] = "0.0.0.0:%d" % self.srv.port
        p = subprocess.run([OPTS.server, "--health-probe"], env=env, capture_output=True,
                           timeout=10)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.strip(), b"SERVING")
        # A name the certificate does not carry fails verification.
        p = subprocess.run([OPTS.server, "--health-probe", "--tls-name", "elsewhere.example"],
                           env=env, capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_plaintext_client_is_refused(self):
        channel = grpc.insecure_channel(self.srv.target)
        stub = health_grpc.HealthStub(channel)
        with self.assertRaises(grpc.RpcError) as ctx:
            stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        self.assertEqual(ctx.exception.code(), SC.UNAVAILABLE)
        channel.close()


class StartupTests(WorkflowTestCase):

    def test_health_probe(self):
        srv = Server("probe", server_env()).start()
        self.addCleanup(srv.kill)
        env = dict(srv.env)
        p = subprocess.run([OPTS.server, "--health-probe"], env=env, capture_output=True,
                           timeout=10)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, b"SERVING"), p.stderr)
        srv.kill()
        p = subprocess.run([OPTS.server, "--health-probe"], env=env, capture_output=True,
                           timeout=10)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(b"UNAVAILABLE", p.stdout)
        p = subprocess.run([OPTS.server, "--health-probe", "--no-such-flag"], env=env,
                           capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 2)

    def run_version(self, binary, name):
        # A free WF_ADDR: were --version to start a server, it would not
        # take a port in use, and the timeout ends the test.
        env = server_env(WF_ADDR="127.0.0.1:%d" % free_port())
        p = subprocess.run([binary, "--version"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=10)
        self.assertEqual((p.returncode, p.stderr), (0, ""), p.stdout)
        self.assertRegex(p.stdout, r"\A%s [0-9]+\.[0-9]+\.[0-9]+\S*\n\Z" % name)
        return p.stdout.split()[1]

    def test_version_prints_and_exits(self):
        version = self.run_version(OPTS.server, "workflowd")
        self.assertEqual(self.run_version(OPTS.wfctl, "wfctl"), version)

    def run_to_exit(self, name, env):
        srv = Server(name, env)
        proc = srv.spawn()
        self.addCleanup(srv.kill)
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.fail("%s kept running; it should have refused to start" % name)
        return rc, srv.log()

    def test_production_without_keys_exits_2(self):
        rc, log = self.run_to_exit("prod-no-keys", server_env(dev=False))
        self.assertEqual(rc, 2, log)
        self.assertIn("WF_API_KEYS", log)

    def test_production_without_database_exits_2(self):
        rc, log = self.run_to_exit("prod-no-db", server_env(dev=False, keys=KEY1))
        self.assertEqual(rc, 2, log)
        self.assertIn("DATABASE_URL", log)
        self.assertNotIn(KEY1, log)


# ---------------------------------------------------------------------------
# Graceful shutdown
# ---------------------------------------------------------------------------


class ShutdownTests(WorkflowTestCase):
    THREADS = 8
    RETRYABLE = (SC.UNAVAILABLE, SC.CANCELLED)

    def test_sigterm_during_burst(self):
        srv = Server("shutdown", server_env(WF_DRAIN_SECONDS=1)).start()
        self.addCleanup(srv.kill)
        SERVING = health_pb2.HealthCheckResponse.SERVING
        NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

        # A watcher opened before SIGTERM.
        watch = {"statuses": [], "end": None}
        first_status = threading.Event()

        def watcher():
            ch = srv.new_channel()
            try:
                stream = health_grpc.HealthStub(ch).Watch(
                    health_pb2.HealthCheckRequest(service=""), timeout=20)
                for msg in stream:
                    watch["statuses"].append(msg.status)
                    first_status.set()
                watch["end"] = SC.OK
            except grpc.RpcError as e:
                watch["end"] = e.code()
            finally:
                first_status.set()
                ch.close()

        # The burst: each thread alternates Health.Check and GetTask.
        stop = threading.Event()
        lock = threading.Lock()
        stats = {"ok": 0, "served": 0, "not_serving": 0, "calls": 0,
                 "UNAVAILABLE": 0, "CANCELLED": 0}
        unexpected = []

        def burst(i):
            ch = srv.new_channel()
            health = health_grpc.HealthStub(ch)
            wf = wf_grpc.WorkflowServiceStub(ch)
            n = 0
            try:
                while not stop.is_set():
                    n += 1
                    if n % 2:
                        out = invoke(health.Check, health_pb2.HealthCheckRequest(service=""),
                                     timeout=3)
                    else:
                        out = invoke(wf.GetTask, wf_pb2.GetTaskRequest(task_id=UNKNOWN_TASK_ID),
                                     md(request_id="burst-%d-%d" % (i, n)), timeout=3)
                    with lock:
                        stats["calls"] += 1
                        if out.code == SC.OK:
                            stats["ok"] += 1
                            if getattr(out.response, "status", None) == NOT_SERVING:
                                stats["not_serving"] += 1
                        elif out.reason is not None and \
                                UNKNOWN_TASK_ANSWERS.get(out.code) == out.reason:
                            stats["served"] += 1  # GetTask answered (not built / not found)
                        elif out.code in self.RETRYABLE:
                            stats[out.code.name] += 1
                        else:
                            unexpected.append(out)
            finally:
                ch.close()

        threads = [threading.Thread(target=watcher, daemon=True)]
        threads += [threading.Thread(target=burst, args=(i,), daemon=True)
                    for i in range(self.THREADS)]
        threads[0].start()
        self.assertTrue(first_status.wait(10), "Health.Watch sent nothing")
        for t in threads[1:]:
            t.start()
        until = time.monotonic() + 10
        while stats["calls"] < 200 and time.monotonic() < until:
            time.sleep(0.02)
        calls_before = stats["calls"]

        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        elapsed = time.monotonic() - t0
        time.sleep(0.3)  # a few calls against the stopped server
        stop.set()
        for t in threads:
            t.join(timeout=20)
        self.assertFalse(any(t.is_alive() for t in threads), "client threads hang")

        summary = "calls=%(calls)d ok=%(ok)d (not_serving=%(not_serving)d) " \
                  "served=%(served)d unavailable=%(UNAVAILABLE)d cancelled=%(CANCELLED)d" % stats
        print("\n    burst: %d calls before SIGTERM, %s, exit after %.2f s"
              % (calls_before, summary, elapsed), file=sys.stderr)
        self.assertIsNotNone(rc, "workflowd did not exit within 10 s of SIGTERM")
        self.assertEqual(rc, 0, "workflowd exit code")
        self.assertGreaterEqual(calls_before, 50, "the burst did not get going")
        self.assertEqual(unexpected[:5], [], "non-retryable failures during shutdown")
        self.assertGreater(stats["not_serving"], 0,
                           "Health.Check never said NOT_SERVING during the drain")

        statuses = watch["statuses"]
        self.assertGreaterEqual(len(statuses), 2, "watch saw %r" % statuses)
        self.assertEqual(statuses[0], SERVING)
        self.assertEqual(statuses[-1], NOT_SERVING, "watch saw %r" % statuses)
        self.assertIn(watch["end"], (SC.OK, SC.UNAVAILABLE, SC.CANCELLED),
                      "watch ended with %r" % watch["end"])


# ---------------------------------------------------------------------------
# Ad-hoc referrals (TaskFlow): the main flow and its refusals
# ---------------------------------------------------------------------------


class ReferralFlowTests(WorkflowTestCase):
    """The acceptance flow of referrals (start -> assign to users with a join ->
    complete all -> the next referral appears in the next inbox -> end), and
    the refusals a client meets on the way: REQUEST_ID_REUSED, a second
    claim of a group task, non-object variables, another tenant's ids.

    Runs on the memory store; ReferralFlowPgTests runs the same tests on
    Postgres. Actors, tenants and request ids are unique per test, so the
    tests also hold on a database that keeps rows from earlier runs."""

    KEY = "py-termination"

    @classmethod
    def start_referral_server(cls):
        return start_server(cls, "referral-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_referral_server()
        cls.wf = cls.srv.workflow()

    def setUp(self):
        # People of this test only, so that inboxes and process lists hold
        # nothing of other tests (or of earlier runs on Postgres).
        self.run_id = uuid.uuid4().hex[:8]
        self.hr, self.it, self.fin, self.mgr = ("%s-%s" % (who, self.run_id) for who in
                                                ("hr-anna", "it-carol", "fin-dave", "mgr-bob"))

    # ---- helpers ----

    def call(self, method, request, actor=None, tenant=None):
        return invoke(getattr(self.wf, method), request, md(actor=actor, tenant=tenant))

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def rid(self):
        return "py-" + uuid.uuid4().hex

    def start_root(self, actor=None, tenant=None, variables='{"employee_id": "E-1042"}'):
        resp = self.ok(self.call("StartInstance", wf_pb2.StartInstanceRequest(
            definition_key=self.KEY, variables_json=variables), actor or self.hr, tenant))
        return resp.instance

    def assign(self, parent, kind, ids, title="Offboard E-1042", actor=None, tenant=None,
               **fields):
        req = wf_pb2.AssignToRequest(parent_instance_id=parent, title=title,
                                     assignee=wf_pb2.Assignee(kind=kind, ids=ids), **fields)
        return self.call("AssignTo", req, actor or self.hr, tenant)

    def list_all(self, method, request, actor=None):
        """Every item of a listing, following next_page_token (2 per page,
        so that paging is exercised too)."""
        items, field = [], {"ListTasks": "tasks", "ListInstances": "instances"}[method]
        request.page_size = 2
        while True:
            resp = self.ok(self.call(method, request, actor))
            items.extend(getattr(resp, field))
            if not resp.next_page_token:
                return items
            request.page_token = resp.next_page_token

    def inbox(self, user):
        return self.list_all("ListTasks", wf_pb2.ListTasksRequest(), actor=user)

    def processes(self, state):
        return [i.id for i in self.list_all(
            "ListInstances", wf_pb2.ListInstancesRequest(state=state), actor=self.hr)]

    def complete(self, task_id, actor, variables=""):
        return self.call("CompleteTask", wf_pb2.CompleteTaskRequest(
            task_id=task_id, variables_json=variables), actor)

    # ---- the main flow ----

    def test_main_flow_join_refers_to_next_inbox(self):
        root = self.start_root(variables='{"employee_id": "E-1042", "last_day": "2024-06-30"}')
        self.assertEqual(root.status, wf_pb2.INSTANCE_STATUS_RUNNING)
        self.assertEqual(root.started_by, self.hr)
        self.assertEqual(root.root_instance_id, root.id)
        self.assertIn(root.id, self.processes(wf_pb2.PROCESS_STATE_NOT_STARTED))

        # HR refers to IT and finance in parallel; the join (ALL) refers on
        # to the manager.
        resp = self.ok(self.assign(
            root.id, wf_pb2.ASSIGNEE_KIND_USERS, [self.it, self.fin],
            join=wf_pb2.JoinPolicy(mode=wf_pb2.COMPLETION_MODE_ALL),
            on_all_completed=wf_pb2.AssignToRequest(
                title="Approve the termination", assignee=wf_pb2.Assignee(
                    kind=wf_pb2.ASSIGNEE_KIND_USER, ids=[self.mgr])),
            request_id=self.rid()))
        referral = resp.instance_id
        self.assertEqual([t.assignee_id for t in resp.tasks], [self.it, self.fin])
        self.assertEqual(resp.task.id, resp.tasks[0].id)
        for t in resp.tasks:
            self.assertEqual(t.assignee_kind, wf_pb2.ASSIGNEE_KIND_USER)
            self.assertEqual(t.status, wf_pb2.TASK_STATUS_OPEN)
            self.assertEqual(t.assigned_by, self.hr)
            self.assertEqual(t.instance_id, referral)
            self.assertEqual(t.root_instance_id, root.id)
        it_task, fin_task = resp.tasks[0].id, resp.tasks[1].id
        self.assertIn(root.id, self.processes(wf_pb2.PROCESS_STATE_OPEN))
        self.assertNotIn(root.id, self.processes(wf_pb2.PROCESS_STATE_NOT_STARTED))
        self.assertEqual([t.id for t in self.inbox(self.it)], [it_task])
        self.assertEqual([t.id for t in self.inbox(self.fin)], [fin_task])
        self.assertEqual(self.inbox(self.mgr), [])

        # IT completes: the join waits for finance.
        done = self.ok(self.complete(it_task, self.it, '{"access_revoked": true}'))
        self.assertEqual(done.task.status, wf_pb2.TASK_STATUS_DONE)
        self.assertEqual(done.task.completed_by, self.it)
        c = done.completion
        self.assertEqual((c.all_completed, c.total, c.open, c.done), (False, 2, 1, 1))
        self.assertFalse(done.HasField("next"), "the join fired too early")
        view = self.ok(self.call("GetInstance", wf_pb2.GetInstanceRequest(instance_id=root.id)))
        self.assertEqual([ch.id for ch in view.children], [referral])
        self.assertEqual([(j.instance_id, j.required, j.done, j.total) for j in view.joins],
                         [(referral, 2, 1, 2)])
        self.assertEqual(self.inbox(self.mgr), [])

        # Finance completes: the join fires, once, in the same call.
        done = self.ok(self.complete(fin_task, self.fin, '{"final_pay": 4210.5}'))
        self.assertTrue(done.completion.all_completed)
        self.assertTrue(done.HasField("next"), "the join did not refer on")
        nxt = done.next
        self.assertEqual(nxt.task.assignee_kind, wf_pb2.ASSIGNEE_KIND_USER)
        self.assertEqual(nxt.task.assignee_id, self.mgr)
        self.assertEqual(nxt.task.assigned_by, self.hr)  # the AssignTo caller, not finance
        self.assertEqual(nxt.task.root_instance_id, root.id)
        self.assertEqual(nxt.task.title, "Approve the termination")
        joined = self.ok(self.call("GetInstance", wf_pb2.GetInstanceRequest(instance_id=referral)))
        self.assertEqual(joined.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(joined.instance.variables_json),
                         {"access_revoked": True, "final_pay": 4210.5})
        view = self.ok(self.call("GetInstance", wf_pb2.GetInstanceRequest(instance_id=root.id)))
        self.assertEqual([ch.id for ch in view.children], [referral, nxt.instance_id])
        self.assertEqual(view.children[1].parent_instance_id, root.id)

        # The next referral is in the manager's inbox, and nowhere else.
        mgr_inbox = self.inbox(self.mgr)
        self.assertEqual([t.id for t in mgr_inbox], [nxt.task.id])
        self.assertEqual(mgr_inbox[0].status, wf_pb2.TASK_STATUS_OPEN)
        self.assertEqual(self.inbox(self.it), [])
        self.assertEqual(self.inbox(self.fin), [])
        self.assert_error(self.complete(fin_task, self.fin), SC.FAILED_PRECONDITION,
                          "TASK_NOT_OPEN")

        # The manager ends the process.
        end = self.ok(self.call("CompleteAndEnd", wf_pb2.CompleteAndEndRequest(
            task_id=nxt.task.id, variables_json='{"approved": true}'), self.mgr))
        self.assertEqual(end.task.status, wf_pb2.TASK_STATUS_DONE)
        self.assertEqual(end.root_instance.id, root.id)
        self.assertEqual(end.root_instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(len(end.cancelled_tasks), 0)
        self.assertIn(root.id, self.processes(wf_pb2.PROCESS_STATE_CLOSED))
        self.assertNotIn(root.id, self.processes(wf_pb2.PROCESS_STATE_OPEN))
        self.assertEqual(self.inbox(self.mgr), [])
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it]),
                          SC.FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING")

    # ---- refusals ----

    def test_changed_retry_request_id_reused(self):
        root = self.start_root()
        rid = self.rid()
        first = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                    request_id=rid))
        # The same request again: the first response, nothing created.
        again = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                    request_id=rid))
        self.assertEqual(again.instance_id, first.instance_id)
        self.assertEqual(again.task.id, first.task.id)
        # The same id with a changed request.
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.fin],
                                      request_id=rid),
                          SC.FAILED_PRECONDITION, "REQUEST_ID_REUSED")
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                      title="Another title", request_id=rid),
                          SC.FAILED_PRECONDITION, "REQUEST_ID_REUSED")
        # The same request by another actor is another request too.
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                      actor=self.mgr, request_id=rid),
                          SC.FAILED_PRECONDITION, "REQUEST_ID_REUSED")
        view = self.ok(self.call("GetInstance", wf_pb2.GetInstanceRequest(instance_id=root.id)))
        self.assertEqual([c.id for c in view.children], [first.instance_id])

        # CompleteTask: a retry returns the first response; a changed one
        # is refused and changes nothing.
        crid = self.rid()
        req = wf_pb2.CompleteTaskRequest(task_id=first.task.id, variables_json='{"ok": true}',
                                         request_id=crid)
        done = self.ok(self.call("CompleteTask", req, self.it))
        again = self.ok(self.call("CompleteTask", req, self.it))
        self.assertEqual(again.task.ended_at, done.task.ended_at)
        self.assertEqual(again.task.status, wf_pb2.TASK_STATUS_DONE)
        req.variables_json = '{"ok": false}'
        self.assert_error(self.call("CompleteTask", req, self.it),
                          SC.FAILED_PRECONDITION, "REQUEST_ID_REUSED")

    def test_second_claim_of_group_task_already_claimed(self):
        root = self.start_root()
        group = "it-" + self.run_id
        task = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_GROUP, [group])).task
        self.assertEqual((task.assignee_kind, task.assignee_id),
                         (wf_pb2.ASSIGNEE_KIND_GROUP, group))
        queue = self.list_all("ListTasks", wf_pb2.ListTasksRequest(group=group))
        self.assertEqual([t.id for t in queue], [task.id])
        # Completing before a claim is refused.
        self.assert_error(self.complete(task.id, self.it), SC.FAILED_PRECONDITION,
                          "TASK_NOT_CLAIMED")
        claim = wf_pb2.ClaimTaskRequest(task_id=task.id)
        held = self.ok(self.call("ClaimTask", claim, self.it)).task
        self.assertEqual((held.status, held.claimed_by), (wf_pb2.TASK_STATUS_CLAIMED, self.it))
        # It has left the group's queue (by default OPEN only); asked for,
        # the group's CLAIMED tasks list it.
        self.assertEqual(self.list_all("ListTasks", wf_pb2.ListTasksRequest(group=group)), [])
        self.assertEqual(self.list_all("ListTasks", wf_pb2.ListTasksRequest(
            group=group, states=[wf_pb2.TASK_STATUS_OPEN])), [])
        queue = self.list_all("ListTasks", wf_pb2.ListTasksRequest(
            group=group, states=[wf_pb2.TASK_STATUS_CLAIMED]))
        self.assertEqual([(t.id, t.status) for t in queue], [(task.id, wf_pb2.TASK_STATUS_CLAIMED)])
        self.assertEqual([t.id for t in self.inbox(self.it)], [task.id])
        # Claiming a task one holds changes nothing.
        again = self.ok(self.call("ClaimTask", claim, self.it)).task
        self.assertEqual((again.status, again.claimed_by), (wf_pb2.TASK_STATUS_CLAIMED, self.it))
        # A second member.
        other = "it-erik-" + self.run_id
        self.assert_error(self.call("ClaimTask", claim, other), SC.FAILED_PRECONDITION,
                          "TASK_ALREADY_CLAIMED")
        self.assert_error(self.complete(task.id, other), SC.PERMISSION_DENIED, "NOT_ASSIGNEE")
        self.assert_error(self.call("ReleaseTask", wf_pb2.ReleaseTaskRequest(task_id=task.id),
                                    other), SC.PERMISSION_DENIED, "NOT_ASSIGNEE")
        still = self.ok(self.call("GetTask", wf_pb2.GetTaskRequest(task_id=task.id))).task
        self.assertEqual((still.status, still.claimed_by), (wf_pb2.TASK_STATUS_CLAIMED, self.it))
        done = self.ok(self.complete(task.id, self.it)).task
        self.assertEqual((done.status, done.completed_by), (wf_pb2.TASK_STATUS_DONE, self.it))
        self.assert_error(self.call("ClaimTask", claim, other), SC.FAILED_PRECONDITION,
                          "TASK_NOT_OPEN")

    def test_non_object_variables_invalid_json(self):
        for bad in ('[1, 2]', '42', '"text"', 'null', '{"a": ', 'not json'):
            out = self.call("StartInstance", wf_pb2.StartInstanceRequest(
                definition_key=self.KEY, variables_json=bad), self.hr)
            self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_JSON")
        root = self.start_root()
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                      variables_json='["a"]'),
                          SC.INVALID_ARGUMENT, "INVALID_JSON")
        task = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it])).task
        self.assert_error(self.complete(task.id, self.it, 'true'), SC.INVALID_ARGUMENT,
                          "INVALID_JSON")
        # Nothing changed: the task is still open.
        still = self.ok(self.call("GetTask", wf_pb2.GetTaskRequest(task_id=task.id))).task
        self.assertEqual(still.status, wf_pb2.TASK_STATUS_OPEN)
        # The empty string means {}.
        self.ok(self.complete(task.id, self.it, ""))

    def test_error_details_reasons_paths_and_ids(self):
        # DEFINITION_INVALID: one violation per error, at its request path,
        # with the validation code as reason; the metadata names the key.
        key = "py-bad-" + self.run_id
        d = wf_pb2.Definition(key=key, kind=wf_pb2.DEFINITION_KIND_NET)
        d.places.add(id="s1", kind=wf_pb2.PLACE_KIND_START)
        d.places.add(id="s2", kind=wf_pb2.PLACE_KIND_START)
        d.transitions.add(id="t", trigger=wf_pb2.TRIGGER_USER)
        d.arcs.add(source="s1", target="t")
        d.arcs.add(source="t", target="nowhere")
        out = self.call("DeployDefinition", wf_pb2.DeployDefinitionRequest(definition=d), self.hr)
        self.assert_error(out, SC.INVALID_ARGUMENT, "DEFINITION_INVALID")
        self.assertEqual(dict(out.info.metadata), {"definitionKey": key})
        violations = {(v.field, v.reason) for v in bad_request(out.status).field_violations}
        self.assertIn(("definition.places", "START_PLACE_COUNT"), violations)
        self.assertIn(("definition.places", "END_PLACE_COUNT"), violations)
        self.assertIn(("definition.transitions[0].assignee", "TRIGGER_FIELD_MISSING"), violations)
        self.assertIn(("definition.arcs[1].target", "UNKNOWN_REFERENCE"), violations)
        for v in bad_request(out.status).field_violations:
            self.assertFalse(v.description.startswith(v.reason), v)
        # The same findings with validate_only: paths relative to the definition.
        resp = self.ok(self.call("DeployDefinition", wf_pb2.DeployDefinitionRequest(
            definition=d, validate_only=True), self.hr))
        self.assertIn(("places", "START_PLACE_COUNT"), {(e.path, e.code) for e in resp.errors})

        # NOT_FOUND errors name the id they did not find.
        missing = "01930000-0000-7000-8000-" + uuid.uuid4().hex[:12]
        out = self.call("GetTask", wf_pb2.GetTaskRequest(task_id=missing))
        self.assert_error(out, SC.NOT_FOUND, "TASK_NOT_FOUND")
        self.assertEqual(dict(out.info.metadata), {"taskId": missing})
        out = self.call("GetInstance", wf_pb2.GetInstanceRequest(instance_id=missing))
        self.assert_error(out, SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assertEqual(dict(out.info.metadata), {"instanceId": missing})
        out = self.call("CompleteJob", wf_pb2.CompleteJobRequest(job_key=missing + ".x"))
        self.assertIn(out.reason, ("JOB_NOT_FOUND", "JOB_LEASE_LOST"), out)
        self.assertEqual(dict(out.info.metadata), {"jobKey": missing + ".x"})
        # A task rule names the task; an AssignTo violation carries the
        # error's reason at its request path.
        root = self.start_root()
        task = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it])).task
        out = self.complete(task.id, self.fin)
        self.assert_error(out, SC.PERMISSION_DENIED, "NOT_ASSIGNEE")
        self.assertEqual(dict(out.info.metadata), {"taskId": task.id})
        out = self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it], title="")
        self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        self.assertEqual([(v.field, v.reason) for v in bad_request(out.status).field_violations],
                         [("title", "INVALID_ARGUMENT")])

    def test_other_tenant_instance_not_found(self):
        tenant_a, tenant_b = "py-a-" + self.run_id, "py-b-" + self.run_id
        root = self.start_root(tenant=tenant_a)
        self.assertEqual(root.tenant_id, tenant_a)
        task = self.ok(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                   tenant=tenant_a)).task
        get = wf_pb2.GetInstanceRequest(instance_id=root.id)
        self.ok(self.call("GetInstance", get, tenant=tenant_a))
        self.assert_error(self.call("GetInstance", get, tenant=tenant_b),
                          SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.call("GetInstance", get),  # the default tenant
                          SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.assign(root.id, wf_pb2.ASSIGNEE_KIND_USER, [self.it],
                                      tenant=tenant_b),
                          SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.call("GetCompletion", wf_pb2.GetCompletionRequest(
            instance_id=task.instance_id), tenant=tenant_b), SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.call("CancelInstance", wf_pb2.CancelInstanceRequest(
            instance_id=root.id), self.hr, tenant_b), SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.call("GetTask", wf_pb2.GetTaskRequest(task_id=task.id),
                                    tenant=tenant_b), SC.NOT_FOUND, "TASK_NOT_FOUND")
        self.assert_error(self.complete(task.id, self.it), SC.NOT_FOUND, "TASK_NOT_FOUND")
        # Tenant b sees nothing of tenant a in the lists either.
        self.assertEqual(list(self.ok(self.call("ListTasks", wf_pb2.ListTasksRequest(
            user=self.it), tenant=tenant_b)).tasks), [])
        # Malformed and empty ids.
        self.assert_error(self.call("GetInstance", wf_pb2.GetInstanceRequest(
            instance_id="not-a-uuid"), tenant=tenant_a), SC.NOT_FOUND, "INSTANCE_NOT_FOUND")
        self.assert_error(self.call("GetInstance", wf_pb2.GetInstanceRequest(),
                                    tenant=tenant_a), SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        # Tenant a's own call still works: nothing was cancelled.
        self.ok(self.call("CompleteTask", wf_pb2.CompleteTaskRequest(task_id=task.id),
                          self.it, tenant_a))


class ReferralFlowPgTests(ReferralFlowTests):
    """ReferralFlowTests against a server on Postgres (DATABASE_URL =
    $WF_TEST_PG_DSN, which test.sh sets); skipped without it."""

    @classmethod
    def start_referral_server(cls):
        dsn = pg_dsn_or_skip("ReferralFlowTests")
        return start_server(cls, "referral-pg", DATABASE_URL=dsn)


class JobStreamTests(WorkflowTestCase):
    """A worker as a generated client writes it: StreamActivatedJobs pushes
    the oldest jobs within the credit, CompleteJobs answers one outcome per
    item, and a completion gives the credit back."""

    @classmethod
    def setUpClass(cls):
        cls.srv = start_server(cls, "jobstream")
        cls.wf = cls.srv.workflow()

    def test_push_within_credit_and_batch_completion(self):
        run = uuid.uuid4().hex[:8]
        key, job_type = "py-push-" + run, "py-push-job-" + run
        d = wf_pb2.Definition(
            key=key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(id="work", trigger=wf_pb2.TRIGGER_AUTO,
                                           job_type=job_type)],
            arcs=[wf_pb2.Arc(source="s", target="work"), wf_pb2.Arc(source="work", target="e")])
        out = invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="dev"))
        self.assertEqual(out.code, SC.OK, "deploy: %r" % out)
        ids = []
        for _ in range(3):
            out = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(definition_key=key),
                         md(actor="dev"))
            self.assertEqual(out.code, SC.OK, "start: %r" % out)
            ids.append(out.response.instance.id)
        stream = self.wf.StreamActivatedJobs(
            wf_pb2.StreamActivatedJobsRequest(job_type=job_type, worker="py", credit=2),
            metadata=md(), timeout=30)
        try:
            first, second = next(stream).job, next(stream).job
            self.assertEqual([first.instance_id, second.instance_id], ids[:2])
            self.assertEqual(first.worker, "py")
            out = invoke(self.wf.CompleteJobs, wf_pb2.CompleteJobsRequest(completions=[
                wf_pb2.CompleteJobRequest(job_key=first.key),
                wf_pb2.CompleteJobRequest(job_key="not-a-key")]), md())
            self.assertEqual(out.code, SC.OK, "CompleteJobs: %r" % out)
            results = out.response.results
            self.assertEqual([r.code for r in results],
                             [SC.OK.value[0], SC.NOT_FOUND.value[0]])
            self.assertEqual([r.reason for r in results], ["", "JOB_NOT_FOUND"])
            # The completed item gave one credit back: the third job comes.
            self.assertEqual(next(stream).job.instance_id, ids[2])
        finally:
            stream.cancel()
        out = invoke(self.wf.CompleteJobs, wf_pb2.CompleteJobsRequest(), md())
        self.assert_error(out, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        bad = self.wf.StreamActivatedJobs(
            wf_pb2.StreamActivatedJobsRequest(job_type=job_type, credit=0), metadata=md(),
            timeout=10)
        with self.assertRaises(grpc.RpcError) as caught:
            next(bad)
        self.assertEqual(caught.exception.code(), SC.INVALID_ARGUMENT)


class JobPriorityTests(WorkflowTestCase):
    """Job priority as a generated client sets it: a transition's
    job_priority_expression over the start variables, UpdateJob (JobPriority
    message, request_id replay, JOB_NOT_FOUND), and ActivateJobs taking the
    highest priority first. Runs on the memory store; JobPriorityPgTests on
    Postgres."""

    @classmethod
    def start_priority_server(cls):
        return start_server(cls, "priority-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_priority_server()
        cls.wf = cls.srv.workflow()

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def test_priority_from_variables_and_update_job(self):
        run = uuid.uuid4().hex[:8]
        key, job_type = "py-prio-" + run, "py-prio-job-" + run
        d = wf_pb2.Definition(
            key=key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(
                id="work", trigger=wf_pb2.TRIGGER_AUTO, job_type=job_type,
                job_priority_expression="if .vip then 90 else 10 end")],
            arcs=[wf_pb2.Arc(source="s", target="work"), wf_pb2.Arc(source="work", target="e")])
        self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                       md(actor="dev")))
        ids = []
        for vip in ("false", "false", "true"):
            ids.append(self.ok(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
                definition_key=key, variables_json='{"vip": %s}' % vip),
                md(actor="shop"))).instance.id)
        jobs = [self.ok(invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=i),
                               md())).jobs[0] for i in ids]
        self.assertEqual([j.priority for j in jobs], [10, 10, 90])
        # The second plain order becomes urgent; a retry of the call with
        # the same request_id answers the same.
        req = wf_pb2.UpdateJobRequest(instance_id=ids[1], job_id=jobs[1].id,
                                      priority=wf_pb2.JobPriority(value=95),
                                      request_id="py-upd-" + run)
        first = self.ok(invoke(self.wf.UpdateJob, req, md()))
        again = self.ok(invoke(self.wf.UpdateJob, req, md()))
        self.assertEqual(first.job.priority, 95)
        self.assertEqual(again.job, first.job)
        got = self.ok(invoke(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=job_type, worker="py", max_jobs=3), md())).jobs
        self.assertEqual([j.instance_id for j in got], [ids[1], ids[2], ids[0]])
        self.assertEqual([j.priority for j in got], [95, 90, 10])
        self.assert_error(invoke(self.wf.UpdateJob, wf_pb2.UpdateJobRequest(
            instance_id=ids[0], job_id=str(uuid.uuid4()),
            priority=wf_pb2.JobPriority(value=1)), md()), SC.NOT_FOUND, "JOB_NOT_FOUND")
        self.assert_error(invoke(self.wf.UpdateJob, wf_pb2.UpdateJobRequest(
            instance_id=ids[0], job_id=jobs[0].id), md()),
            SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    def test_fairness_keys_share_a_pass(self):
        # A tenant's backlog of 50 orders, then one order each of two
        # other tenants: a pass of three takes the backlog's oldest and
        # both, each job carrying its key (Job.fairness_key).
        run = uuid.uuid4().hex[:8]
        key, job_type = "py-fair-" + run, "py-fair-job-" + run
        d = wf_pb2.Definition(
            key=key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(
                id="work", trigger=wf_pb2.TRIGGER_AUTO, job_type=job_type,
                job_fairness_key_expression=".tenant")],
            arcs=[wf_pb2.Arc(source="s", target="work"), wf_pb2.Arc(source="work", target="e")])
        self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                       md(actor="dev")))

        def start(tenant):
            return self.ok(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
                definition_key=key, variables_json='{"tenant": "%s"}' % tenant),
                md(actor="shop"))).instance.id
        big = [start("big") for _ in range(50)]
        small = [start("a"), start("b")]
        got = self.ok(invoke(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=job_type, worker="py", max_jobs=3), md())).jobs
        self.assertEqual([j.instance_id for j in got], [big[0]] + small)
        self.assertEqual([j.fairness_key for j in got], ["big", "a", "b"])
        bad = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, variables_json='{"tenant": {"id": 1}}'), md(actor="shop"))
        self.assert_error(bad, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")


class JobPriorityPgTests(JobPriorityTests):
    """JobPriorityTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_priority_server(cls):
        dsn = pg_dsn_or_skip("JobPriorityTests")
        return start_server(cls, "priority-pg", DATABASE_URL=dsn)


class ForEachTests(WorkflowTestCase):
    """A for-each transition as a generated client uses it: an order fans
    out per line item (Transition.for_each), each job carries its item and
    index, GetInstance shows the progress (ForEachProgress), the outputs
    come back in item order, and a start whose lines are no array is
    refused with FOREACH_NOT_ARRAY. Runs on the memory store; ForEachPgTests
    on Postgres."""

    @classmethod
    def start_foreach_server(cls):
        return start_server(cls, "foreach-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_foreach_server()
        cls.wf = cls.srv.workflow()

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def test_order_fans_out_per_line_item(self):
        run = uuid.uuid4().hex[:8]
        key, job_type = "py-each-" + run, "py-charge-" + run
        d = wf_pb2.Definition(
            key=key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(
                id="charge", trigger=wf_pb2.TRIGGER_AUTO, job_type=job_type,
                for_each=".order.lines", for_each_item="line", for_each_output="charges")],
            arcs=[wf_pb2.Arc(source="s", target="charge"),
                  wf_pb2.Arc(source="charge", target="e")])
        self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                       md(actor="dev")))
        lines = [{"sku": "A", "price": 5}, {"sku": "B", "price": 7}, {"sku": "C", "price": 11}]
        order = {"order": {"id": run, "lines": lines}}
        inst = self.ok(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, variables_json=json.dumps(order)), md(actor="shop"))).instance
        got = self.ok(invoke(self.wf.GetInstance,
                             wf_pb2.GetInstanceRequest(instance_id=inst.id), md()))
        self.assertEqual(len(got.for_each), 1)
        self.assertEqual((got.for_each[0].transition_id, got.for_each[0].total,
                          got.for_each[0].completed), ("charge", 3, 0))
        jobs = self.ok(invoke(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=job_type, worker="py", max_jobs=10), md())).jobs
        self.assertEqual(len(jobs), 3)
        for j in reversed(jobs):
            v = json.loads(j.variables_json)
            self.assertEqual(v["line"], lines[v["line_index"]])
            self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
                job_key=j.key, variables_json=json.dumps(
                    {"charged": v["line"]["price"] * 100})), md()))
        done = self.ok(invoke(self.wf.GetInstance,
                              wf_pb2.GetInstanceRequest(instance_id=inst.id), md()))
        self.assertEqual(done.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(done.instance.variables_json)["charges"],
                         [{"charged": 500}, {"charged": 700}, {"charged": 1100}])
        self.assert_error(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, variables_json='{"order": {"lines": "A"}}'), md(actor="shop")),
            SC.FAILED_PRECONDITION, "FOREACH_NOT_ARRAY")


class ForEachPgTests(ForEachTests):
    """ForEachTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_foreach_server(cls):
        dsn = pg_dsn_or_skip("ForEachTests")
        return start_server(cls, "foreach-pg", DATABASE_URL=dsn)


class StepListTests(WorkflowTestCase):
    """A step-list definition (DEFINITION_KIND_STEPS) as a generated client
    uses it: deploy the steps, read them back with the compiled net, run the
    instance with jobs, a worker's next_step goto (also in a CompleteJobs
    batch), an unknown step refused, and an await step woken by a signal.
    Runs on the memory store; StepListPgTests runs it on Postgres."""

    @classmethod
    def start_steps_server(cls):
        return start_server(cls, "steps-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_steps_server()
        cls.wf = cls.srv.workflow()

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def job(self, job_type):
        resp = self.ok(invoke(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type=job_type, worker="py", max_jobs=5,
            wait=duration_pb2.Duration(seconds=2)), md()))
        self.assertEqual(len(resp.jobs), 1, "jobs of %s: %r" % (job_type, resp.jobs))
        return resp.jobs[0]

    def current(self, instance_id):
        resp = self.ok(invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(
            instance_id=instance_id), md()))
        return [c.id for c in resp.current_steps], resp

    def test_deploy_run_with_jobs_and_a_goto(self):
        run = uuid.uuid4().hex[:8]
        key = "py-steps-" + run
        types = {name: "py-%s-%s" % (name, run) for name in ("reserve", "charge", "ship", "wrap")}
        # `await` is a Python keyword: the field is await_signal.
        d = wf_pb2.Definition(key=key, kind=wf_pb2.DEFINITION_KIND_STEPS, steps=[
            wf_pb2.Step(id="reserve", name="Reserve stock",
                        job=wf_pb2.JobStep(job_type=types["reserve"]),
                        retry=wf_pb2.RetryPolicy(max_attempts=2),
                        compensation_job_type="py-release-" + run),
            wf_pb2.Step(id="charge", job=wf_pb2.JobStep(job_type=types["charge"]),
                        next=[wf_pb2.NextRule(guard=".gift == true", step="wrap")]),
            wf_pb2.Step(id="carrier", await_signal=wf_pb2.AwaitStep(
                signal_name="picked_up", correlation=wf_pb2.CORRELATION_AGGREGATE,
                timeout=duration_pb2.Duration(seconds=172800))),
            wf_pb2.Step(id="ship", job=wf_pb2.JobStep(job_type=types["ship"])),
            wf_pb2.Step(id="wrap", job=wf_pb2.JobStep(job_type=types["wrap"])),
        ])
        out = self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=d), md(actor="dev")))
        self.assertTrue(out.created)
        again = self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=d), md(actor="dev")))
        self.assertFalse(again.created)
        self.assertEqual(again.definition.version, out.definition.version)

        got = self.ok(invoke(self.wf.GetDefinition, wf_pb2.GetDefinitionRequest(key=key),
                             md())).definition
        self.assertEqual(got.kind, wf_pb2.DEFINITION_KIND_STEPS)
        self.assertEqual([s.id for s in got.steps], ["reserve", "charge", "carrier", "ship", "wrap"])
        self.assertEqual(got.steps[0].job.job_type, types["reserve"])
        self.assertEqual(got.steps[2].await_signal.timeout.seconds, 172800)
        self.assertEqual(got.steps[1].next[0].step, "wrap")
        self.assertIn("reserve:ready", [p.id for p in got.places])
        self.assertIn("carrier:timeout", [t.id for t in got.transitions])
        self.assertTrue(any(a.source == "charge" and a.target == "wrap:ready" and
                            a.guard == ".gift == true" for a in got.arcs))

        order = "py-order-" + run
        inst = self.ok(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, variables_json='{"gift": false}',
            aggregate=wf_pb2.Aggregate(type="order", id=order)), md(actor="shop"))).instance
        self.assertEqual(self.current(inst.id)[0], ["reserve"])
        job = self.job(types["reserve"])
        self.assertEqual(job.transition_id, "reserve")
        # An unknown step is refused with a reason, and nothing changes.
        bad = invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=job.key, next_step="nowhere"), md())
        self.assert_error(bad, SC.INVALID_ARGUMENT, "UNKNOWN_STEP")
        self.assertEqual(self.current(inst.id)[0], ["reserve"])
        self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=job.key, variables_json='{"reserved": true}'), md()))
        # The worker of charge says "goto wrap" in a CompleteJobs batch,
        # although the rule's guard is false.
        job = self.job(types["charge"])
        res = self.ok(invoke(self.wf.CompleteJobs, wf_pb2.CompleteJobsRequest(completions=[
            wf_pb2.CompleteJobRequest(job_key=job.key, next_step="wrap")]), md())).results
        self.assertEqual([r.code for r in res], [SC.OK.value[0]])
        self.assertEqual(self.current(inst.id)[0], ["wrap"])
        self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=self.job(types["wrap"]).key), md()))
        self.assertEqual(self.current(inst.id)[1].instance.status,
                         wf_pb2.INSTANCE_STATUS_COMPLETED)

        # A second order takes the plain path through the await step.
        order2 = order + "-2"
        inst = self.ok(invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
            definition_key=key, aggregate=wf_pb2.Aggregate(type="order", id=order2)),
            md(actor="shop"))).instance
        for name in ("reserve", "charge"):
            self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
                job_key=self.job(types[name]).key), md()))
        steps, view = self.current(inst.id)
        self.assertEqual(steps, ["carrier"])
        self.assertEqual(view.awaiting_signals[0].transition_id, "carrier")
        sent = self.ok(invoke(self.wf.SendSignal, wf_pb2.SendSignalRequest(
            name="picked_up", aggregate=wf_pb2.Aggregate(type="order", id=order2),
            payload_json='{"tracking": "JD1"}'), md()))
        self.assertEqual(sent.outcome, wf_pb2.SIGNAL_OUTCOME_CORRELATED)
        self.assertEqual(self.current(inst.id)[0], ["ship"])
        self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=self.job(types["ship"]).key), md()))
        self.ok(invoke(self.wf.CompleteJob, wf_pb2.CompleteJobRequest(
            job_key=self.job(types["wrap"]).key), md()))
        done = self.current(inst.id)[1].instance
        self.assertEqual(done.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertIn('"tracking":"JD1"', done.variables_json)

    def test_invalid_step_list_lists_every_error(self):
        d = wf_pb2.Definition(key="py-steps-bad-" + uuid.uuid4().hex[:8],
                              kind=wf_pb2.DEFINITION_KIND_STEPS, steps=[
            wf_pb2.Step(id="a", job=wf_pb2.JobStep(job_type="t"),
                        next=[wf_pb2.NextRule(step="ghost")]),
            wf_pb2.Step(id="a"),
        ])
        out = self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=d, validate_only=True), md(actor="dev")))
        found = {(e.code, e.path) for e in out.errors}
        self.assertIn(("UNKNOWN_STEP", "steps[0].next[0].step"), found)
        self.assertIn(("DUPLICATE_ID", "steps[1].id"), found)
        self.assertIn(("STEP_KIND_MISSING", "steps[1]"), found)
        self.assert_error(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=d), md(actor="dev")), SC.INVALID_ARGUMENT, "DEFINITION_INVALID")


class StepListPgTests(StepListTests):
    """StepListTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_steps_server(cls):
        dsn = pg_dsn_or_skip("StepListTests")
        return start_server(cls, "steps-pg", DATABASE_URL=dsn)

class ScheduleTests(WorkflowTestCase):
    """Schedules as a generated client uses them: create one, trigger it,
    and follow its runs page by page to the instances they started. Runs
    on the memory store; SchedulePgTests runs it on Postgres."""

    @classmethod
    def start_schedule_server(cls):
        return start_server(cls, "schedules-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_schedule_server()
        cls.wf = cls.srv.workflow()

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def runs(self, schedule_id):
        """Every run of the schedule, newest first, read two a page."""
        out, token = [], ""
        for _ in range(50):
            page = self.ok(invoke(self.wf.ListScheduleRuns, wf_pb2.ListScheduleRunsRequest(
                schedule_id=schedule_id, page_size=2, page_token=token), md()))
            out.extend(page.runs)
            token = page.next_page_token
            if not token:
                return out
        self.fail("ListScheduleRuns did not end in 50 pages")

    def test_create_trigger_and_follow_runs(self):
        run = uuid.uuid4().hex[:8]
        key = "py-sched-" + run
        self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=wf_pb2.Definition(key=key, kind=wf_pb2.DEFINITION_KIND_STEPS, steps=[
                wf_pb2.Step(id="work", job=wf_pb2.JobStep(job_type="py-sched-work-" + run))])),
            md(actor="dev")))
        sid = "py-nightly-" + run
        policy = wf_pb2.SchedulePolicy(overlap=wf_pb2.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE)
        created = self.ok(invoke(self.wf.CreateSchedule, wf_pb2.CreateScheduleRequest(
            id=sid, definition_key=key, variables_json='{"region": "eu"}',
            spec=wf_pb2.ScheduleSpec(cron="30 2 * * *", time_zone="Europe/Berlin"),
            policy=policy, request_id="create-" + run), md(actor="ops"))).schedule
        self.assertEqual(created.state, wf_pb2.SCHEDULE_STATE_ACTIVE)
        self.assertEqual(created.policy.overlap, wf_pb2.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE)
        self.assertEqual(len(created.upcoming), 10)
        self.assertTrue(created.upcoming[0].local_time.endswith(("+01:00", "+02:00")))
        self.assert_error(invoke(self.wf.CreateSchedule, wf_pb2.CreateScheduleRequest(
            id="bad-" + sid, definition_key=key, spec=wf_pb2.ScheduleSpec(cron="61 * * * *")),
            md(actor="ops")), SC.INVALID_ARGUMENT, "INVALID_CRON")

        started = []
        for i in range(3):
            req = wf_pb2.TriggerScheduleRequest(id=sid, request_id="trigger-%d-%s" % (i, run))
            first = self.ok(invoke(self.wf.TriggerSchedule, req, md(actor="ops"))).run
            again = self.ok(invoke(self.wf.TriggerSchedule, req, md(actor="ops"))).run
            self.assertEqual(first.outcome, wf_pb2.SCHEDULE_RUN_OUTCOME_STARTED)
            self.assertTrue(first.manual)
            self.assertEqual(again.instance_id, first.instance_id)  # replayed, not started twice
            started.append(first.instance_id)

        runs = self.runs(sid)
        self.assertEqual([r.instance_id for r in runs], started[::-1])
        for r in runs:
            self.assertEqual(r.schedule_id, sid)
            self.assertEqual(r.outcome, wf_pb2.SCHEDULE_RUN_OUTCOME_STARTED)
            self.assertFalse(r.HasField("buffered_time"))
            inst = self.ok(invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(
                instance_id=r.instance_id), md())).instance
            self.assertEqual(inst.status, wf_pb2.INSTANCE_STATUS_RUNNING)
            variables = json.loads(inst.variables_json)
            self.assertEqual(variables["schedule"]["id"], sid)
            self.assertEqual(variables["region"], "eu")
        self.assert_error(invoke(self.wf.ListScheduleRuns, wf_pb2.ListScheduleRunsRequest(
            schedule_id="nope-" + run), md()), SC.NOT_FOUND, "SCHEDULE_NOT_FOUND")

    def test_backfill_a_past_range(self):
        run = uuid.uuid4().hex[:8]
        key = "py-backfill-" + run
        self.ok(invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(
            definition=wf_pb2.Definition(key=key, kind=wf_pb2.DEFINITION_KIND_STEPS, steps=[
                wf_pb2.Step(id="work", job=wf_pb2.JobStep(job_type="py-backfill-work-" + run))])),
            md(actor="dev")))
        sid = "py-hourly-" + run
        self.ok(invoke(self.wf.CreateSchedule, wf_pb2.CreateScheduleRequest(
            id=sid, definition_key=key, spec=wf_pb2.ScheduleSpec(interval="every 1h"),
            policy=wf_pb2.SchedulePolicy(overlap=wf_pb2.SCHEDULE_OVERLAP_POLICY_SKIP)),
            md(actor="ops")))
        end = int(time.time()) // 3600 * 3600  # a fire time, not after now
        to_time = timestamp_pb2.Timestamp(seconds=end)
        req = wf_pb2.BackfillScheduleRequest(
            schedule_id=sid, from_time=timestamp_pb2.Timestamp(seconds=end - 3 * 3600),
            to_time=to_time, overlap=wf_pb2.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
            request_id="backfill-" + run)
        first = self.ok(invoke(self.wf.BackfillSchedule, req, md(actor="ops")))
        self.assertEqual([r.nominal_time.seconds for r in first.runs],
                         [end - 3 * 3600, end - 2 * 3600, end - 3600])
        for r in first.runs:
            self.assertTrue(r.backfill)
            self.assertEqual(r.outcome, wf_pb2.SCHEDULE_RUN_OUTCOME_STARTED)
        again = self.ok(invoke(self.wf.BackfillSchedule, req, md(actor="ops")))
        self.assertEqual([r.instance_id for r in again.runs],
                         [r.instance_id for r in first.runs])  # replayed
        req.request_id = "backfill-again-" + run
        repeat = self.ok(invoke(self.wf.BackfillSchedule, req, md(actor="ops")))
        self.assertEqual(len(repeat.runs), 0)
        self.assertEqual(repeat.already_handled, 3)
        runs = self.runs(sid)
        self.assertEqual(sorted(r.instance_id for r in runs),
                         sorted(r.instance_id for r in first.runs))
        self.assertTrue(all(r.backfill for r in runs))
        self.assert_error(invoke(self.wf.BackfillSchedule, wf_pb2.BackfillScheduleRequest(
            schedule_id=sid, from_time=timestamp_pb2.Timestamp(seconds=end - 5000 * 3600),
            to_time=to_time), md(actor="ops")), SC.INVALID_ARGUMENT, "BACKFILL_TOO_LARGE")


class SchedulePgTests(ScheduleTests):
    """ScheduleTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_schedule_server(cls):
        dsn = pg_dsn_or_skip("ScheduleTests")
        return start_server(cls, "schedules-pg", DATABASE_URL=dsn)


class ResourceTests(WorkflowTestCase):
    """Resources as a generated client declares them: a keyed capacity and
    a rate, read back, listed page by page, updated and deleted. Runs on
    the memory store; ResourcePgTests runs it on Postgres."""

    @classmethod
    def start_resource_server(cls):
        return start_server(cls, "resources-memory")

    @classmethod
    def setUpClass(cls):
        cls.srv = cls.start_resource_server()
        cls.wf = cls.srv.workflow()

    def ok(self, outcome):
        self.assertEqual(outcome.code, SC.OK, "unexpected outcome %r" % outcome)
        return outcome.response

    def test_declare_list_update_delete(self):
        tenant = "py-res-" + uuid.uuid4().hex[:8]
        charges = wf_pb2.DeclareResourceRequest(name="charges", capacity=2, per_key=True,
                                                request_id="declare-charges")
        first = self.ok(invoke(self.wf.DeclareResource, charges, md(tenant=tenant, actor="ops")))
        self.assertTrue(first.created)
        self.assertEqual(first.resource.strategy, wf_pb2.RESOURCE_STRATEGY_QUEUE)
        again = self.ok(invoke(self.wf.DeclareResource, charges, md(tenant=tenant, actor="ops")))
        self.assertEqual(again, first)  # replayed under its request id
        rate = wf_pb2.ResourceRate(limit=100)
        rate.period.FromSeconds(60)
        self.ok(invoke(self.wf.DeclareResource, wf_pb2.DeclareResourceRequest(
            name="carrier.api", rate=rate), md(tenant=tenant, actor="ops")))
        got = self.ok(invoke(self.wf.GetResource, wf_pb2.GetResourceRequest(name="carrier.api"),
                             md(tenant=tenant))).resource
        self.assertEqual((got.rate.limit, got.rate.period.seconds), (100, 60))
        names, token = [], ""
        for _ in range(10):
            page = self.ok(invoke(self.wf.ListResources, wf_pb2.ListResourcesRequest(
                page_size=1, page_token=token), md(tenant=tenant)))
            names.extend(r.name for r in page.resources)
            token = page.next_page_token
            if not token:
                break
        self.assertEqual(sorted(names), ["carrier.api", "charges"])
        updated = self.ok(invoke(self.wf.UpdateResource, wf_pb2.UpdateResourceRequest(
            name="charges", capacity=1, per_key=True), md(tenant=tenant, actor="ops"))).resource
        self.assertEqual((updated.capacity, updated.version), (1, 2))
        self.assert_error(invoke(self.wf.DeclareResource, wf_pb2.DeclareResourceRequest(
            name="no rate", capacity=1), md(tenant=tenant, actor="ops")),
            SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        self.ok(invoke(self.wf.DeleteResource, wf_pb2.DeleteResourceRequest(name="charges"),
                       md(tenant=tenant, actor="ops")))
        self.assert_error(invoke(self.wf.GetResource, wf_pb2.GetResourceRequest(name="charges"),
                                 md(tenant=tenant)), SC.NOT_FOUND, "RESOURCE_NOT_FOUND")


class ResourcePgTests(ResourceTests):
    """ResourceTests against a server on Postgres; skipped without
    WF_TEST_PG_DSN."""

    @classmethod
    def start_resource_server(cls):
        dsn = pg_dsn_or_skip("ResourceTests")
        return start_server(cls, "resources-pg", DATABASE_URL=dsn)


class CorrelateOrStartTests(WorkflowTestCase):
    """SendSignal with start, as a webhook handler with a generated client
    writes it: one call per delivery, no check-then-start race in the
    client."""

    @classmethod
    def start_servers(cls):
        return [start_server(cls, "cos-memory")]

    @classmethod
    def setUpClass(cls):
        cls.servers = cls.start_servers()
        cls.wf = cls.servers[0].workflow()

    def setUp(self):
        self.run = uuid.uuid4().hex[:8]
        self.key = "py-cos-" + self.run
        # s -> paid (MSG "paid", AGGREGATE) -> p; p -> more (MSG "paid") -> p;
        # p -> done (MSG "close") -> e: it consumes every "paid" of its order.
        msg = lambda tid, name: wf_pb2.Transition(  # noqa: E731
            id=tid, trigger=wf_pb2.TRIGGER_MSG, signal_name=name,
            correlation=wf_pb2.CORRELATION_AGGREGATE)
        d = wf_pb2.Definition(
            key=self.key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="p", kind=wf_pb2.PLACE_KIND_NORMAL),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[msg("paid", "paid"), msg("more", "paid"), msg("done", "close")],
            arcs=[wf_pb2.Arc(source="s", target="paid"), wf_pb2.Arc(source="paid", target="p"),
                  wf_pb2.Arc(source="p", target="more"), wf_pb2.Arc(source="more", target="p"),
                  wf_pb2.Arc(source="p", target="done"), wf_pb2.Arc(source="done", target="e")])
        out = invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="dev"))
        self.assertEqual(out.code, SC.OK, "deploy: %r" % out)

    def send(self, order, signal_id=None, payload="", ttl_s=0, start=True, wf=None,
             request_id="", name="paid"):
        req = wf_pb2.SendSignalRequest(
            name=name, aggregate=wf_pb2.Aggregate(type="order", id=order),
            payload_json=payload, signal_id=signal_id or uuid.uuid4().hex, request_id=request_id)
        if ttl_s:
            req.buffer_ttl.seconds = ttl_s
        if start:
            req.start.definition_key = self.key
            req.start.variables_json = '{"source": "webhook"}'
        return invoke((wf or self.wf).SendSignal, req, md(actor="webhook"))

    def instances(self, order):
        out = invoke(self.wf.ListInstances, wf_pb2.ListInstancesRequest(
            started_by="webhook", aggregate=wf_pb2.Aggregate(type="order", id=order)),
            md(actor="webhook"))
        self.assertEqual(out.code, SC.OK, "list: %r" % out)
        return list(out.response.instances)

    def get(self, instance_id):
        out = invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=instance_id),
                     md())
        self.assertEqual(out.code, SC.OK, "get: %r" % out)
        return out.response

    def test_start_then_correlate_then_buffer(self):
        order = "O-" + self.run
        first = self.send(order, payload='{"amount": 42}')
        self.assertEqual(first.code, SC.OK, "send: %r" % first)
        self.assertEqual(first.response.outcome, wf_pb2.SIGNAL_OUTCOME_STARTED)
        self.assertEqual(len(first.response.instance_ids), 1)
        started = first.response.instance_ids[0]
        g = self.get(started)
        self.assertEqual(g.instance.status, wf_pb2.INSTANCE_STATUS_RUNNING)
        self.assertEqual(g.instance.aggregate.id, order)
        self.assertEqual(json.loads(g.instance.variables_json),
                         {"source": "webhook", "amount": 42})
        self.assertEqual(dict(g.marking), {"p": 1})
        # It now waits: the next delivery correlates with it, nothing starts.
        again = self.send(order)
        self.assertEqual(again.response.outcome, wf_pb2.SIGNAL_OUTCOME_CORRELATED)
        self.assertEqual(list(again.response.instance_ids), [started])
        # A name it does not wait for, while it runs: buffered, no start.
        other = self.send(order, name="refund", ttl_s=60)
        self.assertEqual(other.response.outcome, wf_pb2.SIGNAL_OUTCOME_BUFFERED)
        self.assertEqual([i.id for i in self.instances(order)], [started])
        # A transport retry with the same request_id answers the first
        # response; a repeated signal_id is DUPLICATE; neither starts.
        fresh = "O2-" + self.run
        rid = "py-" + uuid.uuid4().hex
        sid = uuid.uuid4().hex
        a = self.send(fresh, signal_id=sid, request_id=rid)
        b = self.send(fresh, signal_id=sid, request_id=rid)
        self.assertEqual(a.response, b.response)
        self.assertEqual(a.response.outcome, wf_pb2.SIGNAL_OUTCOME_STARTED)
        c = self.send(fresh, signal_id=sid)
        self.assertEqual(c.response.outcome, wf_pb2.SIGNAL_OUTCOME_DUPLICATE)
        self.assertEqual(len(self.instances(fresh)), 1)
        # Addressed by instance id, start is refused.
        bad = invoke(self.wf.SendSignal, wf_pb2.SendSignalRequest(
            name="paid", instance_id=started, start=wf_pb2.SignalStart(definition_key=self.key)),
            md(actor="webhook"))
        self.assert_error(bad, SC.INVALID_ARGUMENT, "INVALID_ARGUMENT")

    def test_concurrent_senders_start_one_instance(self):
        order = "OC-" + self.run
        senders = 8
        channels = [grpc.insecure_channel(self.servers[i % len(self.servers)].target)
                    for i in range(senders)]
        barrier = threading.Barrier(senders)
        results = [None] * senders

        def deliver(i):
            wf = wf_grpc.WorkflowServiceStub(channels[i])
            barrier.wait()
            results[i] = self.send(order, ttl_s=60, wf=wf)

        threads = [threading.Thread(target=deliver, args=(i,)) for i in range(senders)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for ch in channels:
            ch.close()
        for r in results:
            self.assertEqual(r.code, SC.OK, "send: %r" % r)
        outcomes = [r.response.outcome for r in results]
        self.assertEqual(outcomes.count(wf_pb2.SIGNAL_OUTCOME_STARTED), 1, outcomes)
        self.assertTrue(all(o in (wf_pb2.SIGNAL_OUTCOME_STARTED, wf_pb2.SIGNAL_OUTCOME_CORRELATED,
                                  wf_pb2.SIGNAL_OUTCOME_BUFFERED) for o in outcomes), outcomes)
        live = self.instances(order)
        self.assertEqual(len(live), 1)
        # Every delivery reached that one instance, buffered ones included.
        out = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(
            aggregate=wf_pb2.Aggregate(type="order", id=order)), md())
        self.assertEqual(out.code, SC.OK)
        self.assertEqual([s.consumed_by_instance for s in out.response.signals],
                         [live[0].id] * senders)


class CorrelateOrStartPgTests(CorrelateOrStartTests):
    """CorrelateOrStartTests on Postgres, the concurrent senders spread over
    two server processes (two replicas); skipped without WF_TEST_PG_DSN."""

    @classmethod
    def start_servers(cls):
        dsn = pg_dsn_or_skip("CorrelateOrStartTests")
        return [start_server(cls, "cos-pg-%d" % i, DATABASE_URL=dsn) for i in range(2)]


class FanOutLogTests(WorkflowTestCase):
    """ListSignals by instance as a generated client reads it after a signal
    fanned out to an aggregate: each instance lists the signal once, with
    its own delivery (Signal.delivery), which a scheduler pass runs."""

    CROWD = 10  # more than the 8 a sender delivers itself

    @classmethod
    def start_servers(cls):
        return [start_server(cls, "fanlog-memory")]

    @classmethod
    def setUpClass(cls):
        cls.servers = cls.start_servers()
        cls.wf = cls.servers[0].workflow()

    def setUp(self):
        self.run = uuid.uuid4().hex[:8]
        self.key = "py-fanlog-" + self.run
        d = wf_pb2.Definition(
            key=self.key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(id="go", trigger=wf_pb2.TRIGGER_MSG, signal_name="go",
                                           correlation=wf_pb2.CORRELATION_AGGREGATE)],
            arcs=[wf_pb2.Arc(source="s", target="go"), wf_pb2.Arc(source="go", target="e")])
        out = invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="dev"))
        self.assertEqual(out.code, SC.OK, "deploy: %r" % out)

    def wait_delivered(self, order):
        """Passes until no delivery of the order's signal is pending (the
        server's own scheduler may hold a claim on some: they are its)."""
        until = time.monotonic() + 60 * TIME_SCALE
        while time.monotonic() < until:
            tick = invoke(self.wf.RunSchedulerPass, wf_pb2.RunSchedulerPassRequest(), md())
            self.assertEqual(tick.code, SC.OK, "pass: %r" % tick)
            out = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(
                aggregate=wf_pb2.Aggregate(type="order", id=order)), md())
            self.assertEqual(out.code, SC.OK)
            if out.response.signals[0].deliveries_pending == 0:
                return
            time.sleep(0.1)
        self.fail("the deliveries to %s did not end" % order)

    def test_each_instance_lists_its_delivery(self):
        order = "F-" + self.run
        ids = []
        for _ in range(self.CROWD):
            out = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(
                definition_key=self.key, aggregate=wf_pb2.Aggregate(type="order", id=order)),
                md(actor="shop"))
            self.assertEqual(out.code, SC.OK, "start: %r" % out)
            ids.append(out.response.instance.id)
        sent = invoke(self.wf.SendSignal, wf_pb2.SendSignalRequest(
            name="go", aggregate=wf_pb2.Aggregate(type="order", id=order)), md(actor="hook"))
        self.assertEqual(sent.code, SC.OK, "send: %r" % sent)
        self.assertEqual(sent.response.instance_count, self.CROWD)
        self.assertTrue(sent.response.deliveries_pending)
        by_agg = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(
            aggregate=wf_pb2.Aggregate(type="order", id=order)), md())
        self.assertEqual(by_agg.code, SC.OK)
        log_id = by_agg.response.signals[0].id
        self.wait_delivered(order)
        for iid in (ids[0], ids[4], ids[-1]):
            out = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(instance_id=iid), md())
            self.assertEqual(out.code, SC.OK)
            self.assertEqual([s.id for s in out.response.signals], [log_id])
            s = out.response.signals[0]
            self.assertTrue(s.HasField("delivery"))
            self.assertEqual(s.delivery.state, wf_pb2.SIGNAL_DELIVERY_STATE_DELIVERED)
            self.assertEqual(s.delivery.outcome, wf_pb2.SIGNAL_OUTCOME_CORRELATED)
            self.assertEqual(s.delivery.signal_log_id, log_id)
            self.assertTrue(s.delivery.HasField("delivered_at"))
            self.assertEqual(s.deliveries_delivered, self.CROWD)
        # Another tenant's caller lists nothing for these instances.
        other = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(instance_id=ids[4]),
                       md(tenant="other-" + self.run))
        self.assertEqual(other.code, SC.OK)
        self.assertEqual(len(other.response.signals), 0)


class FanOutLogPgTests(FanOutLogTests):
    """FanOutLogTests on Postgres; skipped without WF_TEST_PG_DSN."""

    @classmethod
    def start_servers(cls):
        dsn = pg_dsn_or_skip("FanOutLogTests")
        return [start_server(cls, "fanlog-pg", DATABASE_URL=dsn)]


class SuspendResumeTests(WorkflowTestCase):
    """SuspendInstance and ResumeInstance as an operator's tool calls them:
    a signal sent while suspended is buffered, not correlated, its TTL
    counting from its receipt; the resume consumes it."""

    @classmethod
    def start_servers(cls):
        return [start_server(cls, "suspend-memory")]

    @classmethod
    def setUpClass(cls):
        cls.servers = cls.start_servers()
        cls.wf = cls.servers[0].workflow()

    def setUp(self):
        self.run = uuid.uuid4().hex[:8]
        self.key = "py-suspend-" + self.run
        d = wf_pb2.Definition(
            key=self.key, kind=wf_pb2.DEFINITION_KIND_NET,
            places=[wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                    wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END)],
            transitions=[wf_pb2.Transition(id="recv", trigger=wf_pb2.TRIGGER_MSG,
                                           signal_name="paid")],
            arcs=[wf_pb2.Arc(source="s", target="recv"), wf_pb2.Arc(source="recv", target="e")])
        out = invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="dev"))
        self.assertEqual(out.code, SC.OK, "deploy: %r" % out)

    def get(self, instance_id):
        out = invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=instance_id),
                     md())
        self.assertEqual(out.code, SC.OK, "get: %r" % out)
        return out.response

    def test_signal_buffered_while_suspended_then_consumed_at_resume(self):
        out = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(definition_key=self.key),
                     md(actor="shop"))
        self.assertEqual(out.code, SC.OK, "start: %r" % out)
        iid = out.response.instance.id
        rid = "suspend-" + self.run
        sus = invoke(self.wf.SuspendInstance, wf_pb2.SuspendInstanceRequest(
            instance_id=iid, reason="fraud check", request_id=rid), md(actor="ops"))
        self.assertEqual(sus.code, SC.OK, "suspend: %r" % sus)
        self.assertEqual(sus.response.instance.status, wf_pb2.INSTANCE_STATUS_SUSPENDED)
        # The same request id answers the first response.
        again = invoke(self.wf.SuspendInstance, wf_pb2.SuspendInstanceRequest(
            instance_id=iid, reason="fraud check", request_id=rid), md(actor="ops"))
        self.assertEqual(again.code, SC.OK)
        self.assertEqual(again.response, sus.response)

        sig = wf_pb2.SendSignalRequest(name="paid", instance_id=iid, payload_json='{"paid": 1}')
        sig.buffer_ttl.seconds = 60
        sent = invoke(self.wf.SendSignal, sig, md(actor="psp"))
        self.assertEqual(sent.code, SC.OK, "signal: %r" % sent)
        self.assertEqual(sent.response.outcome, wf_pb2.SIGNAL_OUTCOME_BUFFERED)
        g = self.get(iid)
        self.assertEqual(g.instance.status, wf_pb2.INSTANCE_STATUS_SUSPENDED)
        self.assertEqual(len(g.buffered_signals), 1)
        # The TTL counts from the receipt: the suspension does not move it.
        self.assertEqual(g.buffered_signals[0].expires_at, sent.response.expires_at)
        listed = invoke(self.wf.ListInstances, wf_pb2.ListInstancesRequest(
            started_by="shop", status=wf_pb2.INSTANCE_STATUS_SUSPENDED), md(actor="shop"))
        self.assertEqual([i.id for i in listed.response.instances], [iid])

        res = invoke(self.wf.ResumeInstance, wf_pb2.ResumeInstanceRequest(instance_id=iid),
                     md(actor="ops"))
        self.assertEqual(res.code, SC.OK, "resume: %r" % res)
        self.assertEqual(res.response.instance.status, wf_pb2.INSTANCE_STATUS_COMPLETED)
        self.assertEqual(json.loads(res.response.instance.variables_json), {"paid": 1})
        sigs = invoke(self.wf.ListSignals, wf_pb2.ListSignalsRequest(instance_id=iid), md())
        self.assertEqual([s.consumed_by_instance for s in sigs.response.signals], [iid])

        # Ended now: both calls refuse it, naming the instance.
        for method, req in ((self.wf.SuspendInstance, wf_pb2.SuspendInstanceRequest),
                            (self.wf.ResumeInstance, wf_pb2.ResumeInstanceRequest)):
            late = invoke(method, req(instance_id=iid), md(actor="ops"))
            self.assertEqual(late.code, SC.FAILED_PRECONDITION, "%r" % late)
            self.assertEqual(late.reason, "INSTANCE_NOT_RUNNING")
            self.assertEqual(late.info.domain, "workflow.v1")
            self.assertEqual(late.info.metadata["instanceId"], iid)


class SuspendResumePgTests(SuspendResumeTests):
    """SuspendResumeTests on Postgres; skipped without WF_TEST_PG_DSN."""

    @classmethod
    def start_servers(cls):
        dsn = pg_dsn_or_skip("SuspendResumeTests")
        return [start_server(cls, "suspend-pg", DATABASE_URL=dsn)]


class SchemaMigrationPgTests(WorkflowTestCase):
    """`workflowd migrate` on a database of its own: applies every
    migration and exits, is a no-op the second time, and both it and the
    server refuse a schema newer than the binary knows."""

    def setUp(self):
        self.dsn = pg_dsn_or_skip("SchemaMigrationTests")
        self.psql = wf_testkit.psql_path()
        if not os.access(self.psql, os.X_OK):
            self.skipTest("psql is not installed")
        self.db = "wf_migrate_" + uuid.uuid4().hex[:10]
        self.sql(self.dsn, "CREATE DATABASE %s" % self.db)
        self.addCleanup(self.sql, self.dsn, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db)
        self.db_dsn = wf_testkit.dsn_with_db(self.dsn, self.db)

    def sql(self, dsn, command):
        p = subprocess.run([self.psql, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", dsn, "-c",
                            command], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    def migrate(self):
        return subprocess.run([OPTS.server, "migrate"], capture_output=True, text=True,
                              timeout=60, env=server_env(DATABASE_URL=self.db_dsn))

    def test_migrate_applies_every_migration_once_and_exits(self):
        migrations = sorted(os.listdir(os.path.join(OPTS.proto, "..", "server", "store",
                                                     "migrations")))
        newest = int(migrations[-1].split("_")[0])
        p = self.migrate()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("the schema is at migration %d" % newest, p.stderr + p.stdout)
        applied = self.sql(self.db_dsn, "SELECT string_agg(version::text, ',' ORDER BY version) "
                                        "FROM schema_migrations")
        self.assertEqual(applied, ",".join(str(int(m.split("_")[0])) for m in migrations))
        self.assertEqual(self.sql(self.db_dsn, "SELECT to_regclass('instances') IS NOT NULL"),
                         "t")
        again = self.migrate()
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertNotIn("db_migrated", again.stderr + again.stdout)
        # A server on the migrated schema starts and serves.
        srv = start_server(type(self), "migrated", DATABASE_URL=self.db_dsn)
        self.assertEqual(invoke(srv.workflow().ListDefinitions, wf_pb2.ListDefinitionsRequest(),
                                md()).code, SC.OK)
        srv.kill()

    def test_a_newer_schema_is_refused_by_migrate_and_by_the_server(self):
        self.assertEqual(self.migrate().returncode, 0)
        self.sql(self.db_dsn, "INSERT INTO schema_migrations (version) VALUES (9999)")
        for argv in ([OPTS.server, "migrate"], [OPTS.server]):
            env = server_env(DATABASE_URL=self.db_dsn, WF_ADDR="127.0.0.1:%d" % free_port())
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(p.returncode, 1, "%s: %s" % (argv, p.stderr))
            self.assertIn("the database schema is at migration 9999, newer than", p.stderr)
        self.assertEqual(self.sql(self.db_dsn, "SELECT count(*) FROM schema_migrations "
                                               "WHERE version = 9999"), "1")

    def test_migrate_without_a_database_is_a_configuration_error(self):
        p = subprocess.run([OPTS.server, "migrate"], capture_output=True, text=True, timeout=30,
                           env=server_env())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("DATABASE_URL is not set", p.stderr)


class MigrateInstanceTests(WorkflowTestCase):
    """MigrateInstance as an operator's tool calls it: version 1 of a net
    has an instance waiting at a claimed task; version 2 renames its place
    and adds a step. The migration with a place mapping keeps the task
    (id, claim, assignee) and the instance goes on in version 2."""

    @classmethod
    def start_servers(cls):
        return [start_server(cls, "migrate-memory")]

    @classmethod
    def setUpClass(cls):
        cls.servers = cls.start_servers()
        cls.wfs = [srv.workflow() for srv in cls.servers]
        cls.wf = cls.wfs[0]

    def net(self, middle, jobs):
        """s -review-> MIDDLE -approve-> b, then one AUTO job per type in
        jobs, the last into e."""
        places = [wf_pb2.Place(id="s", kind=wf_pb2.PLACE_KIND_START),
                  wf_pb2.Place(id=middle, kind=wf_pb2.PLACE_KIND_NORMAL),
                  wf_pb2.Place(id="b", kind=wf_pb2.PLACE_KIND_NORMAL)]
        alice = wf_pb2.Assignee(kind=wf_pb2.ASSIGNEE_KIND_USER, ids=["alice"])
        transitions = [wf_pb2.Transition(id="review", trigger=wf_pb2.TRIGGER_USER, assignee=alice),
                       wf_pb2.Transition(id="approve", trigger=wf_pb2.TRIGGER_USER, assignee=alice)]
        arcs = [wf_pb2.Arc(source="s", target="review"), wf_pb2.Arc(source="review", target=middle),
                wf_pb2.Arc(source=middle, target="approve"), wf_pb2.Arc(source="approve", target="b")]
        at = "b"
        for i, job in enumerate(jobs):
            nxt = "e" if i == len(jobs) - 1 else "after-" + job
            if nxt != "e":
                places.append(wf_pb2.Place(id=nxt, kind=wf_pb2.PLACE_KIND_NORMAL))
            transitions.append(wf_pb2.Transition(id=job, trigger=wf_pb2.TRIGGER_AUTO,
                                                 job_type=job + "-" + self.run))
            arcs += [wf_pb2.Arc(source=at, target=job), wf_pb2.Arc(source=job, target=nxt)]
            at = nxt
        places.append(wf_pb2.Place(id="e", kind=wf_pb2.PLACE_KIND_END))
        d = wf_pb2.Definition(key=self.key, kind=wf_pb2.DEFINITION_KIND_NET, places=places,
                              transitions=transitions, arcs=arcs)
        out = invoke(self.wf.DeployDefinition, wf_pb2.DeployDefinitionRequest(definition=d),
                     md(actor="dev"))
        self.assertEqual(out.code, SC.OK, "deploy: %r" % out)
        return out.response.definition.version

    def setUp(self):
        self.run = uuid.uuid4().hex[:8]
        self.key = "py-migrate-" + self.run
        self.assertEqual(self.net("a", ["ship"]), 1)
        out = invoke(self.wf.StartInstance, wf_pb2.StartInstanceRequest(definition_key=self.key),
                     md(actor="shop"))
        self.assertEqual(out.code, SC.OK, "start: %r" % out)
        self.iid = out.response.instance.id
        review = self.task("review")
        done = invoke(self.wf.CompleteTask, wf_pb2.CompleteTaskRequest(task_id=review.id),
                      md(actor="alice"))
        self.assertEqual(done.code, SC.OK, "complete: %r" % done)
        self.approve = self.task("approve")
        claim = invoke(self.wf.ClaimTask, wf_pb2.ClaimTaskRequest(task_id=self.approve.id),
                       md(actor="alice"))
        self.assertEqual(claim.code, SC.OK, "claim: %r" % claim)
        self.assertEqual(self.net("checked", ["pack", "ship"]), 2)

    def get(self):
        out = invoke(self.wf.GetInstance, wf_pb2.GetInstanceRequest(instance_id=self.iid), md())
        self.assertEqual(out.code, SC.OK, "get: %r" % out)
        return out.response

    def task(self, transition_id):
        return next(t for t in self.get().tasks if t.transition_id == transition_id
                    and t.status in (wf_pb2.TASK_STATUS_OPEN, wf_pb2.TASK_STATUS_CLAIMED))

    def migrate(self, wf=None, mapping=(), dry_run=False, request_id=""):
        req = wf_pb2.MigrateInstanceRequest(
            instance_id=self.iid, target_version=2, dry_run=dry_run, request_id=request_id,
            place_mapping=[wf_pb2.PlaceMapping(from_place=f, to_place=t) for f, t in mapping])
        return invoke((wf or self.wf).MigrateInstance, req, md(actor="ops"))

    def migrated_events(self):
        stream = self.wf.WatchEvents(wf_pb2.WatchEventsRequest(
            instance_id=self.iid, types=[wf_pb2.EVENT_TYPE_INSTANCE_MIGRATED]),
            metadata=md(), timeout=rpc_timeout())
        return [json.loads(r.event.data_json) for r in stream]

    def test_problems_first_then_the_mapped_migration(self):
        # Without a mapping the token in "a" has nowhere to go.
        dry = self.migrate(dry_run=True)
        self.assertEqual(dry.code, SC.OK, "dry run: %r" % dry)
        self.assertFalse(dry.response.applied)
        self.assertEqual([(p.code, p.path) for p in dry.response.problems],
                         [("UNMAPPED_PLACE", "place_mapping")])
        refused = self.migrate()
        self.assert_error(refused, SC.FAILED_PRECONDITION, "MIGRATION_INVALID")
        self.assertEqual([(v.field, v.reason) for v in bad_request(refused.status).field_violations],
                         [("place_mapping", "UNMAPPED_PLACE")])
        self.assertEqual(self.get().instance.definition_version, 1)

        # Mapped: the plan keeps the claimed task, and the run does it.
        mapping = [("a", "checked")]
        plan = self.migrate(mapping=mapping, dry_run=True)
        self.assertEqual(plan.code, SC.OK, "dry run: %r" % plan)
        self.assertEqual(list(plan.response.problems), [])
        self.assertEqual([w.transition_id for w in plan.response.plan.kept], ["approve"])
        self.assertEqual(self.migrated_events(), [])
        rid = "migrate-" + self.run
        out = self.migrate(mapping=mapping, request_id=rid)
        self.assertEqual(out.code, SC.OK, "migrate: %r" % out)
        self.assertTrue(out.response.applied)
        self.assertEqual(out.response.instance.definition_version, 2)
        self.assertEqual([(t.from_place, t.to_place) for t in out.response.plan.tokens],
                         [("a", "checked")])
        again = self.migrate(mapping=mapping, request_id=rid)
        self.assertEqual(again.code, SC.OK)
        self.assertEqual(again.response, out.response)
        events = self.migrated_events()
        self.assertEqual(len(events), 1)
        self.assertEqual((events[0]["sourceVersion"], events[0]["targetVersion"]), (1, 2))
        self.assertEqual(events[0]["placeMapping"], [{"fromPlace": "a", "toPlace": "checked"}])

        # The task kept its id, claim and assignee; the next step is version 2's.
        g = self.get()
        self.assertEqual(dict(g.marking), {"checked": 1})
        kept = self.task("approve")
        self.assertEqual((kept.id, kept.status, kept.claimed_by, kept.assignee_id),
                         (self.approve.id, wf_pb2.TASK_STATUS_CLAIMED, "alice", "alice"))
        done = invoke(self.wf.CompleteTask, wf_pb2.CompleteTaskRequest(task_id=kept.id),
                      md(actor="alice"))
        self.assertEqual(done.code, SC.OK, "complete: %r" % done)
        jobs = invoke(self.wf.ActivateJobs, wf_pb2.ActivateJobsRequest(
            job_type="pack-" + self.run, worker="py", max_jobs=5), md())
        self.assertEqual(jobs.code, SC.OK, "activate: %r" % jobs)
        self.assertEqual([j.instance_id for j in jobs.response.jobs], [self.iid])

    def test_replicas_migrating_at_once_apply_it_once(self):
        mapping = [("a", "checked")]
        results = [None] * 4
        gate = threading.Barrier(len(results))

        def run(i):
            gate.wait()
            results[i] = self.migrate(wf=self.wfs[i % len(self.wfs)], mapping=mapping)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for out in results:
            self.assertEqual(out.code, SC.OK, "migrate: %r" % out)
        # One applied it; the others found the instance on version 2 already.
        self.assertEqual(sum(out.response.applied for out in results), 1)
        self.assertEqual(len(self.migrated_events()), 1)
        self.assertEqual(self.get().instance.definition_version, 2)
        self.assertEqual(self.task("approve").id, self.approve.id)


class MigrateInstancePgTests(MigrateInstanceTests):
    """MigrateInstanceTests on Postgres through two server processes (two
    replicas); skipped without WF_TEST_PG_DSN."""

    @classmethod
    def start_servers(cls):
        dsn = pg_dsn_or_skip("MigrateInstanceTests")
        return [start_server(cls, "migrate-pg-%d" % i, DATABASE_URL=dsn) for i in range(2)]


# ---------------------------------------------------------------------------


def store_classes(store):
    """Names of the test classes a --store run takes (None = every one):
    the *PgTests classes run on Postgres, the others on the memory store."""
    if store == "all":
        return None
    loader = unittest.TestLoader()
    return sorted(name for name, cls in globals().items()
                  if isinstance(cls, type) and issubclass(cls, unittest.TestCase)
                  and cls.__module__ == __name__ and loader.getTestCaseNames(cls)
                  and name.endswith("PgTests") == (store == "pg"))


def main():
    global OPTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="path of the workflowd binary")
    parser.add_argument("--wfctl", help="path of the wfctl binary (default: client/wfctl "
                        "of the build that holds --server)")
    parser.add_argument("--proto", required=True, help="the project's proto/ directory")
    parser.add_argument("--work", required=True, help="work directory (stubs, server logs)")
    parser.add_argument("--store", choices=("all", "memory", "pg"), default="all",
                        help="memory: the classes on the memory store; pg: the *PgTests "
                             "classes only (exit 77, skipped, without WF_TEST_PG_DSN)")
    OPTS, rest = parser.parse_known_args()
    if OPTS.store == "pg" and wf_testkit.pg_dsn() is None:
        print("skipped: WF_TEST_PG_DSN is not set (./test.sh sets it)")
        return wf_testkit.SKIP
    OPTS.server = os.path.abspath(OPTS.server)
    global TIME_SCALE
    TIME_SCALE = wf_testkit.time_scale(OPTS.server)
    OPTS.wfctl = os.path.abspath(OPTS.wfctl or os.path.join(
        os.path.dirname(OPTS.server), "..", "client", "wfctl"))
    OPTS.proto = os.path.abspath(OPTS.proto)
    OPTS.work = os.path.abspath(OPTS.work)
    os.makedirs(OPTS.work, exist_ok=True)
    if not os.access(OPTS.server, os.X_OK):
        raise SystemExit("not an executable: %s" % OPTS.server)
    for old in os.listdir(OPTS.work):
        if old.startswith("server-") and old.endswith(".log"):
            os.remove(os.path.join(OPTS.work, old))

    generate_stubs(OPTS.proto, OPTS.work)

    def watchdog():
        print("\nrun_tests.py: the suite exceeded %d s; killing servers" % SUITE_TIMEOUT,
              file=sys.stderr, flush=True)
        kill_all_servers()
        os._exit(3)

    timer = threading.Timer(SUITE_TIMEOUT, watchdog)
    timer.daemon = True
    timer.start()
    try:
        prog = unittest.main(module=__name__, argv=[sys.argv[0]] + rest, verbosity=2,
                             exit=False, defaultTest=store_classes(OPTS.store))
        ok = prog.result.wasSuccessful()
    finally:
        timer.cancel()
        kill_all_servers()
    print("server logs: %s" % OPTS.work, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
