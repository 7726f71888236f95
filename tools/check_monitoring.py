#!/usr/bin/python3
"""check_monitoring.py: checks of the alert rules and the Grafana dashboard.

    tools/check_monitoring.py [--server PATH/workflowd [--addr H:P --metrics-addr H:P]]

Files (k8s/components/monitoring/):
    prometheus/workflowd-rules.yaml       plain Prometheus rule groups
    prometheus/workflowd-rules-test.yaml  their unit tests
    grafana-dashboard.json                the dashboard of the ConfigMap

Steps, each of which fails the run:
    1. promtool check rules on the rules file
    2. promtool test rules on the unit tests
    3. the dashboard is JSON with unique panel ids, every panel and variable
       query has a PromQL expression, and every expression parses: promtool
       has no PromQL check of its own, so each one (Grafana's $variables
       replaced by values of their type) becomes a recording rule of a
       generated rule file that `promtool check rules` parses
    4. with --server: every metric name used by a rule or the dashboard is in
       the /metrics exposition of that workflowd (started on the memory
       store with WF_ENV=development on free 127.0.0.1 ports unless given,
       scraped, stopped with SIGTERM, which must exit 0); `up` is the only
       name allowed besides, since Prometheus adds it per target

Needs promtool (Debian package prometheus) and PyYAML (python3-yaml).
Exit status: 0 all passed, 1 a check failed, 2 missing prerequisite.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPONENT = os.path.join(ROOT, "k8s", "components", "monitoring")
RULES = os.path.join(COMPONENT, "prometheus", "workflowd-rules.yaml")
RULE_TESTS = os.path.join(COMPONENT, "prometheus", "workflowd-rules-test.yaml")
DASHBOARD = os.path.join(COMPONENT, "grafana-dashboard.json")

# Names that are no metric: PromQL keywords and the words that introduce a
# parenthesised label list.
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "start", "end"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
# Aggregation operators, which may stand before "by (...)" instead of "(".
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile"}

# Grafana's built-in interval variables, replaced by a duration.
GRAFANA_DURATIONS = {"__rate_interval": "5m", "__interval": "1m", "__range": "6h"}

results = {"passed": 0, "failed": 0}


def rel(path):
    return os.path.relpath(path, ROOT)


def report(ok, what, detail=""):
    results["passed" if ok else "failed"] += 1
    print("%s %s" % ("PASS" if ok else "FAIL", what))
    if detail and not ok:
        print("  " + detail.strip().replace("\n", "\n  "))


def promtool(*args):
    res = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)
    return res.returncode, res.stdout + res.stderr


def grafana_to_promql(expr):
    """Replaces Grafana's $variables: durations by a duration, the others
    (which stand inside label matcher strings) by a plain value."""

    def sub(m):
        name = m.group(1) or m.group(2)
        return GRAFANA_DURATIONS.get(name, "x")

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", sub, expr)


def metric_names(expr):
    """Metric names of a PromQL expression: what stays once strings, label
    matchers, ranges, numbers, function calls, keywords and label lists
    (by (...), on (...), ...) are taken out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    tokens = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*|\d[\w.]*|\S", text)
    names = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in LABEL_LISTS:
            i += 1
            if i < len(tokens) and tokens[i] == "(":
                while i < len(tokens) and tokens[i] != ")":
                    i += 1
            i += 1
            continue
        if re.match(r"[A-Za-z_:]", tok) and tok not in KEYWORDS and tok not in AGGREGATIONS and nxt != "(":
            names.add(tok)
        i += 1
    return names


