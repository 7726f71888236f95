#!/usr/bin/python3
"""workflowd on a Postgres that requires TLS, verified with sslmode=verify-full.

Runs on a cluster of its own (tests/support/own_pg.sh gives WF_TEST_PG_DSN
and WF_TEST_PG_DIR), which it turns into one a managed Postgres resembles:
a CA and a server certificate for 127.0.0.1 and localhost made here with
openssl, ssl = on, and a role with a password that pg_hba.conf admits over
TLS only (scram-sha-256), without TLS never. Then each workflowd runs as
the container image runs it, with HOME=/nonexistent:

  * DATABASE_URL with sslmode=verify-full&sslrootcert=<the CA>: the server
    starts, a StartInstance through gRPC commits (its row is read back),
    and every connection of the role is a TLS one (pg_stat_ssl);
  * the same URL without sslrootcert, and PGSSLROOTCERT naming the CA (what
    the image sets, to the path the Kubernetes manifests mount the CA at):
    the same;
  * without either: the start fails (exit 1) naming libpq's default root
    certificate file, which does not exist in the image;
  * a CA that did not sign the server's certificate, and a host name the
    certificate does not carry: the server, and `workflowd migrate`, exit 1
    with a startup error that names the certificate problem;
  * a URL libpq cannot parse (a "%" in the password not followed by two
    hex digits): exit 2, and libpq's message, which quotes the password,
    is not shown.

No output of any server holds the password.

Skips (exit 77) without WF_TEST_PG_DSN/WF_TEST_PG_DIR or openssl. Exit
status 0 passed, 1 failed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
import traceback
import urllib.parse
import uuid

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import wf_testkit  # noqa: E402  (the Python suites' shared kit)

ROLE = "wf_tls"
PASSWORD = "pw-" + uuid.uuid4().hex
KEY = "tls-suite-" + uuid.uuid4().hex[:12]
START_BOUND = 20.0  # seconds for a server to serve or to exit (times the time scale)

OPTS = None
STUBS = None
SCALE = 1
checks = {"passed": 0, "failed": 0}


def check(cond, what):
    checks["passed" if cond else "failed"] += 1
    print("%s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    return cond


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True, **kw)


def psql(dsn, sql):
    p = subprocess.run([wf_testkit.psql_path(), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                        "-d", dsn, "-c", sql], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("psql failed: %s" % p.stderr.strip())
    return p.stdout.strip()


# ---------------------------------------------------------------------------
# The TLS cluster
# ---------------------------------------------------------------------------


def make_ca(d, name):
    key, crt = os.path.join(d, name + ".key"), os.path.join(d, name + ".crt")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=workflowd test " + name, "-keyout", key,
         "-out", crt])
    return key, crt


def make_server_cert(d, ca_key, ca_crt):
    key, csr, crt = (os.path.join(d, "server." + x) for x in ("key", "csr", "crt"))
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", csr])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
         "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", crt])
    return key, crt


def install(src, data_dir, name):
    """Copies src into the data directory, readable by the server only (as
    root the cluster runs as the postgres OS user, pg.sh)."""
    dst = os.path.join(data_dir, name)
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o600)
    if os.getuid() == 0:
        st = os.stat(data_dir)
        os.chown(dst, st.st_uid, st.st_gid)


def enable_tls(admin, data_dir, ca_key, ca_crt, work):
    """ssl = on with a certificate the CA signed; the role and its database;
    pg_hba.conf: the role over TLS with a password, never without TLS."""
    key, crt = make_server_cert(work, ca_key, ca_crt)
    install(crt, data_dir, "server.crt")
    install(key, data_dir, "server.key")
    hba = os.path.join(data_dir, "pg_hba.conf")
    with open(hba) as f:
        rules = f.read()
    # Rewritten in place: the file keeps its owner.
    with open(hba, "w") as f:
        f.write("hostssl all %s 127.0.0.1/32 scram-sha-256\n"
                "host all %s 127.0.0.1/32 reject\n" % (ROLE, ROLE) + rules)
    psql(admin, "ALTER SYSTEM SET ssl = on")
    psql(admin, "CREATE ROLE %s LOGIN PASSWORD '%s'" % (ROLE, PASSWORD))
    psql(admin, "CREATE DATABASE %s OWNER %s" % (ROLE, ROLE))
    psql(admin, "SELECT pg_reload_conf()")


def role_url(port, query, host="127.0.0.1"):
    """The role's URL; its connect_timeout (which the server's pool honours)
    stretches with the time scale, for a TLS handshake on a busy machine."""
    return "postgresql://%s:%s@%s:%d/%s?%s&connect_timeout=%d" % (
        ROLE, PASSWORD, host, port, ROLE, query, max(2, int(5 * SCALE)))


def wait_tls(port, ca_crt):
    """The reload is asynchronous: waits until the role gets in over TLS."""
    url = role_url(port, "sslmode=verify-full&sslrootcert=" + urllib.parse.quote(ca_crt))
    until = time.monotonic() + 30 * SCALE
    while True:
        try:
            return psql(url, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == "t"
        except RuntimeError:
            if time.monotonic() > until:
                raise
            time.sleep(0.2)


# ---------------------------------------------------------------------------
# workflowd
# ---------------------------------------------------------------------------


def image_env(database_url, **extra):
    """The environment of the container image (production, HOME=/nonexistent),
    without any libpq setting of ours (PG*), plus extra."""
    env = wf_testkit.server_env(WF_ENV="production", WF_API_KEYS=KEY,
                                DATABASE_URL=database_url, HOME="/nonexistent")
    for name in [k for k in env if k.startswith("PG")]:
        del env[name]
    env.update(extra)
    return env


class Workflowd:
    def __init__(self, name, env, args=()):
        self.port = wf_testkit.free_port()
        self.env = dict(env, WF_ADDR="127.0.0.1:%d" % self.port)
        self.log_path = os.path.join(OPTS.work, name + ".log")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([OPTS.server] + list(args), env=self.env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.channel = wf_testkit.new_channel("127.0.0.1:%d" % self.port)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def exit_code(self):
        try:
            return self.proc.wait(timeout=START_BOUND * SCALE)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_instance(w):
    """StartInstance of an ad-hoc definition: the id of the new instance."""
    stub = STUBS.wf_grpc.WorkflowServiceStub(w.channel)
    resp = stub.StartInstance(
        STUBS.wf_pb2.StartInstanceRequest(definition_key="tls-check",
                                          variables_json='{"over": "tls"}'),
        metadata=[("x-api-key", KEY), ("x-actor-id", "ann")], timeout=10 * SCALE)
    return resp.instance.id


def serves_and_writes(name, env, admin_db):
    w = Workflowd(name, env)
    try:
        serving = wf_testkit.wait_serving(STUBS, w.channel, w.proc, w.port, START_BOUND * SCALE)
        if not check(serving, "%s: serving" % name):
            print(w.log()[-3000:])
            return
        iid = start_instance(w)
        rows = psql(admin_db, "SELECT count(*) FROM instances WHERE id = '%s'" % iid)
        check(rows == "1", "%s: StartInstance committed instance %s" % (name, iid))
        plain = psql(admin_db, "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity "
                               "USING (pid) WHERE usename = '%s' AND NOT ssl" % ROLE)
        tls = psql(admin_db, "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity "
                             "USING (pid) WHERE usename = '%s' AND ssl" % ROLE)
        check(plain == "0" and int(tls) >= 1,
              "%s: every connection is TLS (%s TLS, %s plain)" % (name, tls, plain))
    except grpc.RpcError as e:
        check(False, "%s: StartInstance failed: %s %s" % (name, e.code(), e.details()))
    finally:
        w.stop()
        check(w.proc.returncode == 0, "%s: stopped cleanly (exit %s)" % (name, w.proc.returncode))
        check(PASSWORD not in w.log(), "%s: the password is not in the output" % name)


def refuses(name, env, code, needles, args=()):
    """The process exits with code, its startup error naming needles, and
    without the password anywhere in its output."""
    w = Workflowd(name, env, args)
    rc = w.exit_code()
    w.stop()
    log = w.log()
    errors = [line for line in log.splitlines() if '"level":"error"' in line]
    check(rc == code, "%s: exits %d (exit %s)" % (name, code, rc))
    for n in needles:
        if not check(any(n in line for line in errors), "%s: the error names %r" % (name, n)):
            print(log[-3000:])
    check(PASSWORD not in log, "%s: the password is not in the output" % name)


def suite(admin, work):
    data_dir = os.path.join(os.environ["WF_TEST_PG_DIR"], "data")
    port = urllib.parse.urlsplit(admin).port
    ca_key, ca_crt = make_ca(work, "ca")
    _, wrong_crt = make_ca(work, "wrong-ca")
    enable_tls(admin, data_dir, ca_key, ca_crt, work)
    check(wait_tls(port, ca_crt), "the cluster admits the role over TLS with verify-full")
    admin_db = wf_testkit.dsn_with_db(admin, ROLE)
    ca = urllib.parse.quote(ca_crt)

    serves_and_writes("verify-full-sslrootcert",
                      image_env(role_url(port, "sslmode=verify-full&sslrootcert=" + ca)), admin_db)
    serves_and_writes("verify-full-pgsslrootcert",
                      image_env(role_url(port, "sslmode=verify-full"), PGSSLROOTCERT=ca_crt),
                      admin_db)
    refuses("no-root-certificate", image_env(role_url(port, "sslmode=verify-full")), 1,
            ['root certificate file \\"/nonexistent/.postgresql/root.crt\\" does not exist'])
    wrong = image_env(role_url(port, "sslmode=verify-full&sslrootcert=" +
                               urllib.parse.quote(wrong_crt)))
    refuses("wrong-ca", wrong, 1, ["could not open the store", "certificate verify failed"])
    refuses("wrong-ca-migrate", wrong, 1, ["certificate verify failed"], args=["migrate"])
    refuses("wrong-host-name",
            image_env(role_url(port, "sslmode=verify-full&sslrootcert=%s&hostaddr=127.0.0.1" % ca,
                               host="db.wrong.example")),
            1, ['does not match host name \\"db.wrong.example\\"'])
    bad = "postgresql://%s:%s%%zz@127.0.0.1:%d/%s?sslmode=verify-full" % (ROLE, PASSWORD, port,
                                                                          ROLE)
    refuses("unparsable-url", image_env(bad), 2, ["DATABASE_URL is not a connection URI"])


def main():
    global OPTS, STUBS, SCALE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="path of the workflowd binary")
    parser.add_argument("--proto", required=True, help="the project's proto/ directory")
    parser.add_argument("--work", required=True, help="work directory (stubs, certificates, logs)")
    OPTS = parser.parse_args()
    admin = wf_testkit.pg_dsn()
    if admin is None or not os.environ.get("WF_TEST_PG_DIR"):
        print("skipped: WF_TEST_PG_DSN and WF_TEST_PG_DIR are not set (run through "
              "tests/support/own_pg.sh)")
        return wf_testkit.SKIP
    if shutil.which("openssl") is None:
        print("skipped: openssl is not installed")
        return wf_testkit.SKIP
    OPTS.server = os.path.abspath(OPTS.server)
    OPTS.work = os.path.abspath(OPTS.work)
    shutil.rmtree(OPTS.work, ignore_errors=True)
    os.makedirs(OPTS.work)
    SCALE = wf_testkit.time_scale(OPTS.server)
    STUBS = wf_testkit.generate_stubs(os.path.abspath(OPTS.proto), OPTS.work)
    try:
        suite(admin, OPTS.work)
    except Exception:
        traceback.print_exc()
        checks["failed"] += 1
    print("%d passed, %d failed (logs in %s)" % (checks["passed"], checks["failed"], OPTS.work))
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
