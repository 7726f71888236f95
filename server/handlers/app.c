/*
 * app: the long-lived service of handler.h: readiness, the store and the
 * directory, commit notifications and wake-ups, the pool gauges and
 * round-trip counters, and the functions every handler shares (protobuf
 * allocator, violations).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "handlers.h"

#include "diagram.h"
#include "directory.h"
#include "reads.h"
#include "scheduler.h"

bool
wf_app_ready(wf_app *app)
{
    return app->store != NULL && wf_store_ready(app->store);
}

/* Most roots one "wf_events" notification wakes by name; a longer list
 * wakes the waiters of every root. */
#define WAKE_ROOTS_MAX 64

/* "wf_events": WatchEvents followers, and the waiters of each root the
 * payload names (space-separated root ids; "" = any root). */
static void
wake_events(wf_app *app, const char *payload)
{
    const char *topics[WAKE_ROOTS_MAX + 1];
    char buf[WAKE_ROOTS_MAX * 72];
    size_t n = 0, used = 0;
    topics[n++] = WF_TOPIC_EVENTS;
    const char *p = payload != NULL ? payload : "";
    while (*p != '\0') {
        size_t len = strcspn(p, " ");
        size_t need = sizeof WF_TOPIC_ROOT_PREFIX + len;
        if (len > 0 && (n > WAKE_ROOTS_MAX || used + need > sizeof buf)) {
            n = 1; /* too many: every root */
            break;
        }
        if (len > 0) {
            snprintf(buf + used, need, "%s%.*s", WF_TOPIC_ROOT_PREFIX, (int)len, p);
            topics[n++] = buf + used;
            used += need;
        }
        p += len + (p[len] == ' ');
    }
    if (n == 1)
        topics[n++] = WF_TOPIC_ROOT_PREFIX;
    wf_app_wake_topics(app, topics, n);
}

/* Store notification → wake-up topics. Runs on the store's listener thread
 * (or a committing thread): only wakes, never blocks. */
static void
on_store_notification(void *arg, const char *channel, const char *payload)
{
    wf_app *app = arg;
    if (strcmp(channel, "wf_events") == 0) {
        wake_events(app, payload);
    } else if (strcmp(channel, "wf_jobs") == 0) {
        if (payload == NULL || payload[0] == '\0') {
            wf_app_wake_streams(app, NULL); /* "re-check everything" after a reconnect */
            return;
        }
        char topic[160];
        snprintf(topic, sizeof topic, "%s%s", WF_TOPIC_JOBS_PREFIX, payload);
        wf_app_wake_streams(app, topic);
    }
}

wf_code
wf_app_listen(wf_app *app, wf_error *err)
{
    return wf_store_set_listener(app->store, on_store_notification, app, err);
}

wf_code
wf_app_count_backlog(wf_app *app, wf_arena *arena, int64_t timeout_ms, size_t max_types,
                     wf_store_counts *out, wf_error *err)
{
    return wf_reads_count_backlog(app->store, arena, timeout_ms, max_types, out, err);
}

