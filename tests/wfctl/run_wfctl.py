#!/usr/bin/python3
"""End-to-end tests of wfctl, run as a user runs it, against a workflowd.

* completion: `wfctl completion bash` is sourced in bash and its function
  called with COMP_WORDS set: commands, a command's flags, the values of an
  enum flag (also in a comma list), global flags, every command of
  `wfctl --help`; `wfctl completion zsh` has a #compdef header and a branch
  per command and, when zsh is installed, passes `zsh -n` and completes
  commands, flags and enum values in an interactive zsh on a pty (keys
  are typed once its prompt is shown; the answer is awaited, not slept
  for);
* man: `wfctl man` renders with `groff -man -ww -z` without a warning and
  documents every command, the global flags, the environment and the exit
  status; the build wrote the same man page and scripts beside the binary;
* --json errors: a failed call prints one JSON object on stderr with the
  code, the reason, the message, the violations and the ErrorInfo
  metadata; usage errors print {"error":{"code":"USAGE",...}}; the exit
  statuses stay 1 and 2;
* jobs: --concurrency N runs N commands at once (they record their start
  and end: every one starts before any ends); a command running longer
  than --lease completes its job and no JOB_LEASE_EXPIRED is written; a
  renewal refused (the instance was cancelled) kills the command, whose job
  is not reported; exit
  status 100 fails the job for good (one attempt, the instance FAILED with
  an incident);
* referral-status is GetCompletion; definitions --key lists newest first;
* batch start needs --key or --all, and --dry-run counts without starting;
* watch --follow prints only new events (like tail -f), --from-start and
  --after 0 the history first.

--store memory runs on the memory store, --store pg on Postgres
(WF_TEST_PG_DSN; exit 77, skipped, without it). Every server is a workflowd
on 127.0.0.1 and a free port, killed at the end.

    /usr/bin/python3 tests/wfctl/run_wfctl.py --server BUILD/server/workflowd \\
        --wfctl BUILD/client/wfctl --work BUILD/tests/wfctl [--store memory|pg]
"""

import argparse
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import wf_testkit  # noqa: E402

OPTS = None
SUITE_TIMEOUT = 150.0


class Server:
    """One workflowd on 127.0.0.1:<free port>, ready when `wfctl health` says SERVING."""

    def __init__(self, name, env):
        self.name = name
        self.env = env
        self.log_path = os.path.join(OPTS.work, "server-%s.log" % name)
        self.proc = None

    def start(self):
        for _ in range(3):
            self.port = wf_testkit.free_port()
            self.env["WF_ADDR"] = "127.0.0.1:%d" % self.port
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen([OPTS.server], env=self.env,
                                             stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            deadline = time.time() + 10 * wf_testkit.time_scale(OPTS.server)
            while time.time() < deadline and self.proc.poll() is None:
                if wfctl(self, "health").returncode == 0:
                    return self
                time.sleep(0.1)
            self.kill()
        raise RuntimeError("server %s did not start; see %s" % (self.name, self.log_path))

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wfctl(srv, *args, actor=None, timeout=30, input=None, env=None):
    cmd = [OPTS.wfctl]
    if srv is not None:
        cmd += ["--addr", "127.0.0.1:%d" % srv.port]
    if actor is not None:
        cmd += ["--actor", actor]
    e = {k: v for k, v in os.environ.items() if not k.startswith("WFCTL_")}
    e.update(env or {})
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout,
                          input=input, env=e)


