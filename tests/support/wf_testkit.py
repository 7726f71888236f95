"""wf_testkit: what the Python suites share (tests/python, tests/replicas,
tests/scaling): stubs generated from the contract, workflowd processes on
free 127.0.0.1 ports, their channels and readiness, and the Postgres
fixture (the DSN the run was given, psql, a DSN of another database).

Import it with the folder on sys.path:

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
    import wf_testkit
"""
import importlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import types
import urllib.parse

import grpc

# The exit status of a suite that cannot run here (CTest SKIP_RETURN_CODE).
SKIP = 77


def generate_stubs(proto_dir, work, reflection=False):
    """Compiles the contract (with google.rpc) and health.proto, plus the
    reflection protos when asked, into WORK/gen and imports them. Returns
    a namespace: wf_pb2, wf_grpc, status_pb2, error_details_pb2, health_pb2,
    health_grpc, reflection ([(pb2, pb2_grpc)] for v1 and v1alpha)."""
    gen = os.path.join(work, "gen")
    shutil.rmtree(gen, ignore_errors=True)
    os.makedirs(gen)
    protoc = shutil.which("protoc") or "/usr/bin/protoc"
    plugin = "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin"
    grpc_protos = ["health/v1/health.proto"]
    if reflection:
        grpc_protos += ["reflection/v1/reflection.proto", "reflection/v1alpha/reflection.proto"]
    runs = [
        # The contract, with google.rpc; well-known types from /usr/include.
        ["-I" + proto_dir, "-I/usr/include", "workflow/v1/workflow.proto",
         "google/rpc/status.proto", "google/rpc/error_details.proto"],
        # -I…/grpc (not …/grpc-proto) so that no top-level `grpc` package
        # shadows grpcio: the module is health.v1.health_pb2.
        ["-I/usr/share/grpc-proto/grpc"] + grpc_protos,
    ]
    for extra in runs:
        cmd = [protoc, "--python_out=" + gen, "--grpc_out=" + gen, plugin] + extra
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            raise RuntimeError("protoc failed: %s\n%s" % (" ".join(cmd), res.stderr))
    sys.path.insert(0, gen)
    m = types.SimpleNamespace(
        wf_pb2=importlib.import_module("workflow.v1.workflow_pb2"),
        wf_grpc=importlib.import_module("workflow.v1.workflow_pb2_grpc"),
        status_pb2=importlib.import_module("google.rpc.status_pb2"),
        error_details_pb2=importlib.import_module("google.rpc.error_details_pb2"),
        health_pb2=importlib.import_module("health.v1.health_pb2"),
        health_grpc=importlib.import_module("health.v1.health_pb2_grpc"),
        reflection=[])
    if reflection:
        for version in ("v1", "v1alpha"):
            m.reflection.append(
                (importlib.import_module("reflection.%s.reflection_pb2" % version),
                 importlib.import_module("reflection.%s.reflection_pb2_grpc" % version)))
    return m


# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------


def free_port():
    """A port nobody listens on right now (the kernel's pick), never 50051.
    With WF_TEST_PORT_DIR (test.sh sets it) the port is also claimed there
    (a file named after it, created exclusively) for the rest of the run,
    so that suites running at once never both pick it between the check
    and their server's bind."""
    claims = os.environ.get("WF_TEST_PORT_DIR")
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port == 50051:
            continue
        if claims:
            try:
                os.close(os.open(os.path.join(claims, str(port)),
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                continue
        return port
    raise RuntimeError("no free port found")


def time_scale(binary=None):
    """How many times slower than a quiet machine this run may be, for the
    wall-clock bounds of the suites (as wf_test_time_scale of the C suites):
    5 when binary (the workflowd under test) is built with AddressSanitizer,
    times the load average per CPU when it is above one, times
    WF_TEST_TIME_SCALE when that is a number above one; at most 40."""
    scale = 1.0
    try:
        scale = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        pass
    if binary is not None:
        with open(binary, "rb") as f:
            if b"__asan_init" in f.read():
                scale *= 5
    try:
        user = float(os.environ.get("WF_TEST_TIME_SCALE", "1"))
    except ValueError:
        user = 1.0
    if user > 1:
        scale *= user
    return min(40, int(-(-scale // 1)))


# A channel with its own connection (not shared with other channels) that
# retries a lost connection quickly. Not grpc.min_reconnect_backoff_ms: grpc
# core takes it as the minimum connect timeout (20 s by default), and a
# handshake cut off after 100 ms fails the calls of a loaded machine.
CHANNEL_OPTIONS = [
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
]


def new_channel(target):
    return grpc.insecure_channel(target, options=list(CHANNEL_OPTIONS))


def server_env(**extra):
    """The environment of a workflowd: ours minus any WF_*/DATABASE_URL,
    no drain at stop, plus extra (values made strings)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WF_") and k != "DATABASE_URL"}
    env["WF_DRAIN_SECONDS"] = "0"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_port(proc, port, until):
    """Waits until something accepts connections on 127.0.0.1:port; False
    when proc exits or the monotonic time passes until."""
    while True:
        if proc.poll() is not None or time.monotonic() > until:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)


def wait_serving(stubs, channel, proc, port, timeout):
    """Waits until the workflowd proc on port answers Health.Check("")
    SERVING on channel; False when it exits or timeout seconds pass. The
    port is awaited first: a channel that found nothing there backs off
    before it retries, which would slow every start down."""
    until = time.monotonic() + timeout
    if not wait_port(proc, port, until):
        return False
    health = stubs.health_grpc.HealthStub(channel)
    request = stubs.health_pb2.HealthCheckRequest(service="")
    while time.monotonic() < until and proc.poll() is None:
        try:
            r = health.Check(request, timeout=1.0, wait_for_ready=True)
            if r.status == stubs.health_pb2.HealthCheckResponse.SERVING:
                return True
        except grpc.RpcError:
            pass
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------
# Postgres
# ---------------------------------------------------------------------------


def pg_dsn():
    """The DSN of the test cluster (WF_TEST_PG_DSN), None when not given."""
    return os.environ.get("WF_TEST_PG_DSN") or None


def psql_path():
    return shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"


def dsn_with_db(dsn, db):
    """dsn, pointing at database db (URI or key=value conninfo)."""
    if re.match(r"^postgres(ql)?://", dsn):
        u = urllib.parse.urlsplit(dsn)
        return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))
    return dsn + " dbname=" + db
