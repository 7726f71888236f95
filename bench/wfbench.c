/*
 * wfbench: the benchmark of workflowd (see bench/README.md).
 *
 *   wfbench --target 127.0.0.1:PORT --dsn DSN --server-pid PID \
 *           --pgbench-script bench/insert.sql [options] [WORKLOAD...]
 *
 * Measures two baselines in the same run, before and after the workloads
 * (the machine is shared and noisy, so only ratios mean something):
 *   - health: grpc.health.v1.Health/Check on the same server, the floor
 *     cost of an RPC;
 *   - commit ceiling: pgbench with a one-row INSERT per transaction on the
 *     same Postgres.
 * Then runs each workload closed-loop on N threads (one connection each, or
 * N threads sharing --channels connections round-robin),
 * re-runs every RPC workload rate-limited at half its measured maximum to
 * check p99, compares jobs with a small and a large backlog, soaks for RSS
 * growth and for the throughput of its first and last minute, measures
 * bytes per parked instance, and prints one table with every target, met
 * or not (also written to --out).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/status.h>

#include "bench.h"
#include "grpc/health/v1/health.pb-c.h"

const char *const bench_method_name[M_COUNT] = {
    "Health/Check",      "DeployDefinition",
    "StartInstance",     "GetInstance",
    "AssignTo",          "GetTask",
    "ListTasks",         "ClaimTask",
    "CompleteTask",      "ActivateJobs",
    "CompleteJob",       "SendSignal",
    "CompleteJobs",      "StartBatchOperation",
    "GetBatchOperation", "GetDefinitionStatistics",
};

static const char *const method_path[M_COUNT] = {
    "/grpc.health.v1.Health/Check",
    "/workflow.v1.WorkflowService/DeployDefinition",
    "/workflow.v1.WorkflowService/StartInstance",
    "/workflow.v1.WorkflowService/GetInstance",
    "/workflow.v1.WorkflowService/AssignTo",
    "/workflow.v1.WorkflowService/GetTask",
    "/workflow.v1.WorkflowService/ListTasks",
    "/workflow.v1.WorkflowService/ClaimTask",
    "/workflow.v1.WorkflowService/CompleteTask",
    "/workflow.v1.WorkflowService/ActivateJobs",
    "/workflow.v1.WorkflowService/CompleteJob",
    "/workflow.v1.WorkflowService/SendSignal",
    "/workflow.v1.WorkflowService/CompleteJobs",
    "/workflow.v1.WorkflowService/StartBatchOperation",
    "/workflow.v1.WorkflowService/GetBatchOperation",
    "/workflow.v1.WorkflowService/GetDefinitionStatistics",
};

/* ---- runner ------------------------------------------------------------- */

double
bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_until(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void
sleep_s(double s)
{
    sleep_until(bench_now() + s);
}

int
bcall(worker *w, int method, const ProtobufCMessage *req,
      const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, int timeout_ms)
{
    wf_client_status st;
    wf_client_call_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = timeout_ms;
    *resp = NULL;
    double t = bench_now();
    int code = wf_client_call(w->c, method_path[method], req, resp_desc, resp, &o, &st);
    hist_add(&w->m[method], (uint64_t)((bench_now() - t) * 1e6));
    if (code != 0) {
        if (code > 0 && code < 17)
            w->codes[code]++;
        snprintf(w->last_err, sizeof w->last_err, "%s: %s %.40s%s%.90s%s%.40s",
                 bench_method_name[method], wf_client_code_name(code), st.reason,
                 st.reason[0] ? " " : "", st.message, st.nviolations > 0 ? "; " : "",
                 st.nviolations > 0 ? st.violations[0] : "");
        if (code == GRPC_STATUS_UNIMPLEMENTED && w->run != NULL) {
            run *r = w->run;
            if (atomic_exchange(&r->na, 1) == 0) {
                snprintf(r->na_method, sizeof r->na_method, "%s", bench_method_name[method]);
                snprintf(r->na_message, sizeof r->na_message, "%.200s", st.message);
            }
            atomic_store(&r->stop, 1);
        }
        if (*resp != NULL) {
            protobuf_c_message_free_unpacked(*resp, NULL);
            *resp = NULL;
        }
    }
    return code;
}

const char *
bench_request_id(worker *w, char *buf, size_t len)
{
    static atomic_uint_fast64_t next_id;
    if (!w->run->b->use_request_ids)
        return "";
    w->seq++;
    snprintf(buf, len, "wfb-%s-%llu", w->run->b->run_id,
             (unsigned long long)atomic_fetch_add(&next_id, 1) + 1);
    return buf;
}

void
setup_worker_init(worker *w, run *r)
{
    static atomic_uint_fast64_t setup_seq;
    memset(w, 0, sizeof *w);
    w->idx = 1000 + (int)atomic_fetch_add(&setup_seq, 1);
    w->c = r->b->setup_client;
    w->run = r;
    w->rng = (unsigned)time(NULL);
    w->m = calloc(M_COUNT, sizeof(hist));
}

void
setup_worker_free(worker *w)
{
    free(w->m);
    w->m = NULL;
}

static void *
worker_main(void *arg)
{
    worker *w = arg;
    run *r = w->run;
    /* Open the connection before the clock starts (not recorded). */
    {
        Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
        ProtobufCMessage *resp = NULL;
        w->run = NULL; /* no n/a marking from the warm-up */
        bcall(w, M_HEALTH, &req.base, &grpc__health__v1__health_check_response__descriptor, &resp,
              0);
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        w->run = r;
        memset(w->m, 0, M_COUNT * sizeof(hist));
        memset(w->codes, 0, sizeof w->codes);
        w->last_err[0] = '\0';
    }
    pthread_barrier_wait(&r->bar); /* all connected */
    pthread_barrier_wait(&r->bar); /* r->t0 is set */
    int consecutive_fail = 0;
    while (!atomic_load(&r->stop)) {
        double start, actual;
        if (r->rate > 0) {
            uint64_t s = atomic_fetch_add(&r->slot, 1);
            start = r->t0 + (double)s / r->rate;
            if (start >= r->t0 + r->duration_s)
                break;
            sleep_until(start);
            if (atomic_load(&r->stop))
                break;
        } else {
            start = bench_now();
        }
        if (r->max_units > 0 && atomic_load(&r->units) >= r->max_units)
            break;
        uint64_t u0 = w->units;
        actual = bench_now();
        int rc = r->op(w);
        double end = bench_now();
        if (rc == OP_DONE || rc == OP_NA)
            break;
        hist_add(&w->op, (uint64_t)((end - start) * 1e6));
        hist_add(&w->op_svc, (uint64_t)((end - actual) * 1e6));
        atomic_fetch_add(&r->units, w->units - u0);
        if (rc == OP_OK) {
            w->ops_ok++;
            consecutive_fail = 0;
        } else {
            w->ops_failed++;
            /* A server that only fails would make a hot loop: give up. */
            if (++consecutive_fail >= 200) {
                atomic_store(&r->stop, 1);
                break;
            }
            if (consecutive_fail >= 10)
                sleep_s(0.01);
        }
    }
    w->t_exit = bench_now();
    atomic_fetch_add(&r->exited, 1);
    return NULL;
}

void
run_phase(run *r)
{
    bench *b = r->b;
    int n = r->nthreads;
    atomic_store(&r->stop, 0);
    atomic_store(&r->exited, 0);
    atomic_store(&r->slot, 0);
    atomic_store(&r->units, 0);
    r->w = calloc((size_t)n, sizeof(worker));
    pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
    if (r->w == NULL || th == NULL) {
        snprintf(r->last_err, sizeof r->last_err, "out of memory");
        free(r->w);
        free(th);
        r->w = NULL;
        return;
    }
    pthread_barrier_init(&r->bar, NULL, (unsigned)n + 1);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    for (int i = 0; i < n; i++) {
        worker *w = &r->w[i];
        w->idx = i;
        w->c = b->clients[i];
        w->run = r;
        w->rng = seed + (unsigned)i * 7919u;
        w->m = calloc(M_COUNT, sizeof(hist));
        pthread_create(&th[i], NULL, worker_main, w);
    }
    pthread_barrier_wait(&r->bar);
    if (r->measure_cost)
        cost_mark_cpu(b, &r->cpu0);
    r->t0 = bench_now();
    pthread_barrier_wait(&r->bar);
    double next_rss = r->t0;
    /* Commits from one second in, once the load is steady: Postgres
     * publishes its counts up to a second late, at both samples alike. */
    double next_commits = r->t0 + 1.0;
    memset(&r->commits, 0, sizeof r->commits);
    r->nrss = 0;
    while (!atomic_load(&r->stop) && atomic_load(&r->exited) < n) {
        double now = bench_now();
        if (now >= r->t0 + r->duration_s)
            break;
        if (r->pgc != NULL && now >= next_commits) {
            uint64_t u = atomic_load(&r->units);
            cost_commit_sample(&r->commits, now, u, cost_pg_commits(r->pgc), 1);
            next_commits += 1.0;
        }
        if (r->timed_rss && now >= next_rss) {
            if (r->nrss < (int)(sizeof r->rss_kb / sizeof r->rss_kb[0])) {
                r->units_s[r->nrss] = atomic_load(&r->units);
                r->rss_kb[r->nrss++] = proc_rss_kb(b->server_pid);
            }
            next_rss += 1.0;
        }
        sleep_s(0.02);
    }
    atomic_store(&r->stop, 1);
    if (r->timed_rss && r->nrss < (int)(sizeof r->rss_kb / sizeof r->rss_kb[0])) {
        r->units_s[r->nrss] = atomic_load(&r->units);
        r->rss_kb[r->nrss++] = proc_rss_kb(b->server_pid);
    }
    double t_end = r->t0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        worker *w = &r->w[i];
        if (w->t_exit > t_end)
            t_end = w->t_exit;
        hist_merge(&r->op_hist, &w->op);
        hist_merge(&r->op_svc_hist, &w->op_svc);
        for (int m = 0; m < M_COUNT; m++)
            hist_merge(&r->m_hist[m], &w->m[m]);
        r->ops_ok += w->ops_ok;
        r->ops_failed += w->ops_failed;
        r->units_done += w->units;
        r->mismatches += w->mismatches;
        for (int c = 0; c < 17; c++)
            r->codes[c] += w->codes[c];
        if (r->last_err[0] == '\0' && w->last_err[0] != '\0')
            snprintf(r->last_err, sizeof r->last_err, "%s", w->last_err);
        free(w->m);
    }
    r->elapsed_s = t_end - r->t0;
    if (r->measure_cost)
        cost_mark_cpu(b, &r->cpu1);
    pthread_barrier_destroy(&r->bar);
    free(th);
    free(r->w);
    r->w = NULL;
}

