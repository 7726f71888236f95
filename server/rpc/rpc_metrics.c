/*
 * rpc_metrics: per-method counters and latency histograms, and the cached
 * backlog gauges of the store, rendered in the Prometheus text exposition
 * format.
 */
#include "rpc_metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "wf_bulkhead.h"
#include "wf_time.h"

#define NCODES 17

/* Histogram bounds in seconds, from sub-millisecond RPCs to long polls. */
static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

static const char *const code_names[NCODES] = {
    "OK",       "Canceled",        "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",   "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",      "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated",
};

struct method_counters {
    char service[96];
    char method[64];
    const char *type; /* "unary", "server_stream" or "bidi_stream" */
    atomic_ullong started;
    atomic_ullong handled[NCODES];
    atomic_ullong buckets[NBOUNDS + 1]; /* the last is +Inf */
    atomic_ullong sum_us;
};

struct wf_rpc_metrics {
    size_t n; /* methods + the unknown slot */
    struct method_counters *m;
    atomic_int queued;     /* calls handed to the pool, not yet taken by a thread */
    atomic_ullong refused; /* calls refused OVERLOADED */
};

wf_rpc_metrics *
wf_rpc_metrics_new(const wf_rpc_method *methods, size_t n)
{
    wf_rpc_metrics *mx = calloc(1, sizeof *mx);
    if (mx == NULL)
        return NULL;
    mx->n = n + 1;
    mx->m = calloc(mx->n, sizeof *mx->m);
    if (mx->m == NULL) {
        free(mx);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        /* "/pkg.Service/Method" → service and method labels. */
        const char *path = methods[i].path + 1;
        const char *slash = strchr(path, '/');
        size_t sl = slash != NULL ? (size_t)(slash - path) : strlen(path);
        snprintf(mx->m[i].service, sizeof mx->m[i].service, "%.*s", (int)sl, path);
        snprintf(mx->m[i].method, sizeof mx->m[i].method, "%s", slash != NULL ? slash + 1 : "");
        /* The proto's kind of method, not how it is served: ActivateJobs
         * runs on stream ops but is unary. */
        if (methods[i].kind == WF_RPC_REFLECTION)
            mx->m[i].type = "bidi_stream";
        else if (methods[i].kind == WF_RPC_HEALTH_WATCH ||
                 (methods[i].route != NULL && (methods[i].route->flags & WF_ROUTE_STREAM)))
            mx->m[i].type = "server_stream";
        else
            mx->m[i].type = "unary";
    }
    snprintf(mx->m[n].service, sizeof mx->m[n].service, "unknown");
    snprintf(mx->m[n].method, sizeof mx->m[n].method, "unknown");
    mx->m[n].type = "unary";
    return mx;
}

void
wf_rpc_metrics_free(wf_rpc_metrics *m)
{
    if (m == NULL)
        return;
    free(m->m);
    free(m);
}

void
wf_rpc_metrics_started(wf_rpc_metrics *m, size_t i)
{
    if (m == NULL || i >= m->n)
        return;
    atomic_fetch_add_explicit(&m->m[i].started, 1, memory_order_relaxed);
}

void
wf_rpc_metrics_handled(wf_rpc_metrics *m, size_t i, grpc_status_code code, double seconds)
{
    if (m == NULL || i >= m->n)
        return;
    struct method_counters *c = &m->m[i];
    if ((int)code < 0 || (int)code >= NCODES)
        code = GRPC_STATUS_UNKNOWN;
    atomic_fetch_add_explicit(&c->handled[code], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < NBOUNDS && seconds > bounds[b])
        b++;
    atomic_fetch_add_explicit(&c->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->sum_us, (unsigned long long)(seconds * 1e6),
                              memory_order_relaxed);
}

int
wf_rpc_metrics_enqueue(wf_rpc_metrics *m)
{
    return atomic_fetch_add_explicit(&m->queued, 1, memory_order_relaxed);
}

void
wf_rpc_metrics_dequeue(wf_rpc_metrics *m)
{
    atomic_fetch_sub_explicit(&m->queued, 1, memory_order_relaxed);
}