def dashboard_exprs(dash):
    """(where, PromQL) of every panel target and every query variable."""
    out = []
    problems = []
    ids = set()

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dash.get("panels", [])):
        pid = p.get("id")
        if pid in ids:
            problems.append("panel id %s is used twice" % pid)
        ids.add(pid)
        if p.get("type") == "row":
            continue
        targets = p.get("targets", [])
        if not targets:
            problems.append("panel %r has no query" % p.get("title"))
        for t in targets:
            if not t.get("expr"):
                problems.append("panel %r, target %s has no expr" % (p.get("title"), t.get("refId")))
                continue
            out.append(("panel %r %s" % (p.get("title"), t.get("refId")), t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q or "", re.S)
        m = m or re.fullmatch(r"\s*query_result\((.*)\)\s*", q or "", re.S)
        if not m:
            problems.append("variable %r: query %r is neither label_values(SELECTOR, LABEL) nor query_result(EXPR)"
                            % (v.get("name"), q))
            continue
        out.append(("variable %r" % v.get("name"), m.group(1)))
    return out, problems


def parses(exprs, work):
    """Problems of the expressions promtool cannot parse."""

    def write(items, path):
        rules = [{"record": "dashboard:expr_%d" % i, "expr": grafana_to_promql(e)} for i, (_, e) in enumerate(items)]
        with open(path, "w") as f:
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML

    path = os.path.join(work, "dashboard-exprs.yaml")
    write(exprs, path)
    rc, out = promtool("check", "rules", path)
    if rc == 0:
        return []
    problems = []
    for where, e in exprs:  # one at a time, to name the culprit
        write([(where, e)], path)
        rc1, out1 = promtool("check", "rules", path)
        if rc1 != 0:
            problems.append("%s: %s\n    %s" % (where, e, out1.strip().splitlines()[-1]))
    return problems or ["promtool check rules failed:\n" + out]


def exposition_names(text):
    """Names a query can select: those of the samples, and those of every
    declared family (a labelled family such as workflow_jobs_activatable has
    no sample before its first label set), with the series names of
    histograms and summaries; and `up`, which Prometheus adds per target."""
    names = {"up"}
    for line in text.splitlines():
        m = re.match(r"# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)", line)
        if m:
            suffixes = {"histogram": ["_bucket", "_sum", "_count"], "summary": ["", "_sum", "_count"]}
            for suffix in suffixes.get(m.group(2), [""]):
                names.add(m.group(1) + suffix)
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def free_addr():
    """127.0.0.1 and a port nobody listens on now, never 50051; with
    WF_TEST_PORT_DIR (set by test.sh) claimed there for the run, as
    tests/support/wf_testkit.py free_port does."""
    claims = os.environ.get("WF_TEST_PORT_DIR")
    for _ in range(1000):
        with socket.socket() as s:
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
        return "127.0.0.1:%d" % port
    raise RuntimeError("no free port found")


def scrape(server, addr, metrics_addr, work):
    """The /metrics text of a workflowd started on the memory store, its
    exit status after SIGTERM and the tail of its log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WF_") and k != "DATABASE_URL"}
    env.update(WF_ENV="development", WF_ADDR=addr, WF_METRICS_ADDR=metrics_addr, WF_LOG_LEVEL="warn")
    log_path = os.path.join(work, "workflowd.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([server], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        text = None
        while text is None:
            try:
                with urllib.request.urlopen("http://%s/metrics" % metrics_addr, timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    with open(log_path) as f:
                        raise RuntimeError("workflowd (%s) served no /metrics on %s (exit %s):\n%s"
                                           % (server, metrics_addr, proc.poll(), f.read()[-2000:]))
                time.sleep(0.2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with open(log_path) as f:
        return text, proc.returncode, f.read()[-4000:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", help="a built workflowd: also check the metric names against its /metrics")
    ap.add_argument("--addr", help="gRPC address for that workflowd (default: a free 127.0.0.1 port)")
    ap.add_argument("--metrics-addr", help="its metrics address (default: a free 127.0.0.1 port)")
    args = ap.parse_args()

    if shutil.which("promtool") is None:
        print("check_monitoring: missing prerequisite: promtool (Debian: apt-get install prometheus)", file=sys.stderr)
        return 2
    try:
        import yaml
    except ImportError:
        print("check_monitoring: missing prerequisite: PyYAML (Debian: apt-get install python3-yaml)", file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="check-monitoring.")
    try:
        rc, out = promtool("check", "rules", RULES)
        report(rc == 0, "promtool check rules %s" % rel(RULES), out)
        # promtool resolves rule_files relative to the test file.
        rc, out = promtool("test", "rules", RULE_TESTS)
        report(rc == 0, "promtool test rules %s" % rel(RULE_TESTS), out)

        with open(RULES) as f:
            groups = yaml.safe_load(f)["groups"]
        rule_exprs = [("rule %s" % (r.get("alert") or r.get("record")), r["expr"]) for g in groups for r in g["rules"]]

        try:
            with open(DASHBOARD) as f:
                dash = json.load(f)
        except (OSError, ValueError) as e:
            report(False, "dashboard %s is JSON" % rel(DASHBOARD), str(e))
            dash = None
        dash_exprs = []
        if dash is not None:
            dash_exprs, problems = dashboard_exprs(dash)
            if dash.get("uid") != "workflowd":
                problems.append('uid must stay "workflowd" (links and the sidecar key on it)')
            report(not problems, "dashboard %s: JSON, %d queries" % (rel(DASHBOARD), len(dash_exprs)), "\n".join(problems))
            problems = parses(dash_exprs, work)
            report(not problems, "dashboard: every PromQL expression parses (promtool check rules)", "\n".join(problems))

        if args.server:
            try:
                text, rc, log = scrape(args.server, args.addr or free_addr(), args.metrics_addr or free_addr(), work)
                # Under ASan a leak or an error at exit shows here.
                report(rc == 0, "workflowd served /metrics and exited 0 after SIGTERM", "exit %s:\n%s" % (rc, log))
            except RuntimeError as e:
                report(False, "scrape of %s" % args.server, str(e))
                text = None
            if text is not None:
                exposed = exposition_names(text)
                for label, exprs in (("alert rules", rule_exprs), ("dashboard", dash_exprs)):
                    problems = []
                    used = set()
                    for where, e in exprs:
                        names = metric_names(grafana_to_promql(e))
                        if not names:
                            problems.append("%s uses no metric: %s" % (where, e))
                        for n in sorted(names - exposed):
                            problems.append("%s: %s is not in the /metrics of workflowd" % (where, n))
                        used |= names
                    report(not problems, "%s: %d metric names, all exposed by workflowd (%d names exposed)"
                           % (label, len(used), len(exposed)), "\n".join(problems))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("check_monitoring: %d passed, %d failed" % (results["passed"], results["failed"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