/* ---- running a workload into a result ---------------------------------- */

static void
codes_text(const uint64_t codes[17], uint64_t mismatches, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int c = 1; c < 17; c++)
        if (codes[c] > 0) {
            size_t l = strlen(buf);
            snprintf(buf + l, len - l, "%s%llu %s", l ? ", " : "", (unsigned long long)codes[c],
                     wf_client_code_name(c));
        }
    if (mismatches > 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%llu unexpected answers", l ? ", " : "",
                 (unsigned long long)mismatches);
    }
}

static void
run_workload(bench *b, const workload *wl, double rate, double duration, int timed_rss, result *res,
             run **keep)
{
    memset(res, 0, sizeof *res);
    run *r = calloc(1, sizeof *r);
    if (r == NULL) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "out of memory");
        return;
    }
    r->wl = wl;
    r->b = b;
    r->nthreads = b->nthreads;
    r->duration_s = duration;
    r->rate = rate;
    r->op = wl->op;
    r->timed_rss = timed_rss;
    int rc = wl->setup != NULL ? wl->setup(r) : 0;
    if (rc == OP_NA || atomic_load(&r->na)) {
        res->status = RS_NA;
        snprintf(res->note, sizeof res->note, "n/a (not implemented: %s)",
                 r->na_method[0] ? r->na_method : "?");
        goto out;
    }
    if (rc != 0) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "setup failed: %s", r->last_err);
        goto out;
    }
    atomic_store(&r->cursor, 0);
    atomic_store(&r->na, 0);
    r->last_err[0] = '\0';
    /* The cost of closed-loop runs. The metrics are scraped twice before:
     * a scrape may count the backlog gauges with SQL after reading the
     * counters, and the second one serves those counts from its cache. */
    cost_mark srv0, srv1;
    r->measure_cost = rate <= 0;
    if (r->measure_cost) {
        r->pgc = cost_pg_open(b);
        cost_mark_server(b, &srv0);
        cost_mark_server(b, &srv0);
    }
    run_phase(r);
    if (r->measure_cost) {
        cost_mark_server(b, &srv1);
        cost_pg_close(r->pgc);
        r->pgc = NULL;
        r->cpu0.rt = srv0.rt;
        r->cpu0.stmts = srv0.stmts;
        r->cpu0.txns = srv0.txns;
        r->cpu1.rt = srv1.rt;
        r->cpu1.stmts = srv1.stmts;
        r->cpu1.txns = srv1.txns;
        cost_per_unit(&r->cpu0, &r->cpu1, r->units_done, &r->commits, &res->cost);
    }
    if (atomic_load(&r->na)) {
        res->status = RS_NA;
        snprintf(res->note, sizeof res->note, "n/a (not implemented: %s)", r->na_method);
        goto out;
    }
    double el = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;
    res->units = r->units_done;
    res->ops_ok = r->ops_ok;
    res->ops_failed = r->ops_failed;
    res->mismatches = r->mismatches;
    memcpy(res->codes, r->codes, sizeof res->codes);
    memcpy(res->m_hist, r->m_hist, sizeof res->m_hist);
    res->units_per_s = (double)r->units_done / el;
    res->ops_per_s = (double)(r->ops_ok + r->ops_failed) / el;
    res->has_latency = r->op_hist.n > 0;
    res->p50_ms = hist_pct_ms(&r->op_hist, 50);
    res->p99_ms = hist_pct_ms(&r->op_hist, 99);
    res->max_ms = hist_max_ms(&r->op_hist);
    res->p50_svc_ms = hist_pct_ms(&r->op_svc_hist, 50);
    res->p99_svc_ms = hist_pct_ms(&r->op_svc_hist, 99);
    if (r->units_done == 0) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "nothing succeeded: %s", r->last_err);
    } else {
        char ct[160];
        codes_text(r->codes, r->mismatches, ct, sizeof ct);
        /* The note is a summary: cutting it short is fine. */
        if (ct[0] != '\0' &&
            snprintf(res->note, sizeof res->note, "errors: %s; last: %.150s", ct, r->last_err) < 0)
            res->note[0] = '\0';
        if (wl->pooled && el < duration * 0.95) {
            size_t l = strlen(res->note);
            snprintf(res->note + l, sizeof res->note - l, "%spool used up after %.1f s",
                     l ? "; " : "", el);
        }
    }
out:
    if (wl->cleanup != NULL)
        wl->cleanup(r);
    if (keep != NULL)
        *keep = r;
    else
        free(r);
}

/* ---- report ----------------------------------------------------------- */