void
wf_rpc_metrics_refused(wf_rpc_metrics *m)
{
    atomic_fetch_add_explicit(&m->refused, 1, memory_order_relaxed);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* ---- process_* (the names every Prometheus client library exports) ---------------- */

/* Field k (1-based, after the command in parentheses) of /proc/self/stat. */
static bool
proc_stat_field(int k, unsigned long long *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    if (p == NULL)
        return false;
    p++; /* now at the space before field 3 */
    for (int i = 3; i < k; i++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return false;
    }
    return sscanf(p, " %llu", out) == 1;
}

static bool
boot_time(unsigned long long *out)
{
    char line[256];
    bool ok = false;
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return false;
    while (!ok && fgets(line, sizeof line, f) != NULL)
        ok = sscanf(line, "btime %llu", out) == 1;
    fclose(f);
    return ok;
}

static long
open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static void
render_process(FILE *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(
            out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total %.6f\n",
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long vsize, rss_pages;
    if (proc_stat_field(23, &vsize) && proc_stat_field(24, &rss_pages))
        fprintf(out,
                "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                "# TYPE process_virtual_memory_bytes gauge\n"
                "process_virtual_memory_bytes %llu\n"
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                "# TYPE process_resident_memory_bytes gauge\n"
                "process_resident_memory_bytes %llu\n",
                vsize, rss_pages * (unsigned long long)page);
    long fds = open_fds();
    if (fds >= 0)
        fprintf(out,
                "# HELP process_open_fds Number of open file descriptors.\n"
                "# TYPE process_open_fds gauge\n"
                "process_open_fds %ld\n",
                fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        fprintf(out,
                "# HELP process_max_fds Maximum number of open file descriptors.\n"
                "# TYPE process_max_fds gauge\n"
                "process_max_fds %llu\n",
                (unsigned long long)rl.rlim_cur);
    unsigned long long start_ticks, btime;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz > 0 && proc_stat_field(22, &start_ticks) && boot_time(&btime))
        fprintf(out,
                "# HELP process_start_time_seconds Start time of the process since unix epoch in "
                "seconds.\n"
                "# TYPE process_start_time_seconds gauge\n"
                "process_start_time_seconds %.2f\n",
                (double)btime + (double)start_ticks / (double)hz);
}

/* The bulkheads' families (core/wf_bulkhead.h), one series per class. */
static void
render_bulkheads(FILE *out)
{
    static const struct {
        const char *name, *type, *help;
    } families[] = {
        {"workflow_bulkhead_limit", "gauge",
         "Calls a bulkhead lets do its expensive kind of work at once (WF_BULKHEAD_*)."},
        {"workflow_bulkhead_active", "gauge",
         "Calls in a bulkhead now, each on a thread beside the shared ones."},
        {"workflow_bulkhead_joined_total", "counter", "Calls that joined a bulkhead."},
        {"workflow_bulkhead_refused_total", "counter",
         "Calls refused at once because their bulkhead was full (RESOURCE_EXHAUSTED "
         "BULKHEAD_FULL)."},
    };
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name, families[f].help,
                families[f].name, families[f].type);
        for (int c = 0; c < WF_BULKHEAD_COUNT_; c++) {
            wf_bulkhead_stats st;
            wf_bulkhead_get_stats((wf_bulkhead_class)c, &st);
            unsigned long long v = f == 0   ? (unsigned long long)st.limit
                                   : f == 1 ? (unsigned long long)st.active
                                   : f == 2 ? st.joined
                                            : st.refused;
            fprintf(out, "%s{bulkhead=\"%s\"} %llu\n", families[f].name,
                    wf_bulkhead_name((wf_bulkhead_class)c), v);
        }
    }
}

