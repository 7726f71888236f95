/*
 * workflowd: the composition root.
 *
 * Reads the configuration, opens the store, starts the gRPC server, then
 * waits for SIGTERM or SIGINT in the main thread (signals are blocked in
 * every other thread, and nothing runs in a signal handler). Shutdown:
 * health NOT_SERVING, wait WF_DRAIN_SECONDS while still serving, stop the
 * scheduler, stop the server with WF_GRACE_SECONDS for calls in
 * flight, close the store. A failed startup leaves by the same path, from
 * the step it reached: what was started is stopped in reverse order.
 *
 * Exit codes: 0 after a clean shutdown, 2 for a configuration error (a
 * DATABASE_URL libpq cannot parse included), 1 when the server cannot start
 * (store unreachable, its TLS certificate not trusted, address in use).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "handler.h"
#include "health_probe.h"
#include "rpc_metrics.h"
#include "rpc_server.h"
#include "diagram.h"
#include "expr.h"
#include "scheduler.h"
#include "console.h"
#include "wf_http.h"
#include "wf_config.h"
#include "wf_log.h"

extern char **environ;

/* What GET /metrics serves: the gRPC server's counters, then the service's
 * gauges. */
struct metrics_src {
    wf_rpc_server *srv;
    wf_app *app;
    wf_scheduler *_Atomic sched; /* set once the scheduler runs */
    wf_rpc_gauges *gauges;       /* store backlog counts, cached (rpc_metrics.h) */
};

static void
render_scheduler(wf_scheduler *s, FILE *out)
{
    wf_scheduler_stats st;
    wf_scheduler_get_stats(s, &st);
    fprintf(out,
            "# HELP workflow_timer_lag_seconds Lateness of the last timer fired by this replica "
            "(commit time - due time).\n"
            "# TYPE workflow_timer_lag_seconds gauge\n"
            "workflow_timer_lag_seconds %.3f\n"
            "# HELP workflow_timer_lag_max_seconds Largest timer lateness since start.\n"
            "# TYPE workflow_timer_lag_max_seconds gauge\n"
            "workflow_timer_lag_max_seconds %.3f\n"
            "# HELP workflow_timers_fired_total Timers fired by this replica.\n"
            "# TYPE workflow_timers_fired_total counter\n"
            "workflow_timers_fired_total %llu\n"
            "# HELP workflow_timer_fire_errors_total Timer firings that failed (retried after "
            "the claim expires).\n"
            "# TYPE workflow_timer_fire_errors_total counter\n"
            "workflow_timer_fire_errors_total %llu\n"
            "# HELP workflow_scheduler_store_down 1 while claiming due timers fails.\n"
            "# TYPE workflow_scheduler_store_down gauge\n"
            "workflow_scheduler_store_down %d\n"
            "# HELP workflow_job_leases_expired_total Job leases this replica ended "
            "(JOB_LEASE_EXPIRED).\n"
            "# TYPE workflow_job_leases_expired_total counter\n"
            "workflow_job_leases_expired_total %llu\n"
            "# HELP workflow_signals_expired_total Buffered signals this replica expired "
            "unconsumed.\n"
            "# TYPE workflow_signals_expired_total counter\n"
            "workflow_signals_expired_total %llu\n"
            "# HELP workflow_retention_rows_removed_total Rows this replica's retention sweeps "
            "deleted.\n"
            "# TYPE workflow_retention_rows_removed_total counter\n"
            "workflow_retention_rows_removed_total %llu\n"
            "# HELP workflow_scheduler_step_errors_total Lease, signal and retention steps that "
            "failed (retried on a later pass).\n"
            "# TYPE workflow_scheduler_step_errors_total counter\n"
            "workflow_scheduler_step_errors_total %llu\n",
            (double)st.last_lateness_ms / 1000.0, (double)st.max_lateness_ms / 1000.0,
            (unsigned long long)st.fired, (unsigned long long)st.fire_errors, st.store_down ? 1 : 0,
            (unsigned long long)st.leases_expired, (unsigned long long)st.signals_expired,
            (unsigned long long)st.rows_removed, (unsigned long long)st.step_errors);
}

static void
render_metrics(void *arg, FILE *out)
{
    struct metrics_src *m = arg;
    wf_rpc_server_render_metrics(m->srv, out);
    wf_app_render_metrics(m->app, out);
    if (m->gauges != NULL)
        wf_rpc_gauges_render(m->gauges, out);
    wf_scheduler *s = m->sched;
    if (s != NULL)
        render_scheduler(s, out);
}