enum kind {
    K_BASE_HEALTH, /* baseline: health */
    K_BASE_PG,     /* baseline: commit ceiling */
    K_VS_HEALTH,   /* rate / health >= thr */
    K_VS_PG,       /* rate / ceiling >= thr (thr 0: informative) */
    K_P99,         /* p99 <= thr ms */
    K_MB,          /* value MB <= thr */
    K_BYTES,       /* value bytes <= thr */
    K_VS_REF,      /* rate / ref (another row's rate) >= thr */
    K_HALF_P99     /* every RPC's p99 at half rate (r->p99_ms: the worst) <= thr ms */
};

typedef struct row {
    char name[40];
    const char *unit;
    int kind;
    double thr;
    char target[48];
    result res;
    int half; /* take part in the half-rate pass */
    const workload *wl;
    double ref;         /* K_VS_REF: the rate this row is compared with */
    double floor, goal; /* K_VS_PG: the floor and the goal, ratios to C; 0: none */
    const char *key;    /* the workload's name on the command line (--summary) */
} row;

/* The rows of the workloads that are held to a ratio: what each is held
 * to. The target is the one the workload has always had; the floor is
 * what it must not fall under, and the goal what it should reach. Ratios
 * are to H (K_VS_HEALTH) or to C (K_VS_PG); 0 means none. */
typedef struct row_spec {
    const char *key;    /* the workload's name on the command line */
    const workload *wl; /* closed-loop workloads; NULL: timers */
    const char *name;
    const char *unit;
    int kind;
    double target, floor, goal;
} row_spec;

static const row_spec row_specs[] = {
    {"read", &wl_read, "read (GetTask)", "calls/s", K_VS_HEALTH, 0.8, 0, 0},
    {"start", &wl_start, "start (ad-hoc)", "inst/s", K_VS_PG, 0.4, 0.2, 0.4},
    {"referral", &wl_referral, "referral (3 RPCs)", "inst/s", K_VS_PG, 0, 0, 0},
    {"flow", &wl_flow, "flow (6 RPCs)", "inst/s", K_VS_PG, 0.05, 0, 0},
    {"steps2", &wl_steps2, "steps2 (2 AUTO jobs)", "inst/s", K_VS_PG, 0.085, 0.03, 0.085},
    {"jobs", &wl_jobs, "jobs (max_jobs 1)", "jobs/s", K_VS_PG, 0.15, 0.06, 0.15},
    {"jobs32", &wl_jobs32, "jobs32 (max_jobs 32)", "jobs/s", K_VS_PG, 0.5, 0, 0},
    {"signal", &wl_signal, "signal (aggregate)", "signals/s", K_VS_PG, 0.05, 0.05, 0.1},
    {"jobs-stream", &wl_jobs_stream, "jobs-stream credit 32", "jobs/s", K_VS_PG, 0.5, 0.15, 0.55},
    {"jobs-stream1", &wl_jobs_stream1, "jobs-stream1 credit 1", "jobs/s", K_VS_PG, 0.15, 0, 0},
    {"timers", NULL, "timers", "timers/s", K_VS_PG, 0.5, 0.15, 0.5},
};

static const row_spec *
find_spec(const char *key)
{
    for (size_t i = 0; i < sizeof row_specs / sizeof row_specs[0]; i++)
        if (strcmp(row_specs[i].key, key) == 0)
            return &row_specs[i];
    return NULL;
}

/* "0.06 yes": a ratio held to thr, or "-" without one. */
static void
bound_text(char *buf, size_t len, double thr, double ratio, int known)
{
    if (thr <= 0)
        snprintf(buf, len, "-");
    else if (!known)
        snprintf(buf, len, "%.3g ?", thr);
    else
        snprintf(buf, len, "%.3g %s", thr, ratio >= thr ? "yes" : "NO");
}

static const char *
status_text(const result *r)
{
    return r->status == RS_NA ? "n/a" : r->status == RS_SKIPPED ? "skipped" : "ERROR";
}

static void
print_table(FILE *o, row *rows, int nrows, double health, double ceiling)
{
    fprintf(o, "%-22s %12s %-9s %8s %8s %8s %7s %9s %-16s %-4s %-9s %s\n", "workload", "rate/value",
            "unit", "p50 ms", "p99 ms", "max ms", "errors", "ratio", "target", "met?", "floor C",
            "goal C");
    fprintf(o, "%-22s %12s %-9s %8s %8s %8s %7s %9s %-16s %-4s %-9s %s\n", "----------------------",
            "------------", "---------", "--------", "--------", "--------", "-------", "---------",
            "----------------", "----", "---------", "---------");
    for (int i = 0; i < nrows; i++) {
        row *w = &rows[i];
        result *r = &w->res;
        if (r->status != RS_OK) {
            char fl[24], gl[24];
            bound_text(fl, sizeof fl, w->floor, 0, 0);
            bound_text(gl, sizeof gl, w->goal, 0, 0);
            if (w->floor <= 0 && w->goal <= 0)
                fprintf(o, "%-22s %-75.199s %-16s %s\n", w->name, r->note, w->target,
                        status_text(r));
            else
                fprintf(o, "%-22s %-75.199s %-16s %-4s %-9s %s\n", w->name, r->note, w->target,
                        status_text(r), fl, gl);
            continue;
        }
        char val[32], p50[16] = "-", p99[16] = "-", mx[16] = "-", err[16] = "-", ratio[24] = "-";
        const char *met = "-";
        double v = r->units_per_s;
        switch (w->kind) {
        case K_MB:
            snprintf(val, sizeof val, "%.1f", r->value);
            break;
        case K_BYTES:
            snprintf(val, sizeof val, "%.0f", r->value);
            break;
        default:
            snprintf(val, sizeof val, "%.0f", v);
        }
        if (r->has_latency) {
            snprintf(p50, sizeof p50, "%.2f", r->p50_ms);
            snprintf(p99, sizeof p99, "%.2f", r->p99_ms);
            snprintf(mx, sizeof mx, "%.1f", r->max_ms);
        }
        if (w->kind != K_MB && w->kind != K_BYTES && w->kind != K_BASE_PG)
            snprintf(err, sizeof err, "%llu", (unsigned long long)r->ops_failed);
        switch (w->kind) {
        case K_BASE_HEALTH:
            snprintf(ratio, sizeof ratio, "1.00 H");
            met = "base";
            break;
        case K_BASE_PG:
            snprintf(ratio, sizeof ratio, "1.00 C");
            met = "base";
            break;
        case K_VS_HEALTH:
            if (health > 0) {
                snprintf(ratio, sizeof ratio, "%.2f H", v / health);
                met = v / health >= w->thr ? "yes" : "NO";
            }
            break;
        case K_VS_PG:
            if (ceiling > 0) {
                snprintf(ratio, sizeof ratio, "%.2f C", v / ceiling);
                met = w->thr <= 0 ? "-" : v / ceiling >= w->thr ? "yes" : "NO";
            }
            break;
        case K_P99:
            if (health > 0)
                snprintf(ratio, sizeof ratio, "%.2f H", v / health);
            met = r->p99_ms <= w->thr ? "yes" : "NO";
            break;
        case K_MB:
        case K_BYTES:
            met = r->value <= w->thr ? "yes" : "NO";
            break;
        case K_VS_REF:
            if (w->ref > 0) {
                snprintf(ratio, sizeof ratio, "%.2fx", v / w->ref);
                met = v / w->ref >= w->thr ? "yes" : "NO";
            }
            break;
        case K_HALF_P99:
            snprintf(val, sizeof val, "%.2f", r->p99_ms);
            met = r->p99_ms <= w->thr ? "yes" : "NO";
            break;
        }
        char fl[24], gl[24];
        int known = w->kind == K_VS_PG && ceiling > 0;
        bound_text(fl, sizeof fl, w->floor, known ? v / ceiling : 0, known);
        bound_text(gl, sizeof gl, w->goal, known ? v / ceiling : 0, known);
        if (w->floor <= 0 && w->goal <= 0)
            fprintf(o, "%-22s %12s %-9s %8s %8s %8s %7s %9s %-16s %s\n", w->name, val, w->unit, p50,
                    p99, mx, err, ratio, w->target, met);
        else
            fprintf(o, "%-22s %12s %-9s %8s %8s %8s %7s %9s %-16s %-4s %-9s %s\n", w->name, val,
                    w->unit, p50, p99, mx, err, ratio, w->target, met, fl, gl);
    }
}