void
wf_app_render_metrics(wf_app *app, FILE *out)
{
    wf_store_stats st = {0};
    if (app->store != NULL)
        wf_store_get_stats(app->store, &st);
    fprintf(out,
            "# HELP workflow_db_pool_size Postgres connections in the pool (0: memory store).\n"
            "# TYPE workflow_db_pool_size gauge\n"
            "workflow_db_pool_size %d\n"
            "# HELP workflow_db_pool_in_use Postgres connections borrowed now.\n"
            "# TYPE workflow_db_pool_in_use gauge\n"
            "workflow_db_pool_in_use %d\n"
            "# HELP workflow_db_pool_waiting Callers waiting for a Postgres connection.\n"
            "# TYPE workflow_db_pool_waiting gauge\n"
            "workflow_db_pool_waiting %d\n",
            st.pool_size, st.in_use, st.waiting);
    /* The pool's work for calls (store.h's wf_store_stats): background
     * sends (NOTIFY, ANALYZE) and the listener's connection are left out. */
    fprintf(out,
            "# HELP workflow_db_round_trips_total Round trips to Postgres of the calls' work "
            "(flights of pipelined statements), excluding background wake-ups.\n"
            "# TYPE workflow_db_round_trips_total counter\n"
            "workflow_db_round_trips_total %lld\n"
            "# HELP workflow_db_statements_total Statements those round trips carried, excluding "
            "background wake-ups.\n"
            "# TYPE workflow_db_statements_total counter\n"
            "workflow_db_statements_total %lld\n"
            "# HELP workflow_db_transactions_total Transactions those round trips ended (a COMMIT, "
            "or a statement run on its own), excluding background wake-ups.\n"
            "# TYPE workflow_db_transactions_total counter\n"
            "workflow_db_transactions_total %lld\n",
            (long long)st.flights, (long long)st.statements, (long long)st.transactions);
    /* The cache of laid-out diagrams (server/diagram). */
    wf_diagram_stats ds;
    wf_diagram_get_stats(&ds);
    fprintf(
        out,
        "# HELP workflow_diagram_cache_bytes Bytes the cache of laid-out diagrams holds.\n"
        "# TYPE workflow_diagram_cache_bytes gauge\n"
        "workflow_diagram_cache_bytes %zu\n"
        "# HELP workflow_diagram_cache_limit_bytes The cache's bound (WF_DIAGRAM_CACHE_BYTES).\n"
        "# TYPE workflow_diagram_cache_limit_bytes gauge\n"
        "workflow_diagram_cache_limit_bytes %zu\n"
        "# HELP workflow_diagram_cache_entries Definition versions laid out in the cache.\n"
        "# TYPE workflow_diagram_cache_entries gauge\n"
        "workflow_diagram_cache_entries %zu\n"
        "# HELP workflow_diagram_requests_total SVG diagrams asked for, by whether the cache "
        "had their layout.\n"
        "# TYPE workflow_diagram_requests_total counter\n"
        "workflow_diagram_requests_total{cache=\"hit\"} %llu\n"
        "workflow_diagram_requests_total{cache=\"miss\"} %llu\n"
        "# HELP workflow_diagram_layouts_total Graphviz layouts run.\n"
        "# TYPE workflow_diagram_layouts_total counter\n"
        "workflow_diagram_layouts_total %llu\n",
        ds.bytes, ds.cap, ds.entries, ds.hits, ds.misses, ds.layouts);
    /* Counted commits (store.h's WF_CNT_*). */
    const int64_t *ev = st.events;
    fprintf(out,
            "# HELP workflow_instances_started_total Instances started (roots and children).\n"
            "# TYPE workflow_instances_started_total counter\n"
            "workflow_instances_started_total %lld\n"
            "# HELP workflow_instances_ended_total Instances that ended, by final status.\n"
            "# TYPE workflow_instances_ended_total counter\n"
            "workflow_instances_ended_total{status=\"COMPLETED\"} %lld\n"
            "workflow_instances_ended_total{status=\"CANCELLED\"} %lld\n"
            "workflow_instances_ended_total{status=\"COMPENSATED\"} %lld\n"
            "# HELP workflow_incidents_opened_total Instances that became FAILED (an incident).\n"
            "# TYPE workflow_incidents_opened_total counter\n"
            "workflow_incidents_opened_total %lld\n"
            "# HELP workflow_incidents_resolved_total Incidents resolved by RetryInstance.\n"
            "# TYPE workflow_incidents_resolved_total counter\n"
            "workflow_incidents_resolved_total %lld\n"
            "# HELP workflow_signals_total Signal deliveries by outcome (correlated: one per "
            "instance reached).\n"
            "# TYPE workflow_signals_total counter\n"
            "workflow_signals_total{outcome=\"CORRELATED\"} %lld\n"
            "workflow_signals_total{outcome=\"BUFFERED\"} %lld\n"
            "workflow_signals_total{outcome=\"DROPPED\"} %lld\n"
            "workflow_signals_total{outcome=\"DUPLICATE\"} %lld\n",
            (long long)ev[WF_CNT_INSTANCE_STARTED], (long long)ev[WF_CNT_INSTANCE_COMPLETED],
            (long long)ev[WF_CNT_INSTANCE_CANCELLED], (long long)ev[WF_CNT_INSTANCE_COMPENSATED],
            (long long)ev[WF_CNT_INSTANCE_FAILED], (long long)ev[WF_CNT_INCIDENT_RESOLVED],
            (long long)ev[WF_CNT_SIGNAL_RECEIVED], (long long)ev[WF_CNT_SIGNAL_BUFFERED],
            (long long)ev[WF_CNT_SIGNAL_DROPPED], (long long)ev[WF_CNT_SIGNAL_DUPLICATE]);
    static const char *const outcomes[6] = {NULL,     "STARTED", "SKIPPED",
                                            "MISSED", "FAILED",  "BUFFERED"};
    fprintf(out, "# HELP workflow_schedule_runs_total Fire times of schedules this replica "
                 "handled, by outcome.\n"
                 "# TYPE workflow_schedule_runs_total counter\n");
    for (int k = 1; k < 6; k++)
        fprintf(out, "workflow_schedule_runs_total{outcome=\"%s\"} %llu\n", outcomes[k],
                (unsigned long long)__atomic_load_n(&app->schedule_runs[k], __ATOMIC_RELAXED));
    fprintf(out,
            "# HELP workflow_schedule_lag_seconds Start time - fire time of the latest pass's "
            "latest start of a schedule on this replica.\n"
            "# TYPE workflow_schedule_lag_seconds gauge\n"
            "workflow_schedule_lag_seconds %.3f\n"
            "# HELP workflow_schedule_lag_max_seconds Largest start lag of a schedule since "
            "start.\n"
            "# TYPE workflow_schedule_lag_max_seconds gauge\n"
            "workflow_schedule_lag_max_seconds %.3f\n",
            (double)__atomic_load_n(&app->schedule_lag_us, __ATOMIC_RELAXED) / 1e6,
            (double)__atomic_load_n(&app->schedule_lag_max_us, __ATOMIC_RELAXED) / 1e6);
    fprintf(out,
            "# HELP workflow_await_wakeups_total Waiting calls (AwaitInstance, await_result) "
            "woken by a commit on their instance's root before their timed look.\n"
            "# TYPE workflow_await_wakeups_total counter\n"
            "workflow_await_wakeups_total %llu\n",
            (unsigned long long)__atomic_load_n(&app->await_wakeups, __ATOMIC_RELAXED));
}