/* workflowd migrate: applies the pending migrations of DATABASE_URL; the
 * exit code (0 current, 1 cannot be made current, 2 configuration). */
static int
migrate(const wf_config *cfg)
{
    wf_error err;
    int version = 0;
    wf_error_clear(&err);
    wf_code rc = wf_app_migrate(cfg, &version, &err);
    if (rc != WF_OK) {
        WF_LOG(WF_LOG_ERROR, "migrate", "%s", err.msg);
        return rc == WF_E_INVALID_ARGUMENT ? 2 : 1;
    }
    WF_LOG(WF_LOG_INFO, "migrate", "the schema is at migration %d", version);
    return 0;
}

/* Serves until SIGTERM or SIGINT, then has health answer NOT_SERVING and
 * keeps serving for WF_DRAIN_SECONDS, so that load balancers move traffic
 * away before the server stops. */
static void
wait_and_drain(const sigset_t *sigs, wf_rpc_server *srv, const wf_config *cfg)
{
    int sig = 0;
    sigwait(sigs, &sig);
    WF_LOG(WF_LOG_INFO, "shutdown", "received %s: draining for %d s", strsignal(sig),
           cfg->drain_seconds);
    wf_rpc_server_drain(srv);
    struct timespec drain = {cfg->drain_seconds, 0};
    while (nanosleep(&drain, &drain) != 0)
        ;
}