/* A row of the table from its spec, named name. */
static void
spec_row(row *w, const row_spec *sp, const char *name)
{
    snprintf(w->name, sizeof w->name, "%s", name);
    w->unit = sp->unit;
    w->kind = sp->kind;
    w->thr = sp->target;
    if (sp->target <= 0)
        snprintf(w->target, sizeof w->target, "(no target)");
    else
        snprintf(w->target, sizeof w->target, ">= %.3g %s", sp->target,
                 sp->kind == K_VS_HEALTH ? "H" : "C");
    w->wl = sp->wl;
    w->half = sp->wl != NULL;
    w->floor = sp->floor;
    w->goal = sp->goal;
    w->key = sp->key;
}

static void
cost_cell(char *buf, size_t len, double v, const char *fmt)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, fmt, v);
}

/* The second table: what one unit of each row cost. */
static void
print_costs(FILE *o, const row *rows, int nrows)
{
    fprintf(o, "\ncost per unit: CPU microseconds of workflowd, Postgres (all its processes) and "
               "the load generator\n(pgbench for C) over the closed-loop run (timers: the "
               "drain); workflowd's own count of its calls'\nround trips, statements and "
               "transactions (/metrics); Postgres's commits (pg_stat_database, background\n"
               "included, sampled while the load runs)\n");
    fprintf(o, "%-22s %-8s %8s %8s %8s %8s %7s %7s %7s %7s\n", "workload", "per", "wfd us", "pg us",
            "gen us", "total us", "trips", "stmts", "txns", "commits");
    fprintf(o, "%-22s %-8s %8s %8s %8s %8s %7s %7s %7s %7s\n", "----------------------", "--------",
            "--------", "--------", "--------", "--------", "-------", "-------", "-------",
            "-------");
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        const cost *c = &w->res.cost;
        if (w->res.status != RS_OK || !c->has || w->kind == K_MB || w->kind == K_BYTES)
            continue; /* the soak's row is RSS, not a rate */
        char per[16], a[16], bb[16], g[16], t[16], rt[16], st[16], tx[16], cm[16];
        snprintf(per, sizeof per, "%.*s", (int)strcspn(w->unit, "/"), w->unit);
        cost_cell(a, sizeof a, c->srv_us, "%.0f");
        cost_cell(bb, sizeof bb, c->pg_us, "%.0f");
        cost_cell(g, sizeof g, c->gen_us, "%.0f");
        double tot = (c->srv_us > 0 ? c->srv_us : 0) + (c->pg_us > 0 ? c->pg_us : 0) +
                     (c->gen_us > 0 ? c->gen_us : 0);
        cost_cell(t, sizeof t, c->srv_us < 0 && c->pg_us < 0 ? -1 : tot, "%.0f");
        cost_cell(rt, sizeof rt, c->rt, "%.2f");
        cost_cell(st, sizeof st, c->stmts, "%.2f");
        cost_cell(tx, sizeof tx, c->txns, "%.2f");
        cost_cell(cm, sizeof cm, c->commits, "%.2f");
        fprintf(o, "%-22s %-8s %8s %8s %8s %8s %7s %7s %7s %7s\n", w->name, per, a, bb, g, t, rt,
                st, tx, cm);
    }
}

/* One line per row held to C: key, rate, C, rate / C. */
static void
write_summary(const char *path, const row *rows, int nrows, double ceiling)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "wfbench: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    for (int i = 0; i < nrows; i++) {
        const row *w = &rows[i];
        if (w->key == NULL || w->kind != K_VS_PG)
            continue;
        if (w->res.status == RS_OK && ceiling > 0)
            fprintf(f, "%s\t%.1f\t%.1f\t%.4f\n", w->key, w->res.units_per_s, ceiling,
                    w->res.units_per_s / ceiling);
        else
            fprintf(f, "%s\t-\t%.1f\t-\n", w->key, ceiling);
    }
    fclose(f);
}

/* ---- main -------------------------------------------------------------- */

static void
usage(FILE *o)
{
    fprintf(o, "usage: wfbench --target HOST:PORT [options] [WORKLOAD...]\n"
               "workloads (default: all): read start referral flow steps2 jobs jobs32\n"
               "  jobs-stream jobs-stream1 signal timers inbox fleet backlog rss bytes  (health\n"
               "  and the pgbench ceiling always run: they are the baselines)\n"
               "options:\n"
               "  --target HOST:PORT     workflowd to load (127.0.0.1 only, please)\n"
               "  --api-key KEY          x-api-key (default bench-key)\n"
               "  --actor ID             x-actor-id (default bench-user)\n"
               "  --actor-groups LIST    x-actor-groups (default benchers; the server needs\n"
               "                         WF_TRUST_ACTOR_GROUPS=true for the flow workload)\n"
               "  --dsn DSN              the server's Postgres (pgbench, inbox rows, timers,\n"
               "                         bytes per instance)\n"
               "  --pgbench-script FILE  the one-row-insert script (bench/insert.sql)\n"
               "  --server-pid PID       workflowd's pid (RSS, CPU per unit)\n"
               "  --pg-pid PID           the postmaster's pid (Postgres CPU per unit: it and\n"
               "                         its children)\n"
               "  --metrics HOST:PORT    workflowd's metrics endpoint (round trips, statements\n"
               "                         and transactions per unit)\n"
               "  --threads N            load threads (default 8)\n"
               "  --channels N           channels (one HTTP/2 connection each) that the load\n"
               "                         threads share round-robin (default: one per thread)\n"
               "  --duration S           seconds per workload (default 10)\n"
               "  --half-duration S      seconds per half-rate run (default duration/2)\n"
               "  --baseline-duration S  seconds per baseline run (default duration)\n"
               "  --no-half              no half-rate pass\n"
               "  --pool-seconds S       time to pre-build job/signal pools (default duration)\n"
               "  --pool-max N           pool size cap (default 200000)\n"
               "  --soak S               RSS soak seconds (default 30)\n"
               "  --inbox-rows N         open tasks in the table for inbox (default 250000)\n"
               "  --fleet-rows N         live instances of the definition of fleet (default\n"
               "                         100000)\n"
               "  --timers N             due timers to drain (default 10000)\n"
               "  --parked N             parked instances for bytes/instance (default 2000)\n"
               "  --backlog N            waiting jobs of the large backlog run; the small one\n"
               "                         has N/100 (default 100000)\n"
               "  --no-request-ids       send mutations without request_id\n"
               "  --label TEXT           a word for the header (quick, full)\n"
               "  --out FILE             also write the report there\n"
               "  --summary FILE         write one line per workload held to C there:\n"
               "                         name, rate, C, rate/C (tab-separated)\n");
}

static int
wanted(char **names, int n, const char *name)
{
    if (n == 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0 || strcmp(names[i], "all") == 0)
            return 1;
    return 0;
}

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wfbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* What the pgbench runs cost, summed over them: Postgres's CPU ticks and
 * pgbench's CPU seconds (a reaped child of this process). */
typedef struct pgbench_cost {
    cost_mark sum;
    long long ntx;
} pgbench_cost;