def commands_of_help():
    out = wfctl(None, "--help").stdout
    lines = out.split("commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    # "  NAME  summary": a name may be of two words ("batch start").
    return [re.split(r"\s{2,}", line.strip())[0] for line in lines if line.strip()]


class CompletionTests(unittest.TestCase):
    """Shell completion generated from the command table."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=OPTS.work)
        cls.bash = os.path.join(cls.dir, "wfctl.bash")
        r = wfctl(None, "completion", "bash")
        assert r.returncode == 0, r.stderr
        with open(cls.bash, "w") as f:
            f.write(r.stdout)

    def complete(self, *words):
        """COMPREPLY of _wfctl for the command line `words` (the last one is
        the word being completed)."""
        script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); '
                  '_wfctl; printf "%s\\n" "${COMPREPLY[@]}"')
        r = subprocess.run(["bash", "--norc", "-c", script, "bash", self.bash, "wfctl"]
                           + list(words), capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return sorted(w for w in r.stdout.split("\n") if w)

    def test_bash_script_parses(self):
        r = subprocess.run(["bash", "-n", self.bash], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_commands_and_global_flags(self):
        cmds = commands_of_help()
        self.assertIn("referral-status", cmds)
        self.assertIn("completion", cmds)
        self.assertNotIn("--completion", cmds)
        got = self.complete("")
        for c in cmds:
            self.assertIn(c.split()[0], got)
        for g in ("--addr", "--key", "--tenant", "--actor", "--json", "--tls", "--timeout"):
            self.assertIn(g, got)
        self.assertEqual(self.complete("pro"), ["processes"])
        self.assertEqual(self.complete("--a"), ["--actor", "--addr"])
        # The value of a global flag is not a command; the command after it is.
        self.assertEqual(self.complete("--addr", ""), [])
        self.assertEqual(self.complete("--addr", "h:1", "--json", "tas"), ["task", "task-update", "tasks"])

    def test_flags_of_a_command(self):
        self.assertEqual(self.complete("processes", "--st"),
                         ["--started-by", "--state", "--status"])
        self.assertIn("--concurrency", self.complete("jobs", "t", "--"))
        self.assertEqual(self.complete("show", "x", "--h"), ["--help", "--history"])

    def test_enum_values(self):
        self.assertEqual(self.complete("processes", "--state", ""),
                         ["closed", "not-started", "open"])
        self.assertIn("suspended", self.complete("processes", "--status", ""))
        self.assertEqual(self.complete("tasks", "--state", "open,c"),
                         ["open,cancelled", "open,claimed"])
        self.assertIn("job-lease-expired", self.complete("watch", "--type", "job-l"))
        self.assertEqual(self.complete("completion", ""), ["bash", "zsh"])
        # A flag whose value is free text offers nothing.
        self.assertEqual(self.complete("start", "k", "--version", ""), [])

    def test_commands_of_two_words(self):
        # "batch start": the group word once, then its subcommands, then the
        # flags of the command they make.
        self.assertEqual(self.complete("bat"), ["batch"])
        self.assertEqual(self.complete("batch", ""), ["cancel", "get", "list", "start"])
        self.assertIn("--follow", self.complete("batch", "start", "cancel", "--f"))
        self.assertEqual(self.complete("batch", "start", "--state", ""),
                         ["closed", "not-started", "open"])
        r = wfctl(None, "batch")
        self.assertEqual(r.returncode, 2)
        self.assertIn("'batch' needs a subcommand", r.stderr)

    def test_jobs_command_after_double_dash(self):
        self.assertIn("sh", self.complete("jobs", "t", "--", "sh"))

    def test_zsh_script(self):
        r = wfctl(None, "completion", "zsh")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("#compdef wfctl\n"))
        for c in commands_of_help():
            self.assertIn("\n        %s)\n" % c.split()[0], r.stdout)
            self.assertIn("\n        '%s:" % c.split()[0], r.stdout)
            if " " in c:  # the subcommand of a group
                self.assertIn("\n            %s)\n" % c.split()[1], r.stdout)
        self.assertIn("--state[not-started, open or closed]:STATE:(not-started open closed)",
                      r.stdout)
        if shutil.which("zsh"):
            path = os.path.join(self.dir, "_wfctl")
            with open(path, "w") as f:
                f.write(r.stdout)
            z = subprocess.run(["zsh", "-n", path], capture_output=True, text=True)
            self.assertEqual(z.returncode, 0, z.stderr)

    # A prompt no completion listing contains: keys are typed only once zsh
    # shows it, i.e. once compinit has run and the line editor reads.
    ZSH_PROMPT = "wfctl-test-prompt%% "
    ZSH_PROMPT_SHOWN = "wfctl-test-prompt% "

    def zsh_complete(self, fdir, line, want):
        """What an interactive zsh (on a pty, compinit over fdir) shows for
        `line` followed by two TABs, escape sequences removed: read until
        every string of want is shown, or 30 s pass."""
        master, slave = pty.openpty()
        env = dict(os.environ, TERM="dumb", HOME=fdir)
        env.pop("PS1", None)
        proc = subprocess.Popen(["zsh", "-f", "-i"], stdin=slave, stdout=slave, stderr=slave,
                                env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        seen = b""

        def shown():
            return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]|[\x07\r]", "",
                          seen.decode("utf-8", "replace"))

        def read_until(done, timeout):
            nonlocal seen
            deadline = time.monotonic() + timeout
            while not done(shown()) and time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    try:
                        chunk = os.read(master, 4096)
                    except OSError:  # the shell is gone
                        break
                    if not chunk:
                        break
                    seen += chunk
            return shown()

        try:
            os.write(master, ("PS1='%s'; fpath=(%s $fpath); autoload -U compinit; "
                              "compinit -u -D\n" % (self.ZSH_PROMPT, fdir)).encode())
            # The prompt after the echo of that line: compinit is done.
            def after_compinit(out):
                _, echoed, after = out.rpartition("compinit -u -D")
                return echoed != "" and self.ZSH_PROMPT_SHOWN in after
            read_until(after_compinit, 30)
            self.assertTrue(after_compinit(shown()),
                            "zsh showed no prompt after compinit:\n" + shown())
            seen = b""
            os.write(master, (line + "\t\t").encode())
            return read_until(lambda out: all(w in out for w in want), 30)
        finally:
            os.close(master)
            proc.kill()
            proc.wait(timeout=10)

    def test_zsh_completes(self):
        if not shutil.which("zsh"):
            self.skipTest("zsh is not installed")
        fdir = tempfile.mkdtemp(dir=self.dir)
        with open(os.path.join(fdir, "_wfctl"), "w") as f:
            f.write(wfctl(None, "completion", "zsh").stdout)
        for line, want in (
                ("wfctl processes --st",
                 ("--started-by", "--state", "--status", "not-started, open or closed")),
                ("wfctl processes --state ", ("not-started", "open", "closed")),
                ("wfctl referral-", ("wfctl referral-status",)),
                ("wfctl --ad", ("wfctl --addr",)),
                ("wfctl batch ", ("start", "get", "cancel", "list")),
                ("wfctl batch start cancel --fo", ("--follow",))):
            out = self.zsh_complete(fdir, line, want)
            for w in want:
                self.assertIn(w, out, "completing %r" % line)

    def test_unknown_shell_is_a_usage_error(self):
        r = wfctl(None, "completion", "fish")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not bash or zsh", r.stderr)


class ManTests(unittest.TestCase):
    """The man page generated from the help text."""

    @classmethod
    def setUpClass(cls):
        r = wfctl(None, "man")
        assert r.returncode == 0, r.stderr
        cls.roff = r.stdout

    def test_renders_without_warnings(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed (groff-base)")
        r = subprocess.run(["groff", "-man", "-ww", "-z"], input=self.roff, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        t = subprocess.run(["groff", "-man", "-Tutf8", "-ww"], input=self.roff,
                           capture_output=True, text=True)
        self.assertEqual(t.stderr, "")
        text = re.sub(".\x08", "", t.stdout).replace("\u2010", "-")  # no overstrike
        self.assertIn("--concurrency N", text)
        self.assertIn("wfctl [global flags] referral-status INSTANCE_ID [options]", text)

    def test_the_build_wrote_the_same_files(self):
        built = os.path.dirname(OPTS.wfctl)
        for name, args in (("wfctl.1", ["man"]), ("wfctl.bash", ["completion", "bash"]),
                           ("_wfctl", ["completion", "zsh"])):
            with open(os.path.join(built, name)) as f:
                self.assertEqual(f.read(), wfctl(None, *args).stdout, name)

    def test_every_command_and_section(self):
        self.assertTrue(self.roff.startswith(".TH WFCTL 1 "))
        for c in commands_of_help():
            self.assertIn("\n.SS %s\n" % c.replace("-", "\\-"), self.roff)
        for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL FLAGS", "COMMANDS", "ENVIRONMENT",
                  "EXIT STATUS"):
            self.assertIn("\n.SH %s\n" % s, self.roff)
        for env in ("WFCTL_ADDR", "WFCTL_API_KEY", "WFCTL_TENANT", "WFCTL_ACTOR",
                    "WFCTL_ACTOR_GROUPS", "WFCTL_TIMEOUT", "WFCTL_TLS"):
            self.assertIn(".B %s\n" % env.replace("-", "\\-"), self.roff)
        self.assertIn("\\fB\\-\\-validate\\-only\\fR", self.roff)
        self.assertIn("(values: not\\-started open closed)", self.roff)


class ServerTests(unittest.TestCase):
    """Commands against a server of the class's store."""

    store_env = {}

    @classmethod
    def setUpClass(cls):
        cls.srv = Server("%s-%s" % (cls.__name__, uuid.uuid4().hex[:6]),
                         wf_testkit.server_env(WF_ENV="development", **cls.store_env)).start()
        cls.addClassCleanup(cls.srv.kill)
        cls.dir = tempfile.mkdtemp(dir=OPTS.work)

    def run_ok(self, *args, **kw):
        r = wfctl(self.srv, *args, **kw)
        self.assertEqual(r.returncode, 0, "wfctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def deploy(self, definition):
        path = os.path.join(self.dir, "%s.json" % definition["key"])
        with open(path, "w") as f:
            json.dump(definition, f)
        return self.run_ok("--json", "deploy", path, actor="dev")

    def job_definition(self, key, job_type, max_attempts=3):
        self.deploy({"key": key, "kind": "STEPS", "steps": [
            {"id": "work", "job": {"job_type": job_type},
             "retry": {"max_attempts": max_attempts}}]})

    def start(self, key):
        return self.run_ok("start", key, actor="dev").strip()

    def instance(self, iid):
        return json.loads(self.run_ok("--json", "show", iid))["instance"]

    def events(self, iid):
        out = self.run_ok("--json", "watch", "--instance", iid)
        return [json.loads(line) for line in out.splitlines() if line]

    def wait_status(self, iid, statuses, timeout=20):
        deadline = time.time() + timeout
        while True:
            st = self.instance(iid)["status"]
            if st in statuses or time.time() > deadline:
                return st
            time.sleep(0.1)


class JsonErrorTests(ServerTests):
    """--json prints errors as JSON objects on stderr, exit statuses unchanged."""

    def error_of(self, r, status):
        self.assertEqual(r.returncode, status, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        return json.loads(lines[0])["error"]

    def test_call_failure(self):
        e = self.error_of(wfctl(self.srv, "--json", "show", "no-such-instance"), 1)
        self.assertEqual(e["code"], "NOT_FOUND")
        self.assertEqual(e["code_number"], 5)
        self.assertEqual(e["reason"], "INSTANCE_NOT_FOUND")
        self.assertEqual(e["domain"], "workflow.v1")
        self.assertIn("no-such-instance", e["message"])
        self.assertEqual(e["violations"], [])
        self.assertIsInstance(e["metadata"], dict)
        # --json after the command, too.
        e = self.error_of(wfctl(self.srv, "start", "k", "--json"), 1)
        self.assertEqual((e["code"], e["reason"]), ("INVALID_ARGUMENT", "ACTOR_MISSING"))
        # Without --json the text form stays.
        r = wfctl(self.srv, "show", "no-such-instance")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith("error: NOT_FOUND (INSTANCE_NOT_FOUND): "))

    def test_violations(self):
        path = os.path.join(self.dir, "bad.json")
        with open(path, "w") as f:
            json.dump({"key": "bad-" + uuid.uuid4().hex[:6], "kind": "STEPS", "steps": [
                {"id": "a", "job": {"job_type": ""}}]}, f)
        e = self.error_of(wfctl(self.srv, "--json", "deploy", path, actor="dev"), 1)
        self.assertEqual(e["code"], "INVALID_ARGUMENT")
        self.assertTrue(e["reason"])
        self.assertGreaterEqual(len(e["violations"]), 1)
        self.assertEqual(e["violations_total"] >= len(e["violations"]), True)
        for v in e["violations"]:
            self.assertEqual(sorted(v), ["description", "field", "reason"])
            self.assertTrue(v["field"])
            self.assertTrue(v["description"])

    def test_usage_errors(self):
        for args in (["--json", "nosuch"], ["--json", "show"], ["show", "x", "--json", "--bogus"],
                     ["--json", "--bogus", "show", "x"], ["--json"],
                     ["--json", "start", "k", "--version", "x"],
                     ["--json", "jobs", "t", "--concurrency", "0", "--", "true"]):
            e = self.error_of(wfctl(self.srv, *args), 2)
            self.assertEqual(e["code"], "USAGE", args)
            self.assertEqual(e["exit_status"], 2)
            self.assertTrue(e["message"], args)
        r = wfctl(self.srv, "nosuch")
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("wfctl: unknown command"))


class CommandTests(ServerTests):
    """Renamed and checked commands."""

    def test_referral_status_is_get_completion(self):
        parent = self.start("rs-" + uuid.uuid4().hex[:6])
        out = json.loads(self.run_ok("--json", "assign", "--parent", parent, "--title", "t",
                                     "--users", "u1,u2", actor="dev"))
        child = out["instance_id"]
        got = json.loads(self.run_ok("--json", "referral-status", child))
        self.assertEqual(got["total"], 2)
        self.assertFalse(got["all_completed"])
        self.assertIn("all completed", self.run_ok("referral-status", child))
        self.assertIn("GetCompletion", self.run_ok("referral-status", "--help"))

    def test_definitions_key_newest_first(self):
        key = "versions-" + uuid.uuid4().hex[:6]
        for n in range(3):
            self.deploy({"key": key, "kind": "STEPS", "name": "v%d" % n,
                         "steps": [{"id": "s%d" % n, "job": {"job_type": "t-%s" % key}}]})
        out = self.run_ok("--json", "definitions", "--key", key)
        versions = [json.loads(line)["version"] for line in out.splitlines()]
        self.assertEqual(versions, [3, 2, 1])
        self.assertIn("newest first", self.run_ok("definitions", "--help"))


    def watcher(self, *args):
        """`wfctl --json watch ARGS --follow`, its stdout and stderr read
        line by line (read_line)."""
        cmd = [OPTS.wfctl, "--addr", "127.0.0.1:%d" % self.srv.port, "--json", "watch"]
        e = {k: v for k, v in os.environ.items() if not k.startswith("WFCTL_")}
        p = subprocess.Popen(cmd + list(args) + ["--follow"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=e)
        self.addCleanup(lambda: (p.kill(), p.wait(), p.stdout.close(), p.stderr.close()))
        p.pending = {p.stdout.fileno(): b"", p.stderr.fileno(): b""}
        return p

    def read_line(self, p, stream, timeout=10):
        """The next line of p's stream (unbuffered reads, so that select
        sees every byte not yet taken), failing after timeout seconds."""
        fd = stream.fileno()
        deadline = time.time() + timeout
        while b"\n" not in p.pending[fd]:
            ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
            self.assertTrue(ready, "no line within %ds" % timeout)
            chunk = os.read(fd, 65536)
            self.assertTrue(chunk, "the stream ended")
            p.pending[fd] += chunk
        line, p.pending[fd] = p.pending[fd].split(b"\n", 1)
        return line.decode()

    def test_watch_follow_starts_now_like_tail_f(self):
        iid = self.start("watch-" + uuid.uuid4().hex[:6])
        p = self.watcher("--instance", iid)
        # Ready once the history is read: stderr names where it follows from.
        self.assertIn("following events after sequence", self.read_line(p, p.stderr))
        self.run_ok("cancel", iid, actor="dev")
        first = json.loads(self.read_line(p, p.stdout))
        self.assertEqual((first["type"], first["instance_id"]), ("INSTANCE_CANCELLED", iid))
        # --from-start (and --after 0) print the history first.
        for flags in (["--from-start"], ["--after", "0"]):
            p = self.watcher("--instance", iid, *flags)
            types = [json.loads(self.read_line(p, p.stdout))["type"] for _ in range(2)]
            self.assertEqual(types, ["INSTANCE_STARTED", "INSTANCE_CANCELLED"], flags)
        # Without --follow: the history, then exit.
        self.assertEqual([e["type"] for e in self.events(iid)],
                         ["INSTANCE_STARTED", "INSTANCE_CANCELLED"])
        r = wfctl(self.srv, "watch", "--from-start", "--after", "1", "--follow")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_resource_commands(self):
        name = "charges-" + uuid.uuid4().hex[:6]
        out = self.run_ok("resource", "declare", name, "--capacity", "2", "--per-key", actor="dev")
        self.assertIn("QUEUE", out)
        got = json.loads(self.run_ok("--json", "resource", "get", name))["resource"]
        self.assertEqual(got["capacity"], 2)
        self.assertTrue(got["per_key"])
        out = self.run_ok("resource", "update", name, "--rate", "100", "--period", "1m",
                          "--strategy", "cancel-newest", actor="dev")
        self.assertIn("100 per 1m", out)
        self.assertIn("CANCEL_NEWEST", out)
        self.assertIn(name, self.run_ok("resources"))
        # Refusals: the reason is printed and the exit status is 1.
        r = wfctl(self.srv, "resource", "declare", "bad name", "--capacity", "1", actor="dev")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("INVALID_ARGUMENT", r.stderr)
        self.assertEqual(self.run_ok("resource", "delete", name, actor="dev").strip(), "ok")
        r = wfctl(self.srv, "resource", "get", name)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("RESOURCE_NOT_FOUND", r.stderr)

    def test_deploy_file_names_resources(self):
        key = "limited-" + uuid.uuid4().hex[:6]
        uses = [{"name": "charges", "key_expression": ".customer"}, {"name": "carrier.api"}]
        self.deploy({"key": key, "kind": "NET",
                     "places": [{"id": "s", "kind": "START"}, {"id": "e", "kind": "END"}],
                     "transitions": [{"id": "charge", "trigger": "AUTO", "job_type": "charge",
                                      "resources": uses}],
                     "arcs": [{"source": "s", "target": "charge"},
                              {"source": "charge", "target": "e"}]})
        self.assertIn("resources charges by `.customer`,carrier.api",
                      self.run_ok("definition", key))
        got = json.loads(self.run_ok("--json", "definition", key))["definition"]
        self.assertEqual(got["transitions"][0]["resources"],
                         [uses[0], {"name": "carrier.api", "key_expression": ""}])

    def test_definition_names_for_each_of_a_call(self):
        key, child = "fan-" + uuid.uuid4().hex[:6], "pay-" + uuid.uuid4().hex[:6]
        self.deploy({"key": key, "kind": "NET",
                     "places": [{"id": "s", "kind": "START"}, {"id": "e", "kind": "END"}],
                     "transitions": [{"id": "pay", "trigger": "CALL",
                                      "call_definition_key": child, "for_each": ".lines",
                                      "for_each_sequential": True}],
                     "arcs": [{"source": "s", "target": "pay"},
                              {"source": "pay", "target": "e"}]})
        self.assertRegex(self.run_ok("definition", key),
                         r"\bpay\b.*calls %s \(newest\), for each `\.lines` one at a time"
                         % child)

    def test_schedule_commands(self):
        key = "sched-" + uuid.uuid4().hex[:6]
        self.job_definition(key, "t-" + key)
        sid = "nightly-" + uuid.uuid4().hex[:6]
        out = self.run_ok("schedule", "create", sid, "--key", key, "--cron", "30 2 * * *",
                          "--tz", "Europe/Berlin", "--overlap", "allow-all", "--catchup", "5m",
                          actor="dev")
        self.assertIn("next fire times", out)
        self.assertIn("cron 30 2 * * * (Europe/Berlin)", out)
        got = json.loads(self.run_ok("--json", "schedule", "get", sid))["schedule"]
        self.assertEqual(got["policy"]["overlap"], "ALLOW_ALL")
        self.assertEqual(len(got["upcoming"]), 10)
        # Refusals: the reason is printed and the exit status is 1.
        r = wfctl(self.srv, "schedule", "create", "bad-" + sid, "--key", key, "--cron", "61 * * * *",
                  actor="dev")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("INVALID_CRON", r.stderr)
        r = wfctl(self.srv, "schedule", "create", "tz-" + sid, "--key", key, "--cron", "@daily",
                  "--tz", "Mars/Olympus", actor="dev")
        self.assertIn("UNKNOWN_TIME_ZONE", r.stderr)
        # --rrule repeats and keeps its commas; the rules come back whole.
        rid = "rules-" + sid
        out = self.run_ok("schedule", "create", rid, "--key", key, "--tz", "Europe/Berlin",
                          "--rrule", "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0",
                          "--rrule", "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=7;BYMINUTE=30",
                          actor="dev")
        self.assertIn("rrule FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0 (Europe/Berlin)", out)
        got = json.loads(self.run_ok("--json", "schedule", "get", rid))["schedule"]
        self.assertEqual(got["spec"]["rrules"], ["FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0",
                                                 "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=7;BYMINUTE=30"])
        for u in got["upcoming"]:
            self.assertRegex(u["local_time"], r"T(09:00|07:30):00")
        r = wfctl(self.srv, "schedule", "create", "never-" + sid, "--key", key,
                  "--rrule", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", actor="dev")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("SCHEDULE_RRULE_NEVER_FIRES", r.stderr)
        self.assertIn(sid, self.run_ok("schedule", "list"))
        run = json.loads(self.run_ok("--json", "schedule", "trigger", sid, actor="dev"))["run"]
        self.assertEqual(run["outcome"], "STARTED")
        self.assertIn(run["instance_id"], self.run_ok("processes", "--started-by", "*",
                                                     "--schedule", sid))
        self.assertTrue(run["manual"])
        self.assertIn("STARTED (manual)", self.run_ok("schedule", "runs", sid))
        # The last three days: one fire time each, started once.
        end = int(time.time()) // 60 * 60
        span = ["--from", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - 3 * 86400)),
                "--to", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))]
        out = self.run_ok("schedule", "backfill", sid, *span, actor="dev")
        self.assertEqual(out.count("STARTED (backfill)"), 3, out)
        self.assertIn("3 run(s) recorded, 0 fire time(s) handled before", out)
        out = self.run_ok("schedule", "backfill", sid, *span, actor="dev")
        self.assertIn("0 run(s) recorded, 3 fire time(s) handled before", out)
        r = wfctl(self.srv, "schedule", "backfill", sid, "--from", span[1], actor="dev")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("INVALID_ARGUMENT", r.stderr)
        self.assertIn("PAUSED", self.run_ok("schedule", "pause", sid, "--reason", "holiday", actor="dev"))
        self.assertIn("ACTIVE", self.run_ok("schedule", "unpause", sid, actor="dev"))
        self.assertEqual(self.run_ok("schedule", "delete", sid, actor="dev").strip(), "ok")
        r = wfctl(self.srv, "schedule", "get", sid)
        self.assertIn("SCHEDULE_NOT_FOUND", r.stderr)
        for flag, name in (("buffer-one", "BUFFER_ONE"), ("cancel-other", "CANCEL_OTHER")):
            out = self.run_ok("schedule", "create", flag + "-" + sid, "--key", key, "--cron",
                              "@daily", "--overlap", flag, actor="dev")
            self.assertIn("overlap " + name, out)

    def test_job_priority_shown_and_changed(self):
        key = "prio-" + uuid.uuid4().hex[:6]
        self.deploy({"key": key, "kind": "STEPS", "steps": [
            {"id": "work", "job": {"job_type": "t-" + key, "priority_expression": ".p",
                                   "fairness_key_expression": ".tenant"}}]})
        iid = self.run_ok("start", key, "--vars", '{"p": 70, "tenant": "acme"}',
                          actor="dev").strip()
        shown = json.loads(self.run_ok("--json", "show", iid))
        job = shown["jobs"][0]
        self.assertEqual(job["priority"], 70)
        self.assertEqual(job["fairness_key"], "acme")
        self.assertRegex(self.run_ok("show", iid), r"FAIRNESS_KEY[\s\S]*\b70\s+acme\b")
        out = self.run_ok("job-priority", iid, job["id"], "--priority", "85")
        self.assertRegex(out, r"priority\s+85")
        self.assertEqual(json.loads(self.run_ok("--json", "show", iid))["jobs"][0]["priority"], 85)
        r = wfctl(self.srv, "job-priority", iid, str(uuid.uuid4()), "--priority", "1")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("JOB_NOT_FOUND", r.stderr)

    def test_step_list_call_and_for_each_shown(self):
        """show prints a step list's current step, its call and, on the
        child, the for-each progress of a job step; definition names the
        kinds."""
        child, parent = "part-" + uuid.uuid4().hex[:6], "whole-" + uuid.uuid4().hex[:6]
        self.deploy({"key": child, "kind": "STEPS", "steps": [
            {"id": "pick", "job": {"job_type": "t-" + child}, "for_each": ".items",
             "for_each_item": "it"}]})
        self.deploy({"key": parent, "kind": "STEPS", "steps": [
            {"id": "pay", "call": {"definition_key": child, "input_expression": "{items}"}}]})
        iid = self.run_ok("start", parent, "--vars", '{"items": [1, 2]}', actor="dev").strip()
        shown = self.run_ok("show", iid)
        self.assertRegex(shown, r"current step\s+pay\b")
        self.assertRegex(shown, r"waiting for\s+call %s@1" % child)
        self.assertRegex(shown, r"calls[\s\S]*\bpay\s+%s@1\s+RUNNING" % child)
        cid = json.loads(self.run_ok("--json", "show", iid))["calls"][0]["instance_id"]
        self.assertRegex(self.run_ok("show", cid),
                         r"for-each[\s\S]*\bpick\s+ALL\s+parallel\s+0 of 2 needed\s+2")
        self.assertRegex(self.run_ok("definition", parent), r"\bpay\s+call %s\b" % child)
        self.assertRegex(self.run_ok("definition", child),
                         r"\bpick\s+job t-%s for each \.items\b" % child)

    def test_batch_start_needs_a_key_or_all(self):
        key = "batch-" + uuid.uuid4().hex[:6]
        ids = [self.start(key) for _ in range(2)]
        # No definition key and no --all: a usage error, nothing started.
        for args in (["batch", "start", "cancel"],
                     ["batch", "start", "cancel", "--started-by", "*", "--status", "running"]):
            r = wfctl(self.srv, *args, actor="dev")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--all", r.stderr)
        self.assertEqual([self.instance(i)["status"] for i in ids], ["RUNNING"] * 2)
        # --dry-run counts and starts nothing.
        out = json.loads(self.run_ok("--json", "batch", "start", "cancel", "--key", key,
                                     "--dry-run", actor="dev"))
        self.assertEqual((out["batch_operation"]["id"], out["batch_operation"]["total"]), ("", 2))
        self.assertIn("would act on 2 instances",
                      self.run_ok("batch", "start", "cancel", "--key", key, "--dry-run",
                                  actor="dev"))
        # --all without a key is accepted (a dry run here: the server is shared).
        out = json.loads(self.run_ok("--json", "batch", "start", "suspend", "--all",
                                     "--started-by", "*", "--dry-run", actor="dev"))
        self.assertGreaterEqual(out["batch_operation"]["total"], 2)
        self.assertEqual([self.instance(i)["status"] for i in ids], ["RUNNING"] * 2)
        # With a key it starts.
        self.run_ok("batch", "start", "cancel", "--key", key, "--follow", actor="dev")
        self.assertEqual([self.instance(i)["status"] for i in ids], ["CANCELLED"] * 2)