int
main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: workflowd\n"
               "       workflowd --health-probe [--tls-name NAME]\n"
               "       workflowd migrate\n"
               "       workflowd --version\n"
               "Serves workflow.v1.WorkflowService over gRPC. Configured by environment\n"
               "variables (WF_ADDR, WF_ENV, WF_API_KEYS, DATABASE_URL, ...): see README.md.\n"
               "--health-probe asks the server at WF_ADDR for its health and exits 0 when\n"
               "it is SERVING, 1 otherwise (for Docker's HEALTHCHECK).\n"
               "migrate applies the pending schema migrations of DATABASE_URL and exits:\n"
               "0 when the schema is current, 1 when it cannot be (the database cannot be\n"
               "reached, or its schema is newer than this workflowd), 2 for a\n"
               "configuration error.\n"
               "--version prints \"workflowd VERSION\" and exits 0.\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("workflowd %s\n", WF_VERSION);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--health-probe") == 0)
        return wf_health_probe(argc - 2, argv + 2);
    /* Hidden: an expression worker started by this binary (expr.h). */
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);

    /* Block the shutdown signals before any thread exists, so that every
     * thread (grpc's included) inherits the mask and only sigwait sees them. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* What startup acquires, in order; released in reverse from the label
     * for the last step reached, so that a failed startup and a shutdown
     * leave by one path. */
    wf_app app = WF_APP_INIT;
    wf_rpc_server *srv = NULL;
    struct metrics_src msrc = {NULL, &app, NULL, NULL};
    wf_http *http = NULL;
    wf_console *console = NULL;
    wf_scheduler_options sopt;
    wf_scheduler *sched = NULL;
    int grace_ms = 0; /* the server's grace for calls in flight: none unless it served */
    int status = 1;   /* the exit code */

    wf_error err;
    wf_error_clear(&err);
    wf_config *cfg = wf_config_load(environ, &err);
    if (cfg == NULL) {
        WF_LOG(WF_LOG_ERROR, "config", "invalid configuration: %s", err.msg);
        return 2;
    }
    wf_log_threshold = (wf_log_level)cfg->log_level;
    if (argc > 1 && strcmp(argv[1], "migrate") == 0) {
        status = migrate(cfg);
        goto out_free_config;
    }
    if (argc > 1) {
        WF_LOG(WF_LOG_ERROR, "usage", "unknown argument \"%s\" (see workflowd --help)", argv[1]);
        status = 2;
        goto out_free_config;
    }
    /* Keys of WF_API_KEYS_FILE are read again when the file changes. */
    if (!wf_config_watch_keys(cfg, &err)) {
        WF_LOG(WF_LOG_ERROR, "startup", "%s", err.msg);
        goto out_free_config;
    }
    wf_expr_configure(&(wf_expr_options){
        .isolation = cfg->expr_inline ? WF_EXPR_INLINE : WF_EXPR_PROCESS,
        .timeout_ms = cfg->expr_timeout_ms,
        .memory_mb = cfg->expr_memory_mb,
        .workers = cfg->expr_workers,
        .recycle_after = 10000,
        .max_queued = cfg->expr_max_queued,
        .slow_ms = cfg->expr_slow_ms,
    });
    wf_diagram_configure((size_t)cfg->diagram_cache_bytes);

    app.cfg = cfg;
    if (wf_app_open_store(&app, &err) != WF_OK) {
        WF_LOG(WF_LOG_ERROR, "startup", "could not open the store: %s", err.msg);
        if (err.code == WF_E_INVALID_ARGUMENT)
            status = 2; /* DATABASE_URL itself is wrong */
        goto out_stop_expr;
    }
    srv = wf_rpc_server_start(&app, &err);
    if (srv == NULL) {
        WF_LOG(WF_LOG_ERROR, "startup", "could not start: %s", err.msg);
        goto out_close_store;
    }
    if (wf_app_listen(&app, &err) != WF_OK) {
        WF_LOG(WF_LOG_ERROR, "startup", "could not listen for store notifications: %s", err.msg);
        goto out_stop_server;
    }
    /* Counted at most every 5 s, by a scrape that waits at most 1 s. */
    msrc.srv = srv;
    if (cfg->metrics_addr != NULL) {
        msrc.gauges = wf_rpc_gauges_new(&app, 5000, 1000);
        http = wf_http_start(cfg->metrics_addr, render_metrics, &msrc, &err);
        if (http == NULL) {
            WF_LOG(WF_LOG_ERROR, "startup", "could not start the metrics endpoint: %s", err.msg);
            goto out_free_gauges;
        }
        WF_LOG(WF_LOG_INFO, "startup", "metrics on %s/metrics", cfg->metrics_addr);
    }
    /* The web console: its own listener and threads, over the handlers. */
    if (cfg->console_addr != NULL) {
        console = wf_console_start(&app, cfg->console_addr, &err);
        if (console == NULL) {
            WF_LOG(WF_LOG_ERROR, "startup", "could not start the web console: %s", err.msg);
            goto out_stop_http;
        }
        WF_LOG(WF_LOG_INFO, "startup", "web console on http://%s/", cfg->console_addr);
    }
    /* The timer scheduler starts last: it needs the store open and the
     * server running (a fired timer wakes the streams watching its
     * instance; before the rpc layer installs its waker a wake-up would be
     * lost). Signals are blocked already, so its thread inherits the mask. */
    wf_app_scheduler_options(&app, &sopt);
    sched = wf_scheduler_start(app.store, &sopt, wf_app_fire_timer, &app, &err);
    if (sched == NULL) {
        WF_LOG(WF_LOG_ERROR, "startup", "could not start the timer scheduler: %s", err.msg);
        goto out_stop_console;
    }
    msrc.sched = sched;
    wf_app_set_scheduler(&app, sched); /* timers created here now wake it */
    WF_LOG(WF_LOG_INFO, "startup",
           "serving workflow.v1.WorkflowService on port %d (%s mode, %s store, %d threads)",
           wf_rpc_server_port(srv), cfg->development ? "development" : "production",
           cfg->database_url != NULL ? "postgres" : "memory", cfg->threads);

    wait_and_drain(&sigs, srv, cfg);
    grace_ms = cfg->grace_seconds * 1000;
    status = 0;

    /* Metrics go first: they read the scheduler, which is about to be freed
     * (scrapes during the drain above still worked). The console calls
     * the handlers, which reach the scheduler and the store: it stops
     * with them. */
out_stop_console:
    wf_console_stop(console);
out_stop_http:
    wf_http_stop(http);
out_free_gauges:
    wf_rpc_gauges_free(msrc.gauges);
    /* The scheduler, started last, stops after the metrics and the console
     * that read it. It stops after the drain (while the replica still
     * serves, timers still fire: with one replica, stopping earlier would
     * hold every timer due in the drain until the next start) and before
     * the server stops: no new unit of work starts during the grace period,
     * no fire's wake-up reaches an rpc layer being torn down, and above all
     * its thread is gone before wf_app_close_store frees the store. It
     * returns within one fire's deadline; timers it had claimed but not
     * fired are claimed again after claim_ms by any replica. */
    if (sched != NULL) {
        wf_app_set_scheduler(&app, NULL);
        wf_scheduler_stop(sched);
    }
out_stop_server:
    wf_rpc_server_stop(srv, grace_ms);
out_close_store:
    wf_app_close_store(&app);
out_stop_expr:
    wf_expr_cache_clear(); /* compiled jq programs */
    wf_expr_shutdown();
    if (status == 0)
        WF_LOG(WF_LOG_INFO, "shutdown", "stopped");
out_free_config:
    wf_config_free(cfg);
    return status;
}