void
wf_app_set_waker(wf_app *app, void (*fn)(void *arg, const char *const *topics, size_t n), void *arg)
{
    pthread_mutex_lock(&app->wake_mu);
    app->wake_streams = fn;
    app->wake_arg = arg;
    pthread_mutex_unlock(&app->wake_mu);
}

void
wf_app_wake_streams(wf_app *app, const char *topic)
{
    pthread_mutex_lock(&app->wake_mu);
    if (topic != NULL && strcmp(topic, WF_TOPIC_TIMERS) == 0)
        wf_scheduler_wake(app->sched); /* NULL-safe; no stream listens to it */
    else if (app->wake_streams != NULL)
        app->wake_streams(app->wake_arg, topic != NULL ? &topic : NULL, topic != NULL);
    pthread_mutex_unlock(&app->wake_mu);
}

static int
topic_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
wf_app_wake_topics(wf_app *app, const char **topics, size_t n)
{
    qsort(topics, n, sizeof *topics, topic_cmp);
    pthread_mutex_lock(&app->wake_mu);
    if (app->wake_streams != NULL)
        app->wake_streams(app->wake_arg, topics, n);
    pthread_mutex_unlock(&app->wake_mu);
}

void
wf_app_set_scheduler(wf_app *app, struct wf_scheduler *s)
{
    pthread_mutex_lock(&app->wake_mu);
    app->sched = s;
    pthread_mutex_unlock(&app->wake_mu);
}

wf_code
wf_app_open_store(wf_app *app, wf_error *err)
{
    const wf_config *cfg = app->cfg;
    app->directory = wf_directory_new(cfg, err);
    if (app->directory == NULL)
        return err->code;
    if (cfg->database_url == NULL)
        app->store = wf_store_mem_new(err);
    else {
        wf_store_pg_config pc = {
            .dsn = cfg->database_url,
            .pool_size = cfg->db_pool_size,
        };
        app->store = wf_store_pg_new(&pc, err);
    }
    if (app->store == NULL) {
        wf_directory_free(app->directory);
        app->directory = NULL;
        return err->code;
    }
    wf_store_set_page_bytes(app->store, wf_config_answer_budget(cfg));
    wf_store_set_job_aging(app->store, cfg->job_priority_aging_ms * 1000LL);
    wf_runtime_set_foreach_max_items(cfg->foreach_max_items);
    wf_runtime_set_call_max_depth(cfg->call_max_depth);
    return WF_OK;
}

wf_code
wf_app_migrate(const wf_config *cfg, int *version, wf_error *err)
{
    if (cfg->database_url == NULL)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "DATABASE_URL is not set: the memory store has no schema to migrate");
    wf_store_pg_config pc = {.dsn = cfg->database_url, .pool_size = 1};
    return wf_store_pg_migrate(&pc, version, err);
}

void
wf_app_close_store(wf_app *app)
{
    wf_store_free(app->store);
    app->store = NULL;
    wf_directory_free(app->directory);
    app->directory = NULL;
}

static void *
pb_alloc(void *arena, size_t size)
{
    return wf_arena_alloc(arena, size);
}

static void
pb_free(void *arena, void *p)
{
    (void)arena;
    (void)p; /* the arena frees everything at once */
}

ProtobufCAllocator
wf_arena_pb_allocator(wf_arena *arena)
{
    return (ProtobufCAllocator){pb_alloc, pb_free, arena};
}

wf_code
wf_call_add_violation(wf_call *call, const char *field, const char *reason, const char *description,
                      wf_error *err)
{
    size_t n = call->nviolations;
    wf_violation *v = wf_arena_alloc(call->arena, (n + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n; i++)
        v[i] = call->violations[i];
    v[n].field = wf_arena_strdup(call->arena, field);
    v[n].reason = reason != NULL ? wf_arena_strdup(call->arena, reason) : NULL;
    v[n].description = wf_arena_strdup(call->arena, description);
    call->violations = v;
    call->nviolations = n + 1;
    return WF_OK;
}