void
wf_rpc_metrics_render(const wf_rpc_metrics *m, FILE *out)
{
    render_process(out);
    render_bulkheads(out);
    fprintf(out,
            "# HELP workflow_build_info The version of this workflowd (always 1).\n"
            "# TYPE workflow_build_info gauge\n"
            "workflow_build_info{version=\"%s\"} 1\n",
            WF_VERSION);
    fprintf(out,
            "# HELP workflow_rpc_queued_calls Calls that arrived and wait for a server thread.\n"
            "# TYPE workflow_rpc_queued_calls gauge\n"
            "workflow_rpc_queued_calls %d\n"
            "# HELP workflow_rpc_refused_total Calls refused at once because too many waited "
            "(RESOURCE_EXHAUSTED OVERLOADED).\n"
            "# TYPE workflow_rpc_refused_total counter\n"
            "workflow_rpc_refused_total{reason=\"OVERLOADED\"} %llu\n",
            LOAD(m->queued), LOAD(m->refused));
    fprintf(out, "# HELP grpc_server_started_total Total number of RPCs started on the server.\n"
                 "# TYPE grpc_server_started_total counter\n");
    for (size_t i = 0; i < m->n; i++)
        fprintf(out,
                "grpc_server_started_total{grpc_type=\"%s\",grpc_service=\"%s\","
                "grpc_method=\"%s\"} %llu\n",
                m->m[i].type, m->m[i].service, m->m[i].method, LOAD(m->m[i].started));

    fprintf(out, "# HELP grpc_server_handled_total Total number of RPCs completed on the server, "
                 "regardless of success or failure.\n"
                 "# TYPE grpc_server_handled_total counter\n");
    for (size_t i = 0; i < m->n; i++)
        for (int c = 0; c < NCODES; c++) {
            /* Every code, seen or not: a rate over a series that appears
             * only at its first error misses that error. */
            unsigned long long v = LOAD(m->m[i].handled[c]);
            fprintf(out,
                    "grpc_server_handled_total{grpc_type=\"%s\",grpc_service=\"%s\","
                    "grpc_method=\"%s\",grpc_code=\"%s\"} %llu\n",
                    m->m[i].type, m->m[i].service, m->m[i].method, code_names[c], v);
        }

    fprintf(out, "# HELP grpc_server_handling_seconds Histogram of response latency (seconds) of "
                 "gRPC that had been application-level handled by the server.\n"
                 "# TYPE grpc_server_handling_seconds histogram\n");
    for (size_t i = 0; i < m->n; i++) {
        const struct method_counters *c = &m->m[i];
        unsigned long long cum = 0;
        for (size_t b = 0; b <= NBOUNDS; b++) {
            cum += LOAD(c->buckets[b]);
            char le[32];
            if (b < NBOUNDS)
                snprintf(le, sizeof le, "%g", bounds[b]);
            else
                snprintf(le, sizeof le, "+Inf");
            fprintf(out,
                    "grpc_server_handling_seconds_bucket{grpc_type=\"%s\",grpc_service=\"%s\","
                    "grpc_method=\"%s\",le=\"%s\"} %llu\n",
                    c->type, c->service, c->method, le, cum);
        }
        fprintf(out,
                "grpc_server_handling_seconds_sum{grpc_type=\"%s\",grpc_service=\"%s\","
                "grpc_method=\"%s\"} %.6f\n",
                c->type, c->service, c->method, (double)LOAD(c->sum_us) / 1e6);
        fprintf(out,
                "grpc_server_handling_seconds_count{grpc_type=\"%s\",grpc_service=\"%s\","
                "grpc_method=\"%s\"} %llu\n",
                c->type, c->service, c->method, cum);
    }
}

/* ---- backlog gauges --------------------------------------------------------------- */

/* Job types kept per count (in type order): bounds the label cardinality. */
#define GAUGE_MAX_JOB_TYPES 200

struct wf_rpc_gauges {
    wf_app *app;
    int64_t max_age_ms, timeout_ms;
    pthread_mutex_t mu;     /* guards every field below */
    bool refreshing;        /* one scrape refreshes; the others serve the cache */
    int64_t tried_ms;       /* last refresh attempt (monotonic ms), 0 = never */
    int64_t counted_ms;     /* last successful one, 0 = never */
    wf_arena *arena;        /* holds counts.jobs */
    wf_store_counts counts; /* valid when counted_ms != 0 */
};