class JobsTests(ServerTests):
    """wfctl jobs: concurrency, lease extension, a permanent failure."""

    def setUp(self):
        self.run_id = uuid.uuid4().hex[:8]
        self.job_type = "wfctl-" + self.run_id
        self.key = "wfctl-jobs-" + self.run_id

    def worker(self, *opts, command):
        cmd = [OPTS.wfctl, "--addr", "127.0.0.1:%d" % self.srv.port, "--json", "jobs",
               self.job_type] + list(opts) + ["--", "sh", "-c", command]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        return [json.loads(line) for line in out.splitlines() if line], err

    def test_concurrency_runs_commands_at_once(self):
        self.job_definition(self.key, self.job_type)
        ids = [self.start(self.key) for _ in range(3)]
        # Each command marks its start, then waits (up to 30 s) until all
        # three have started: they all see three marks only if they run at
        # once, however slow the machine.
        marks = os.path.join(self.dir, "started-" + self.run_id)
        os.makedirs(marks)
        log = os.path.join(self.dir, "overlap-" + self.run_id)
        w = self.worker("--concurrency", "3", command=(
            'touch %(m)s/$$; n=0; '
            'while [ "$(ls %(m)s | wc -l)" -lt 3 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); '
            'done; echo "saw $(ls %(m)s | wc -l)" >> %(log)s' % {"m": marks, "log": log}))
        t0 = time.time()
        for iid in ids:
            self.assertEqual(self.wait_status(iid, ("COMPLETED",), timeout=60), "COMPLETED")
        took = time.time() - t0
        results, _ = self.stop(w)
        self.assertEqual(sorted(r["instance_id"] for r in results), sorted(ids))
        self.assertTrue(all(r["outcome"] == "completed" and r["reported"] for r in results))
        saw = open(log).read().split()
        self.assertEqual(saw, ["saw", "3"] * 3, "the three commands did not run at once")
        print("\n  3 commands, --concurrency 3: all running at once, completed in %.2f s" % took,
              file=sys.stderr)

    def test_lease_is_extended_while_the_command_runs(self):
        self.job_definition(self.key, self.job_type)
        iid = self.start(self.key)
        # Renewed every third of the lease: a loaded machine may delay a
        # renewal by a second without the lease running out.
        r = wfctl(self.srv, "--json", "jobs", self.job_type, "--once", "--lease", "2",
                  "--wait", "5", "--", "sh", "-c", "sleep 5; echo '{\"done\": true}'")
        self.assertEqual(r.returncode, 0, r.stderr)
        result = json.loads(r.stdout.strip())
        self.assertEqual((result["outcome"], result["reported"]), ("completed", True))
        self.assertEqual(self.wait_status(iid, ("COMPLETED",)), "COMPLETED")
        self.run_ok("tick")
        types = [e["type"] for e in self.events(iid)]
        self.assertIn("JOB_COMPLETED", types)
        self.assertNotIn("JOB_LEASE_EXPIRED", types)
        self.assertEqual(types.count("JOB_ACTIVATED"), 1)

    def test_lost_lease_kills_the_command_unreported(self):
        self.job_definition(self.key, self.job_type)
        iid = self.start(self.key)
        mark = os.path.join(self.dir, "running-" + self.run_id)
        w = self.worker("--once", "--lease", "1", "--wait", "5",
                        command="touch %s; sleep 30; echo '{}'" % mark)
        deadline = time.time() + 10
        while not os.path.exists(mark) and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(mark), "the command did not start")
        # Cancelling the instance withdraws the job: the next renewal is refused.
        self.run_ok("cancel", iid, "--reason", "lease test", actor="dev")
        t0 = time.time()
        out, err = w.communicate(timeout=25)
        # Terminated at the refused renewal, long before its 30 s sleep ends.
        self.assertLess(time.time() - t0, 20, "the command was not terminated: %s" % err)
        self.assertEqual(w.returncode, 0, err)
        result = json.loads(out.strip())
        self.assertEqual((result["outcome"], result["reported"]), ("lease_lost", False))
        self.assertRegex(err, "JOB_(LEASE_LOST|NOT_FOUND)")
        types = [e["type"] for e in self.events(iid)]
        self.assertNotIn("JOB_COMPLETED", types)
        self.assertNotIn("JOB_FAILED", types)

    def test_exit_100_fails_the_job_for_good(self):
        self.job_definition(self.key, self.job_type, max_attempts=3)
        iid = self.start(self.key)
        r = wfctl(self.srv, "--json", "jobs", self.job_type, "--once", "--wait", "5", "--",
                  "sh", "-c", "echo 'card declined' >&2; exit 100")
        self.assertEqual(r.returncode, 0, r.stderr)
        result = json.loads(r.stdout.strip())
        self.assertEqual((result["outcome"], result["reported"]), ("failed_permanently", True))
        self.assertIn("exit status 100: card declined", result["error_message"])
        self.assertEqual(self.wait_status(iid, ("FAILED",)), "FAILED")
        types = [e["type"] for e in self.events(iid)]
        self.assertEqual(types.count("JOB_FAILED"), 1)
        self.assertNotIn("JOB_RETRY_SCHEDULED", types)
        self.assertEqual(types.count("JOB_ACTIVATED"), 1)
        incidents = [json.loads(line) for line in
                     self.run_ok("--json", "incidents", "--definition", self.key).splitlines()]
        self.assertEqual([i["instance_id"] for i in incidents], [iid])
        # Nothing is left to activate: no retry was scheduled.
        r = wfctl(self.srv, "jobs", self.job_type, "--once", "--wait", "1", "--", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no %s jobs activated" % self.job_type, r.stdout)

    def test_other_exit_statuses_stay_retryable(self):
        self.job_definition(self.key, self.job_type, max_attempts=3)
        iid = self.start(self.key)
        r = wfctl(self.srv, "--json", "jobs", self.job_type, "--once", "--wait", "5", "--",
                  "sh", "-c", "exit 3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout.strip())["outcome"], "failed")
        self.assertEqual(self.instance(iid)["status"], "RUNNING")
        self.assertIn("JOB_RETRY_SCHEDULED", [e["type"] for e in self.events(iid)])


def pg_classes():
    dsn = wf_testkit.pg_dsn()
    made = []
    for base in (JsonErrorTests, CommandTests, JobsTests):
        made.append(type(base.__name__.replace("Tests", "PgTests"), (base,),
                         {"store_env": {"DATABASE_URL": dsn}}))
    return made


def main():
    global OPTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--wfctl", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--store", choices=("memory", "pg"), default="memory")
    OPTS, rest = parser.parse_known_args()
    if OPTS.store == "pg" and wf_testkit.pg_dsn() is None:
        print("skipped: WF_TEST_PG_DSN is not set")
        return wf_testkit.SKIP
    OPTS.server, OPTS.wfctl = os.path.abspath(OPTS.server), os.path.abspath(OPTS.wfctl)
    OPTS.work = os.path.abspath(OPTS.work)
    os.makedirs(OPTS.work, exist_ok=True)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    classes = (pg_classes() if OPTS.store == "pg"
               else [CompletionTests, ManTests, JsonErrorTests, CommandTests, JobsTests])
    for cls in classes:
        suite.addTests(loader.loadTestsFromTestCase(cls))
    if rest:
        suite = unittest.TestSuite(t for t in suite if any(k in t.id() for k in rest))
    import threading
    timer = threading.Timer(SUITE_TIMEOUT, lambda: os._exit(3))
    timer.daemon = True
    timer.start()
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    timer.cancel()
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