static double
pgbench_once(bench *b, double secs, result *res, double *lat, pgbench_cost *pc)
{
    char err[320];
    long long ntx = 0;
    cost_mark m0, m1;
    cost_mark_cpu(b, &m0);
    double tps = pg_pgbench(b, secs, lat, &ntx, err, sizeof err);
    cost_mark_cpu(b, &m1);
    if (tps < 0) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "%s", err);
        return 0;
    }
    if (m0.pg_ticks >= 0 && m1.pg_ticks >= m0.pg_ticks && pc->sum.pg_ticks >= 0)
        pc->sum.pg_ticks += m1.pg_ticks - m0.pg_ticks;
    else
        pc->sum.pg_ticks = -1;
    pc->sum.child_s += m1.child_s - m0.child_s;
    pc->ntx += ntx;
    return tps;
}

int
main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.api_key = "bench-key";
    b.actor = "bench-user";
    b.actor_groups = "benchers";
    b.nthreads = 8;
    b.duration_s = 10;
    b.half_duration_s = 0;
    b.pool_s = 0;
    b.pool_max = 200000;
    b.soak_s = 30;
    b.inbox_rows = 250000;
    b.fleet_rows = 100000;
    b.timers = 10000;
    b.parked = 2000;
    b.backlog = 100000;
    b.use_request_ids = 1;
    const char *out_path = NULL, *summary_path = NULL, *label = "";
    int nchannels = 0; /* 0: one per load thread */

    enum {
        O_TARGET = 1,
        O_KEY,
        O_ACTOR,
        O_GROUPS,
        O_DSN,
        O_SCRIPT,
        O_PID,
        O_THREADS,
        O_DUR,
        O_HALF,
        O_POOLS,
        O_POOLMAX,
        O_SOAK,
        O_INBOX,
        O_FLEET,
        O_TIMERS,
        O_PARKED,
        O_BACKLOG,
        O_NORID,
        O_LABEL,
        O_OUT,
        O_CHANNELS,
        O_PGPID,
        O_METRICS,
        O_BASE,
        O_NOHALF,
        O_SUMMARY,
        O_HELP
    };
    static const struct option opts[] = {
        {"target", required_argument, NULL, O_TARGET},
        {"api-key", required_argument, NULL, O_KEY},
        {"actor", required_argument, NULL, O_ACTOR},
        {"actor-groups", required_argument, NULL, O_GROUPS},
        {"dsn", required_argument, NULL, O_DSN},
        {"pgbench-script", required_argument, NULL, O_SCRIPT},
        {"server-pid", required_argument, NULL, O_PID},
        {"threads", required_argument, NULL, O_THREADS},
        {"duration", required_argument, NULL, O_DUR},
        {"half-duration", required_argument, NULL, O_HALF},
        {"pool-seconds", required_argument, NULL, O_POOLS},
        {"pool-max", required_argument, NULL, O_POOLMAX},
        {"soak", required_argument, NULL, O_SOAK},
        {"inbox-rows", required_argument, NULL, O_INBOX},
        {"fleet-rows", required_argument, NULL, O_FLEET},
        {"timers", required_argument, NULL, O_TIMERS},
        {"parked", required_argument, NULL, O_PARKED},
        {"backlog", required_argument, NULL, O_BACKLOG},
        {"no-request-ids", no_argument, NULL, O_NORID},
        {"label", required_argument, NULL, O_LABEL},
        {"out", required_argument, NULL, O_OUT},
        {"channels", required_argument, NULL, O_CHANNELS},
        {"pg-pid", required_argument, NULL, O_PGPID},
        {"metrics", required_argument, NULL, O_METRICS},
        {"baseline-duration", required_argument, NULL, O_BASE},
        {"no-half", no_argument, NULL, O_NOHALF},
        {"summary", required_argument, NULL, O_SUMMARY},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_TARGET:
            b.target = optarg;
            break;
        case O_KEY:
            b.api_key = optarg[0] ? optarg : NULL;
            break;
        case O_ACTOR:
            b.actor = optarg;
            break;
        case O_GROUPS:
            b.actor_groups = optarg;
            break;
        case O_DSN:
            b.dsn = optarg;
            break;
        case O_SCRIPT:
            b.pgbench_script = optarg;
            break;
        case O_PID:
            b.server_pid = atoi(optarg);
            break;
        case O_THREADS:
            b.nthreads = atoi(optarg);
            break;
        case O_DUR:
            b.duration_s = atof(optarg);
            break;
        case O_HALF:
            b.half_duration_s = atof(optarg);
            break;
        case O_POOLS:
            b.pool_s = atof(optarg);
            break;
        case O_POOLMAX:
            b.pool_max = strtoull(optarg, NULL, 10);
            break;
        case O_SOAK:
            b.soak_s = atof(optarg);
            break;
        case O_INBOX:
            b.inbox_rows = atol(optarg);
            break;
        case O_FLEET:
            b.fleet_rows = atol(optarg);
            break;
        case O_TIMERS:
            b.timers = atol(optarg);
            break;
        case O_PARKED:
            b.parked = atol(optarg);
            break;
        case O_BACKLOG:
            b.backlog = atol(optarg);
            break;
        case O_NORID:
            b.use_request_ids = 0;
            break;
        case O_LABEL:
            label = optarg;
            break;
        case O_OUT:
            out_path = optarg;
            break;
        case O_CHANNELS:
            nchannels = atoi(optarg);
            break;
        case O_PGPID:
            b.pg_pid = atoi(optarg);
            break;
        case O_METRICS:
            b.metrics = optarg;
            break;
        case O_BASE:
            b.base_s = atof(optarg);
            break;
        case O_NOHALF:
            b.no_half = 1;
            break;
        case O_SUMMARY:
            summary_path = optarg;
            break;
        case O_HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (nchannels == 0)
        nchannels = b.nthreads;
    if (b.target == NULL || b.nthreads < 1 || b.nthreads > 256 || nchannels < 1 ||
        nchannels > b.nthreads || b.duration_s <= 0 || b.duration_s > 3600 || b.soak_s < 0 ||
        b.soak_s > 7200 || b.inbox_rows < 1 || b.fleet_rows < 1 || b.timers < 1 || b.parked < 1 ||
        b.backlog < 1) {
        usage(stderr);
        return 2;
    }
    if (b.half_duration_s <= 0)
        b.half_duration_s = b.duration_s / 2 < 3 ? 3 : b.duration_s / 2;
    if (b.pool_s <= 0)
        b.pool_s = b.duration_s;
    if (b.base_s <= 0 || b.base_s > 3600)
        b.base_s = b.duration_s;
    char **names = argv + optind;
    int nnames = argc - optind;
    static const char *const known[] = {
        "all",  "health", "read",        "start",        "referral", "flow",  "steps2",
        "jobs", "jobs32", "signal",      "timers",       "inbox",    "fleet", "backlog",
        "rss",  "bytes",  "jobs-stream", "jobs-stream1", "batch"};
    for (int i = 0; i < nnames; i++) {
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= strcmp(names[i], known[k]) == 0;
        if (!ok) {
            fprintf(stderr, "wfbench: unknown workload %s\n", names[i]);
            return 2;
        }
    }
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(b.run_id, sizeof b.run_id, "%08lx",
                 (unsigned long)((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 12) ^
                                 (unsigned long)getpid()) &
                     0xffffffffUL);
    }

    wf_client_options co;
    memset(&co, 0, sizeof co);
    co.target = b.target;
    co.api_key = b.api_key;
    co.actor = b.actor;
    co.actor_groups = b.actor_groups;
    co.timeout_ms = 10000;
    co.wait_for_ready = 1;
    /* Load thread i calls through channel i % nchannels; set-up has its own. */
    wf_client **channels = calloc((size_t)nchannels + 1, sizeof(wf_client *));
    b.clients = calloc((size_t)b.nthreads + 1, sizeof(wf_client *));
    if (channels == NULL || b.clients == NULL)
        return 1;
    for (int i = 0; i <= nchannels; i++)
        channels[i] = wf_client_new(&co);
    for (int i = 0; i < b.nthreads; i++)
        b.clients[i] = channels[i % nchannels];
    b.clients[b.nthreads] = channels[nchannels];
    b.setup_client = b.clients[b.nthreads];

    /* Wait (bounded) until the server answers SERVING. */
    {
        run *r0 = calloc(1, sizeof *r0);
        if (r0 == NULL)
            return 1;
        r0->b = &b;
        worker w;
        setup_worker_init(&w, r0);
        w.run = NULL;
        int ready = 0;
        for (int i = 0; i < 600 && !ready; i++) {
            Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
            ProtobufCMessage *resp = NULL;
            if (bcall(&w, M_HEALTH, &req.base, &grpc__health__v1__health_check_response__descriptor,
                      &resp, 1000) == 0) {
                ready = ((Grpc__Health__V1__HealthCheckResponse *)resp)->status ==
                        GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
                protobuf_c_message_free_unpacked(resp, NULL);
            }
            if (!ready)
                sleep_s(0.1);
        }
        setup_worker_free(&w);
        free(r0);
        if (!ready) {
            fprintf(stderr, "wfbench: %s is not SERVING after 60 s (%s)\n", b.target, w.last_err);
            return 1;
        }
    }

    row *rows = calloc(40, sizeof(row));
    int nrows = 0;
    if (rows == NULL)
        return 1;