wf_rpc_gauges *
wf_rpc_gauges_new(wf_app *app, int64_t max_age_ms, int64_t timeout_ms)
{
    wf_rpc_gauges *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->app = app;
    g->max_age_ms = max_age_ms;
    g->timeout_ms = timeout_ms;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

void
wf_rpc_gauges_free(wf_rpc_gauges *g)
{
    if (g == NULL)
        return;
    pthread_mutex_destroy(&g->mu);
    wf_arena_free(g->arena);
    free(g);
}

/* Counts again when the cache is older than max_age_ms and no other
 * scrape is at it. The query runs without the mutex, so concurrent
 * scrapes render the previous counts instead of waiting. */
static void
gauges_refresh(wf_rpc_gauges *g)
{
    int64_t now = wf_mono_ms();
    pthread_mutex_lock(&g->mu);
    bool due = !g->refreshing && (g->tried_ms == 0 || now - g->tried_ms >= g->max_age_ms);
    if (due) {
        g->refreshing = true;
        g->tried_ms = now;
    }
    pthread_mutex_unlock(&g->mu);
    if (!due)
        return;
    wf_arena *a = wf_arena_new();
    wf_store_counts c = {0};
    wf_error err;
    bool ok = a != NULL && wf_app_count_backlog(g->app, a, g->timeout_ms, GAUGE_MAX_JOB_TYPES, &c,
                                                &err) == WF_OK;
    pthread_mutex_lock(&g->mu);
    g->refreshing = false;
    if (ok) {
        wf_arena_free(g->arena);
        g->arena = a;
        g->counts = c;
        g->counted_ms = wf_mono_ms();
        a = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    wf_arena_free(a);
}

/* A label value in the text format: backslash, quote and newline escaped. */
static void
put_label(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', out);
        if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

void
wf_rpc_gauges_render(wf_rpc_gauges *g, FILE *out)
{
    gauges_refresh(g);
    pthread_mutex_lock(&g->mu);
    bool have = g->counted_ms != 0;
    fprintf(out, "# HELP workflow_jobs_activatable Jobs a worker could activate now, by job type "
                 "(all tenants).\n"
                 "# TYPE workflow_jobs_activatable gauge\n");
    for (size_t i = 0; have && i < g->counts.n_jobs; i++) {
        fputs("workflow_jobs_activatable{job_type=\"", out);
        put_label(out, g->counts.jobs[i].job_type);
        fprintf(out, "\"} %lld\n", (long long)g->counts.jobs[i].count);
    }
    fprintf(out, "# HELP workflow_tasks_open Tasks waiting for a person: OPEN or CLAIMED (all "
                 "tenants).\n"
                 "# TYPE workflow_tasks_open gauge\n");
    if (have)
        fprintf(out, "workflow_tasks_open %lld\n", (long long)g->counts.tasks_open);
    fprintf(out, "# HELP workflow_signals_buffered Signals buffered until an instance awaits "
                 "them, not expired (all tenants).\n"
                 "# TYPE workflow_signals_buffered gauge\n");
    if (have)
        fprintf(out, "workflow_signals_buffered %lld\n", (long long)g->counts.signals_buffered);
    fprintf(out, "# HELP workflow_signal_deliveries_pending Deliveries of signals fanned out to "
                 "the instances of an aggregate, not yet run (all tenants).\n"
                 "# TYPE workflow_signal_deliveries_pending gauge\n");
    if (have)
        fprintf(out, "workflow_signal_deliveries_pending %lld\n",
                (long long)g->counts.deliveries_pending);
    fprintf(out, "# HELP workflow_backlog_age_seconds Age of the backlog counts above (they are "
                 "cached between scrapes).\n"
                 "# TYPE workflow_backlog_age_seconds gauge\n");
    if (have)
        fprintf(out, "workflow_backlog_age_seconds %.3f\n",
                (double)(wf_mono_ms() - g->counted_ms) / 1000.0);
    pthread_mutex_unlock(&g->mu);
}