#define ROW(nm, un, kd, th, tg, wlp, hf)                                                           \
    do {                                                                                           \
        row *rw_ = &rows[nrows++];                                                                 \
        snprintf(rw_->name, sizeof rw_->name, "%s", nm);                                           \
        rw_->unit = un;                                                                            \
        rw_->kind = kd;                                                                            \
        rw_->thr = th;                                                                             \
        snprintf(rw_->target, sizeof rw_->target, "%s", tg);                                       \
        rw_->wl = wlp;                                                                             \
        rw_->half = hf;                                                                            \
    } while (0)

    double t_start = bench_now();
    /* Idle RSS of the fresh server, after it settled. */
    sleep_s(1.0);
    long rss_idle0 = proc_rss_kb(b.server_pid);

    /* Baselines before. */
    static result pg_before, pg_after, h_before, h_after;
    double lat_b = 0, lat_a = 0;
    progress("baseline: pgbench one-row insert per transaction, %.0f s", b.base_s);
    pgbench_cost pgc;
    memset(&pgc, 0, sizeof pgc);
    double tps_b = pgbench_once(&b, b.base_s, &pg_before, &lat_b, &pgc);
    progress("baseline: Health/Check, %.0f s", b.base_s);
    run_workload(&b, &wl_health, 0, b.base_s, 0, &h_before, NULL);

    int health_row = nrows;
    ROW("health", "calls/s", K_BASE_HEALTH, 0, "baseline H", &wl_health, 1);
    rows[health_row].key = "health";
    int pg_row = nrows;
    ROW("pgbench insert/txn", "txn/s", K_BASE_PG, 0, "baseline C", NULL, 0);
    for (size_t i = 0; i < sizeof row_specs / sizeof row_specs[0]; i++) {
        const row_spec *sp = &row_specs[i];
        if (sp->wl == NULL || !wanted(names, nnames, sp->key))
            continue;
        int idx = nrows;
        spec_row(&rows[nrows++], sp, sp->name);
        progress("workload %s, %.0f s", sp->key, b.duration_s);
        run_workload(&b, sp->wl, 0, b.duration_s, 0, &rows[idx].res, NULL);
        if (sp->wl == &wl_steps2)
            bench_steps2_check(&b, &rows[idx].res);
    }
    if (wanted(names, nnames, "timers")) {
        int idx = nrows;
        char nm[40];
        if (b.timers >= 1000)
            snprintf(nm, sizeof nm, "timers (%ldk due)", b.timers / 1000);
        else
            snprintf(nm, sizeof nm, "timers (%ld due)", b.timers);
        spec_row(&rows[nrows++], find_spec("timers"), nm);
        if (b.timers < 100000)
            snprintf(rows[idx].target, sizeof rows[idx].target, ">= %.3g C at 100k", rows[idx].thr);
        progress("workload timers (%ld due timers)", b.timers);
        bench_timers(&b, &rows[idx].res);
        if (b.timers < 100000 && rows[idx].res.status == RS_OK) {
            size_t l = strlen(rows[idx].res.note);
            snprintf(rows[idx].res.note + l, sizeof rows[idx].res.note - l,
                     "; the target is for 100k due timers (--full, or --timers 100000)");
        }
    }
    if (wanted(names, nnames, "batch")) {
        int idx = nrows;
        char nm[40];
        if (b.timers >= 1000)
            snprintf(nm, sizeof nm, "batch suspend (%ldk)", b.timers / 1000);
        else
            snprintf(nm, sizeof nm, "batch suspend (%ld)", b.timers);
        ROW(nm, "inst/s", K_VS_PG, 0, "- (informative)", NULL, 0);
        progress("workload batch (a SUSPEND of %ld instances)", b.timers);
        bench_batch(&b, &rows[idx].res);
    }
    if (wanted(names, nnames, "inbox")) {
        int idx = nrows;
        char nm[40];
        if (b.inbox_rows >= 1000)
            snprintf(nm, sizeof nm, "inbox (%ldk open)", b.inbox_rows / 1000);
        else
            snprintf(nm, sizeof nm, "inbox (%ld open)", b.inbox_rows);
        ROW(nm, "calls/s", K_P99, 5.0, "p99 <= 5 ms", &wl_inbox, 1);
        progress("workload inbox, %.0f s (+ row setup)", b.duration_s);
        run_workload(&b, &wl_inbox, 0, b.duration_s, 0, &rows[idx].res, NULL);
    }
    if (wanted(names, nnames, "fleet")) {
        int idx = nrows;
        char nm[40];
        snprintf(nm, sizeof nm, "fleet (%ldk live)", b.fleet_rows / 1000);
        ROW(nm, "calls/s", K_P99, 250.0, "p99 <= 250 ms", &wl_fleet, 1);
        progress("workload fleet, %.0f s (+ row setup)", b.duration_s);
        run_workload(&b, &wl_fleet, 0, b.duration_s, 0, &rows[idx].res, NULL);
    }
    if (wanted(names, nnames, "backlog")) {
        /* The same job type twice: b.backlog / 100 waiting jobs, then topped
         * up to b.backlog; each run keeps its backlog's size. */
        long small = b.backlog / 100 > 0 ? b.backlog / 100 : 1;
        char nm[40];
        int sidx = nrows;
        snprintf(nm, sizeof nm, "backlog %ld%s waiting", small >= 1000 ? small / 1000 : small,
                 small >= 1000 ? "k" : "");
        ROW(nm, "jobs/s", K_VS_PG, 0, "(base of next)", &wl_backlog_small, 0);
        progress("workload backlog: jobs with %ld waiting, %.0f s (+ backlog setup)", small,
                 b.duration_s);
        run_workload(&b, &wl_backlog_small, 0, b.duration_s, 0, &rows[sidx].res, NULL);
        int lidx = nrows;
        snprintf(nm, sizeof nm, "backlog %ld%s waiting",
                 b.backlog >= 1000 ? b.backlog / 1000 : b.backlog, b.backlog >= 1000 ? "k" : "");
        ROW(nm, "jobs/s", K_VS_REF, 0.8, ">= 0.8x previous", &wl_backlog_large, 0);
        progress("workload backlog: jobs with %ld waiting, %.0f s (+ backlog setup)", b.backlog,
                 b.duration_s);
        run_workload(&b, &wl_backlog_large, 0, b.duration_s, 0, &rows[lidx].res, NULL);
        long large = bench_backlog_size();
        if (large > 0 && large < b.backlog) { /* the setup ran out of time */
            snprintf(rows[lidx].name, sizeof rows[lidx].name, "backlog %ld%s waiting",
                     large >= 1000 ? large / 1000 : large, large >= 1000 ? "k" : "");
            size_t l = strlen(rows[lidx].res.note);
            snprintf(rows[lidx].res.note + l, sizeof rows[lidx].res.note - l,
                     "%sonly %ld of %ld waiting jobs made in the setup's %.0f s", l ? "; " : "",
                     large, b.backlog, bench_backlog_budget(&b));
        }
        if (rows[sidx].res.status == RS_OK) {
            rows[lidx].ref = rows[sidx].res.units_per_s;
            size_t l = strlen(rows[sidx].res.note);
            snprintf(rows[sidx].res.note + l, sizeof rows[sidx].res.note - l,
                     "%sone job type; one StartInstance per job keeps the backlog's size; no "
                     "auto-ANALYZE of jobs during both runs",
                     l ? "; " : "");
        }
    }

    /* Baselines after. */
    progress("baseline again: Health/Check, %.0f s", b.base_s);
    run_workload(&b, &wl_health, 0, b.base_s, 0, &h_after, NULL);
    progress("baseline again: pgbench, %.0f s", b.base_s);
    double tps_a = pgbench_once(&b, b.base_s, &pg_after, &lat_a, &pgc);

    double health = 0, ceiling = 0;
    {
        int nh = (h_before.status == RS_OK) + (h_after.status == RS_OK);
        health = nh ? ((h_before.status == RS_OK ? h_before.units_per_s : 0) +
                       (h_after.status == RS_OK ? h_after.units_per_s : 0)) /
                          nh
                    : 0;
        int np = (tps_b > 0) + (tps_a > 0);
        ceiling = np ? (tps_b + tps_a) / np : 0;
        rows[health_row].res = h_before.status == RS_OK ? h_before : h_after;
        rows[health_row].res.units_per_s = health;
        rows[pg_row].res.status = ceiling > 0 ? RS_OK : RS_ERROR;
        if (ceiling <= 0)
            snprintf(rows[pg_row].res.note, sizeof rows[pg_row].res.note, "%s",
                     pg_before.note[0] ? pg_before.note : "pgbench did not run");
        rows[pg_row].res.units_per_s = ceiling;
        /* C's cost: Postgres per transaction, and pgbench in the load
         * generator's column; no workflowd. */
        cost *pc = &rows[pg_row].res.cost;
        cost_mark zero;
        memset(&zero, 0, sizeof zero);
        zero.srv_ticks = zero.rt = zero.stmts = zero.txns = -1;
        pgc.sum.srv_ticks = pgc.sum.rt = pgc.sum.stmts = pgc.sum.txns = -1;
        pgc.sum.gen_s = pgc.sum.child_s;
        if (pgc.ntx > 0)
            cost_per_unit(&zero, &pgc.sum, (uint64_t)pgc.ntx, NULL, pc);
    }

    /* p99 at half the measured maximum rate. */
    typedef struct half {
        char name[40];
        double rate;
        result res;
    } half;
    half *halves = calloc(16, sizeof(half));
    int nhalf = 0;
    static hist half_m[M_COUNT], max_m[M_COUNT];
    if (halves == NULL)
        return 1;
    for (int i = 0; i < nrows; i++) {
        row *w = &rows[i];
        if (w->wl == NULL || w->res.status != RS_OK)
            continue;
        for (int m = 0; m < M_COUNT; m++)
            hist_merge(&max_m[m], &w->res.m_hist[m]);
        if (!w->half || b.no_half)
            continue;
        double rate = (w == &rows[health_row] ? health : w->res.ops_per_s) / 2;
        if (rate <= 0)
            continue;
        half *h = &halves[nhalf++];
        snprintf(h->name, sizeof h->name, "%s", w->name);
        h->rate = rate;
        progress("half rate: %s, %.0f s", w->wl->name, b.half_duration_s);
        double pool_s = b.pool_s;
        b.pool_s = b.half_duration_s; /* half the rate needs about half the pool */
        run_workload(&b, w->wl, rate, b.half_duration_s, 0, &h->res, NULL);
        b.pool_s = pool_s;
        for (int m = 0; m < M_COUNT; m++)
            hist_merge(&half_m[m], &h->res.m_hist[m]);
    }

    /* RSS: soak, then idle again. */
    double soak_growth_mb = 0;
    if (wanted(names, nnames, "rss")) {
        int idx = nrows;
        ROW("rss idle (fresh)", "MB", K_MB, 20, "<= 20 MB", NULL, 0);
        if (rss_idle0 > 0) {
            rows[idx].res.value = (double)rss_idle0 / 1024.0;
        } else {
            rows[idx].res.status = RS_SKIPPED;
            snprintf(rows[idx].res.note, sizeof rows[idx].res.note, "needs --server-pid");
        }
        int sidx = nrows;
        char nm[40];
        snprintf(nm, sizeof nm, "rss soak growth (%.0fs)", b.soak_s);
        ROW(nm, "MB", K_MB, 1.0, "<= 1 MB (none)", NULL, 0);
        /* Throughput of the soak's last window against its first: a minute
         * each, or a fifth of a shorter soak. */
        int win = b.soak_s >= 300 ? 60 : (int)(b.soak_s / 5) > 1 ? (int)(b.soak_s / 5) : 1;
        int tidx = nrows;
        if (win == 60)
            snprintf(nm, sizeof nm, "soak last/first min");
        else
            snprintf(nm, sizeof nm, "soak last/first %ds", win);
        ROW(nm, "inst/s", K_VS_REF, 0.8, ">= 0.8x first", NULL, 0);
        rows[tidx].res.status = RS_SKIPPED;
        snprintf(rows[tidx].res.note, sizeof rows[tidx].res.note,
                 "needs --server-pid and --soak > 0");
        if (b.server_pid > 0 && b.soak_s > 0) {
            progress("soak %.0f s (RSS every second)", b.soak_s);
            run *sr = NULL;
            result *res = &rows[sidx].res;
            run_workload(&b, &wl_soak, 0, b.soak_s, 1, res, &sr);
            if (res->status == RS_OK && sr != NULL && sr->nrss >= 4) {
                int q = sr->nrss / 4;
                long at_q = sr->rss_kb[q], last = sr->rss_kb[sr->nrss - 1], mx = 0;
                for (int k = 0; k < sr->nrss; k++)
                    if (sr->rss_kb[k] > mx)
                        mx = sr->rss_kb[k];
                soak_growth_mb = (double)(last - at_q) / 1024.0;
                res->value = soak_growth_mb;
                snprintf(res->note, sizeof res->note,
                         "RSS %.1f MB at start, %.1f MB at 25%%, %.1f MB at end, max %.1f MB; "
                         "%.0f inst/s, %llu failed",
                         (double)sr->rss_kb[0] / 1024, (double)at_q / 1024, (double)last / 1024,
                         (double)mx / 1024, res->units_per_s, (unsigned long long)res->ops_failed);
                res->has_latency = 0;
                /* Samples 0..nrss-2 are one second apart (the last one is
                 * at the end of the run). */
                int lw = sr->nrss - 2;
                result *tr = &rows[tidx].res;
                if (lw >= 2 * win) {
                    double first = (double)(sr->units_s[win] - sr->units_s[0]) / win;
                    double lastr = (double)(sr->units_s[lw] - sr->units_s[lw - win]) / win;
                    memset(tr, 0, sizeof *tr);
                    tr->units_per_s = lastr;
                    rows[tidx].ref = first;
                    snprintf(tr->note, sizeof tr->note,
                             "%.0f inst/s in the first %d s, %.0f in the last (s %d-%d)", first,
                             win, lastr, lw - win, lw);
                } else {
                    snprintf(tr->note, sizeof tr->note, "soak too short for two %d s windows", win);
                }
            } else if (res->status == RS_OK) {
                res->status = RS_ERROR;
                snprintf(res->note, sizeof res->note, "too few RSS samples");
            }
            free(sr);
        } else {
            rows[sidx].res.status = RS_SKIPPED;
            snprintf(rows[sidx].res.note, sizeof rows[sidx].res.note,
                     "needs --server-pid and --soak > 0");
        }
        int aidx = nrows;
        ROW("rss idle (after load)", "MB", K_MB, 1e9, "(info)", NULL, 0);
        sleep_s(2.0);
        long rss_after = proc_rss_kb(b.server_pid);
        if (rss_after > 0) {
            rows[aidx].res.value = (double)rss_after / 1024.0;
        } else {
            rows[aidx].res.status = RS_SKIPPED;
            snprintf(rows[aidx].res.note, sizeof rows[aidx].res.note, "needs --server-pid");
        }
    }
    if (wanted(names, nnames, "bytes")) {
        int idx = nrows;
        ROW("bytes/parked ad-hoc", "B/inst", K_BYTES, 2048, "<= 2 KB", NULL, 0);
        progress("bytes per parked instance (ad-hoc), %ld instances", b.parked);
        bench_bytes(&b, 0, &rows[idx].res);
        idx = nrows;
        ROW("bytes/parked net(MSG)", "B/inst", K_BYTES, 2048, "<= 2 KB", NULL, 0);
        progress("bytes per parked instance (net), %ld instances", b.parked);
        bench_bytes(&b, 1, &rows[idx].res);
    }
    if (nhalf > 0) {
        /* The latency target, per RPC of the half-rate runs. */
        int idx = nrows;
        ROW("p99 @ half, worst RPC", "ms", K_HALF_P99, 10.0, "<= 10 ms each", NULL, 0);
        result *res = &rows[idx].res;
        char over[200] = "";
        int nover = 0, nrpc = 0;
        for (int m = 0; m < M_COUNT; m++) {
            if (half_m[m].n == 0)
                continue;
            nrpc++;
            double p = hist_pct_ms(&half_m[m], 99);
            if (p > res->p99_ms)
                res->p99_ms = p;
            if (p > 10.0) {
                size_t l = strlen(over);
                snprintf(over + l, sizeof over - l, "%s%s %.1f", nover++ ? ", " : "",
                         bench_method_name[m], p);
            }
        }
        snprintf(res->note, sizeof res->note, "%d of %d RPCs over 10 ms at half rate%s%s", nover,
                 nrpc, nover ? ": " : "", over);
    }
    double total = bench_now() - t_start;

    /* ---- the report ---- */
    char *buf = NULL;
    size_t buflen = 0;
    FILE *o = open_memstream(&buf, &buflen);
    if (o == NULL)
        return 1;
    fprintf(o,
            "wfbench%s%s: target %s, %d threads on %d channel%s, %.0f s per workload, "
            "run %s, %.0f s in all\n",
            label[0] ? " " : "", label, b.target, b.nthreads, nchannels, nchannels == 1 ? "" : "s",
            b.duration_s, b.run_id, total);
    fprintf(o,
            "baseline H (Health/Check on the same server): %.0f calls/s (before %.0f, after "
            "%.0f)\n",
            health, h_before.units_per_s, h_after.units_per_s);
    fprintf(o,
            "baseline C (commit ceiling: pgbench -M prepared -c %d -j 2, one-row INSERT per "
            "transaction, same Postgres): %.0f txn/s (before %.0f, after %.0f; avg latency "
            "%.2f / %.2f ms)\n",
            b.nthreads, ceiling, tps_b, tps_a, lat_b, lat_a);
    fprintf(o, "ratios: rate / H or rate / C, using the mean of the before and after "
               "baselines\n\n");
    print_table(o, rows, nrows, health, ceiling);
    print_costs(o, rows, nrows);

    if (nhalf > 0) {
        fprintf(o, "\np99 at half the measured maximum rate (target <= 10 ms). p50/p99/max count "
                   "from the scheduled start of each\noperation, so queueing in the server or in "
                   "the load generator shows; 'p99 sent' counts from the send.\n");
        fprintf(o, "%-22s %10s %10s %8s %8s %8s %9s %7s %s\n", "workload", "asked/s", "done/s",
                "p50 ms", "p99 ms", "max ms", "p99 sent", "errors", "met?");
    }
    for (int i = 0; i < nhalf; i++) {
        half *h = &halves[i];
        if (h->res.status != RS_OK) {
            fprintf(o, "%-22s %10.0f %-40s %s\n", h->name, h->rate, h->res.note,
                    status_text(&h->res));
            continue;
        }
        fprintf(o, "%-22s %10.0f %10.0f %8.2f %8.2f %8.1f %9.2f %7llu %s\n", h->name, h->rate,
                h->res.ops_per_s, h->res.p50_ms, h->res.p99_ms, h->res.max_ms, h->res.p99_svc_ms,
                (unsigned long long)h->res.ops_failed,
                h->res.p99_ms <= 10.0       ? "yes"
                : h->res.p99_svc_ms <= 10.0 ? "NO (sent: yes)"
                                            : "NO");
    }
    fprintf(o, "\nper RPC (every call of the runs above; at max = the closed-loop runs, at half "
               "= the half-rate runs)\n");
    fprintf(o, "%-18s %9s %8s %8s %9s %8s %8s %s\n", "rpc", "calls@max", "p50 ms", "p99 ms",
            "calls@1/2", "p50 ms", "p99 ms", "p99<=10ms?");
    for (int m = 0; m < M_COUNT; m++) {
        if (max_m[m].n == 0 && half_m[m].n == 0)
            continue;
        fprintf(o, "%-18s %9llu %8.2f %8.2f %9llu %8.2f %8.2f %s\n", bench_method_name[m],
                (unsigned long long)max_m[m].n, hist_pct_ms(&max_m[m], 50),
                hist_pct_ms(&max_m[m], 99), (unsigned long long)half_m[m].n,
                hist_pct_ms(&half_m[m], 50), hist_pct_ms(&half_m[m], 99),
                half_m[m].n == 0                      ? "-"
                : hist_pct_ms(&half_m[m], 99) <= 10.0 ? "yes"
                                                      : "NO");
    }

    fprintf(o, "\nnotes\n");
    for (int i = 0; i < nrows; i++)
        if (rows[i].res.status == RS_OK && rows[i].res.note[0] != '\0')
            fprintf(o, "  %-22s %s\n", rows[i].name, rows[i].res.note);
    for (int i = 0; i < nhalf; i++)
        if (halves[i].res.status == RS_OK && halves[i].res.note[0] != '\0')
            fprintf(o, "  %-22s (half rate) %s\n", halves[i].name, halves[i].res.note);
    fprintf(o, "  H = health baseline, C = commit ceiling; latency of multi-RPC workloads is the "
               "whole operation\n");
    fclose(o);
    fputs(buf, stdout);
    fflush(stdout);
    if (out_path != NULL) {
        FILE *f = fopen(out_path, "w");
        if (f != NULL) {
            fputs(buf, f);
            fclose(f);
        } else {
            fprintf(stderr, "wfbench: cannot write %s: %s\n", out_path, strerror(errno));
        }
    }
    free(buf);
    if (summary_path != NULL)
        write_summary(summary_path, rows, nrows, ceiling);
    free(rows);
    free(halves);
    for (int i = 0; i <= nchannels; i++)
        wf_client_free(channels[i]);
    free(channels);
    free(b.clients);
    (void)soak_growth_mb;
    return 0;
}
