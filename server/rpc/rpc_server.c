/*
 * rpc_server: grpc core server, workers, call state machine, health service
 * and shutdown. This file holds the lifecycle (start, drain, stop); the
 * call state machine and the workers are in rpc_call.c, server streams and
 * reflection in rpc_stream.c, the Health service in rpc_health.c (shared
 * declarations: rpc_server_int.h).
 *
 * DESIGN
 * - Three completion queues. The pool queue holds the request slots of every
 *   method but the Health service's, plus the catch-all; N worker threads
 *   all wait on it, so whichever thread is idle takes the next event, and a
 *   handler that blocks holds only its own thread. (With a queue per worker,
 *   grpc's matcher hands a connection's next call to the first queue that
 *   has a slot for the method, which can be the queue of a worker stuck in
 *   a handler: calls of one connection then wait for each other.) The
 *   health queue holds only the grpc.health.v1.Health slots and has a
 *   thread of its own, so Check and Watch answer however busy the pool is.
 * - Admission. The pool's slots report arrivals on a third queue, the
 *   accept queue, whose one thread never runs a handler: it re-posts the
 *   slot, then hands the call to the pool with an empty batch (T_DISPATCH,
 *   which comes back on the pool queue, the call's own) or, when more than
 *   WF_MAX_QUEUED_CALLS calls already wait for a pool thread, answers
 *   RESOURCE_EXHAUSTED OVERLOADED with a RetryInfo at once. So an
 *   overloaded server refuses in microseconds instead of letting calls wait
 *   for their deadline, and the wait of an accepted call stays bounded.
 *   Health never goes through admission.
 * - A unary handler runs synchronously on the thread that took the call and
 *   ends with one batch {initial metadata, message, status, RECV_CLOSE}.
 * - Seats. WF_THREADS of the pool's threads hold a seat and take events;
 *   the spares (one per place of each bulkhead, core/wf_bulkhead.h) wait
 *   for one. A handler whose call joins a bulkhead (a layout, a compile, a
 *   slow expression) gives its thread's seat to a spare and goes on beside
 *   the seated threads; once the call is over the thread waits for a seat
 *   in its turn. So slow work never holds the threads every other call
 *   needs, and the threads outside the seats are bounded by the bulkheads.
 * - Server streams (Health Watch, WatchEvents) are pull-based: a thread
 *   asks the stream for its next message when the previous send completed;
 *   a stream with nothing to say parks. A wake-up (health change, events
 *   committed) starts an empty batch on each parked stream, whose tag comes
 *   back on the stream's queue. Two events of one call can come out on two
 *   threads at once: the call mutex serialises grpc_call_start_batch and the
 *   stream's state between them and the waker, the `pulling` flag lets one
 *   thread at a time run the stream's step, and the mutex is never held
 *   while the stream reads the store. Lock order: server mutex (the stream
 *   list), then call mutex; never the reverse.
 * - A call context is freed when its last outstanding tag has come back
 *   AND been handled (pending is decremented at the end of handling a tag),
 *   never earlier.
 * - Shutdown follows the documented order: drain (health NOT_SERVING) →
 *   shutdown_and_notify → grace → cancel_all_calls → quiesce workers (no
 *   batch is started after this) → shut the queues down → join → destroy.
 */
#include "rpc_server_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "rpc_interceptors.h"
#include "rpc_metrics.h"
#include "rpc_reflection.h"
#include "rpc_status.h"
#include "rpc_table.h"
#include "rpc_wire.h"
#include "wf_bulkhead.h"
#include "wf_log.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"
/* ---- lifecycle ------------------------------------------------------------ */

static grpc_server_credentials *
server_credentials(const wf_config *cfg, wf_error *err)
{
    if (cfg->tls_cert == NULL)
        return grpc_insecure_server_credentials_create();
    /* TLS without a mesh: read the PEM files once at startup. */
    char *pem[2] = {NULL, NULL};
    const char *paths[2] = {cfg->tls_cert, cfg->tls_key};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "rb");
        if (f == NULL) {
            wf_error_set(err, WF_E_INVALID_ARGUMENT, "could not open %s",
                         i == 0 ? "WF_TLS_CERT" : "WF_TLS_KEY");
            free(pem[0]);
            return NULL;
        }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        pem[i] = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
        if (pem[i] == NULL || fread(pem[i], 1, (size_t)n, f) != (size_t)n) {
            fclose(f);
            free(pem[0]);
            free(pem[1]);
            wf_error_set(err, WF_E_INVALID_ARGUMENT, "could not read %s",
                         i == 0 ? "WF_TLS_CERT" : "WF_TLS_KEY");
            return NULL;
        }
        fclose(f);
    }
    grpc_ssl_pem_key_cert_pair pair = {pem[1], pem[0]};
    grpc_server_credentials *cr = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
    free(pem[0]);
    free(pem[1]);
    if (cr == NULL)
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_TLS_CERT or WF_TLS_KEY is not valid PEM");
    return cr;
}

/* The last step of both shutdown paths: what the server owns besides grpc
 * objects, then grpc itself. */
static void
free_server(wf_rpc_server *srv)
{
    wf_rpc_metrics_free(srv->metrics);
    wf_reflection_free(srv->reflection);
    free(srv->workers);
    free(srv->methods);
    pthread_mutex_destroy(&srv->hmu);
    pthread_cond_destroy(&srv->hcond);
    pthread_mutex_destroy(&srv->seat_mu);
    pthread_cond_destroy(&srv->seat_cv);
    free(srv);
    grpc_shutdown();
}

/* Frees a server that never started its workers (startup failure). */
static void
destroy_unstarted(wf_rpc_server *srv)
{
    if (srv->server != NULL) {
        grpc_completion_queue *scq = grpc_completion_queue_create_for_pluck(NULL);
        grpc_server_shutdown_and_notify(srv->server, scq, srv);
        grpc_completion_queue_pluck(scq, srv, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        grpc_server_destroy(srv->server);
        grpc_completion_queue_shutdown(scq);
        grpc_completion_queue_pluck(scq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        grpc_completion_queue_destroy(scq);
    }
    struct queue *qs[] = {&srv->pool, &srv->health, &srv->accept};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        if (qs[i]->cq == NULL)
            continue;
        grpc_completion_queue_shutdown(qs[i]->cq);
        while (
            grpc_completion_queue_next(qs[i]->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(qs[i]->cq);
    }
    free_server(srv);
}

wf_rpc_server *
wf_rpc_server_start(wf_app *app, wf_error *err)
{
    const wf_config *cfg = app->cfg;
    wf_rpc_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    srv->app = app;
    pthread_mutex_init(&srv->hmu, NULL);
    pthread_cond_init(&srv->hcond, NULL);
    pthread_mutex_init(&srv->seat_mu, NULL);
    pthread_cond_init(&srv->seat_cv, NULL);
    grpc_init();

    if (wf_rpc_table_build(&workflow__v1__workflow_service__descriptor, wf_routes, &srv->methods,
                           &srv->nmethods, err) != WF_OK) {
        destroy_unstarted(srv);
        return NULL;
    }
    static const char *const services[] = {"workflow.v1.WorkflowService", "grpc.health.v1.Health",
                                           "grpc.reflection.v1.ServerReflection",
                                           "grpc.reflection.v1alpha.ServerReflection"};
    srv->reflection = wf_reflection_new(wf_descriptor_set, wf_descriptor_set_len, services,
                                        sizeof services / sizeof services[0], err);
    if (srv->reflection == NULL) {
        destroy_unstarted(srv);
        return NULL;
    }
    srv->metrics = wf_rpc_metrics_new(srv->methods, srv->nmethods);
    if (srv->metrics == NULL) {
        wf_error_nomem(err);
        destroy_unstarted(srv);
        return NULL;
    }

    /* Core's own receive limit sits above ours, so that most oversized
     * requests reach us and get the TOO_LARGE reason; beyond it core answers
     * RESOURCE_EXHAUSTED by itself. Answers are checked before they are
     * sent (rpc_call.c); core's send limit is the same, as a backstop. */
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_ALLOW_REUSEPORT, {.integer = 0}},
        {GRPC_ARG_INTEGER,
         GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         {.integer = wf_config_receive_limit(cfg)}},
        {GRPC_ARG_INTEGER,
         GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
         {.integer = wf_config_send_limit(cfg)}},
        /* Metadata likewise (rpc_interceptors.h): ours is refused with a
         * reason on a connection that stays usable. */
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_METADATA_SIZE, {.integer = WF_RPC_CORE_MAX_METADATA_BYTES}},
        /* Behind a mesh: ping idle connections, let clients ping every 10 s,
         * and recycle connections every 5 minutes so that clients
         * re-resolve and load spreads over new replicas. */
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = 60000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 20000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, {.integer = 1}},
        {GRPC_ARG_INTEGER,
         GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
         {.integer = 10000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_AGE_MS, {.integer = 300000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, {.integer = 30000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_CONNECTION_IDLE_MS, {.integer = 900000}},
    };
    grpc_channel_args cargs = {sizeof args / sizeof args[0], args};
    srv->server = grpc_server_create(&cargs, NULL);

    for (size_t i = 0; i < srv->nmethods; i++) {
        grpc_server_register_method_payload_handling ph =
            srv->methods[i].kind == WF_RPC_REFLECTION ? GRPC_SRM_PAYLOAD_NONE
                                                      : GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER;
        srv->methods[i].handle =
            grpc_server_register_method(srv->server, srv->methods[i].path, NULL, ph, 0);
        if (srv->methods[i].handle == NULL) {
            wf_error_set(err, WF_E_INTERNAL, "could not register method %s", srv->methods[i].path);
            destroy_unstarted(srv);
            return NULL;
        }
    }

    /* A spare pool thread for each call the bulkheads let in at once. */
    int limits[WF_BULKHEAD_COUNT_] = {
        [WF_BULKHEAD_DIAGRAM] = cfg->bulkhead_diagram,
        [WF_BULKHEAD_COMPILE] = cfg->bulkhead_compile,
        [WF_BULKHEAD_EXPR] = cfg->bulkhead_expr,
    };
    wf_bulkhead_configure(limits);
    srv->nworkers = cfg->threads;
    srv->nspares = cfg->bulkhead_diagram + cfg->bulkhead_compile + cfg->bulkhead_expr;
    srv->max_queued = cfg->max_queued_calls;
    srv->workers = calloc((size_t)wf_rpc__nthreads(srv), sizeof *srv->workers);
    if (srv->workers == NULL) {
        srv->nworkers = srv->nspares = 0;
        wf_error_nomem(err);
        destroy_unstarted(srv);
        return NULL;
    }
    struct queue *qs[] = {&srv->pool, &srv->health, &srv->accept};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        qs[i]->srv = srv;
        qs[i]->cq = grpc_completion_queue_create_for_next(NULL);
        qs[i]->notify = qs[i]->cq;
        grpc_server_register_completion_queue(srv->server, qs[i]->cq, NULL);
    }
    /* The pool's calls arrive on the accept queue, run on the pool's. */
    srv->pool.notify = srv->accept.cq;
    int npool = srv->nworkers + srv->nspares;
    for (int i = 0; i < npool; i++)
        srv->workers[i].q = &srv->pool;
    srv->workers[npool].q = &srv->health;
    srv->workers[npool + 1].q = &srv->accept;

    grpc_server_credentials *cr = server_credentials(cfg, err);
    if (cr == NULL) {
        destroy_unstarted(srv);
        return NULL;
    }
    srv->port = grpc_server_add_http2_port(srv->server, cfg->addr, cr);
    grpc_server_credentials_release(cr);
    if (srv->port == 0) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "could not listen on %s (address in use?)",
                     cfg->addr);
        destroy_unstarted(srv);
        return NULL;
    }
    grpc_server_start(srv->server);

    atomic_store(&srv->ready, wf_app_ready(app) ? 1 : 0);
    wf_app_set_waker(app, wf_rpc__wake_streams, srv);
    atomic_store(&srv->accepting, 1);
    for (int k = 0; k < SLOTS_PER_METHOD; k++) {
        for (size_t m = 0; m < srv->nmethods; m++) {
            const wf_rpc_method *mm = &srv->methods[m];
            int health = mm->kind == WF_RPC_HEALTH_CHECK || mm->kind == WF_RPC_HEALTH_WATCH;
            wf_rpc__post_slot(health ? &srv->health : &srv->pool, mm);
        }
        wf_rpc__post_slot(&srv->pool, NULL);
    }
    for (int i = 0; i < wf_rpc__nthreads(srv); i++)
        pthread_create(&srv->workers[i].thread, NULL, wf_rpc__worker_main, &srv->workers[i]);
    if (pthread_create(&srv->monitor, NULL, wf_rpc__health_monitor, srv) == 0)
        srv->monitor_started = 1;
    return srv;
}

void
wf_rpc_server_render_metrics(wf_rpc_server *srv, FILE *out)
{
    wf_rpc_metrics_render(srv->metrics, out);
}

int
wf_rpc_server_port(const wf_rpc_server *srv)
{
    return srv->port;
}

void
wf_rpc_server_drain(wf_rpc_server *srv)
{
    pthread_mutex_lock(&srv->hmu);
    atomic_store(&srv->draining, 1);
    const char *health = TOPIC_HEALTH;
    wf_rpc__wake_streams_locked(srv, &health, 1);
    pthread_mutex_unlock(&srv->hmu);
}

void
wf_rpc_server_stop(wf_rpc_server *srv, int grace_ms)
{
    if (srv == NULL)
        return;
    wf_rpc_server_drain(srv);

    /* No wake-up from store notifications from now on: they would reach a
     * server that is going away. */
    wf_app_set_waker(srv->app, NULL, NULL);

    /* Stop the monitor first: it is the other thread that starts batches. */
    pthread_mutex_lock(&srv->hmu);
    srv->monitor_stop = 1;
    pthread_cond_signal(&srv->hcond);
    pthread_mutex_unlock(&srv->hmu);
    if (srv->monitor_started)
        pthread_join(srv->monitor, NULL);

    /* 1. No new calls; GOAWAY; unmatched slots come back with ok=0. */
    atomic_store(&srv->accepting, 0);
    grpc_completion_queue *scq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_server_shutdown_and_notify(srv->server, scq, srv);

    /* Open streams would hold the shutdown for the whole grace period: end
     * them now with a retryable status (health watchers already saw
     * NOT_SERVING; event watchers resume elsewhere from their last
     * sequence). */
    pthread_mutex_lock(&srv->hmu);
    for (struct call *c = srv->streams; c != NULL; c = c->snext)
        grpc_call_cancel_with_status(c->call, GRPC_STATUS_UNAVAILABLE, "server is shutting down",
                                     NULL);
    pthread_mutex_unlock(&srv->hmu);

    /* 2. Let calls in flight finish within the grace period, then cancel. */
    gpr_timespec until =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(grace_ms, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_pluck(scq, srv, until, NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
        WF_LOG(WF_LOG_WARN, "shutdown", "grace period over: cancelling the remaining calls");
        grpc_server_cancel_all_calls(srv->server);
        grpc_completion_queue_pluck(scq, srv, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    }

    /* 3. Quiesce: after this no thread starts a batch. */
    pthread_mutex_lock(&srv->hmu);
    srv->hquiesced = 1;
    pthread_mutex_unlock(&srv->hmu);
    atomic_store(&srv->quiescing, 1);
    pthread_mutex_lock(&srv->seat_mu);
    pthread_cond_broadcast(&srv->seat_cv); /* spares waiting for a seat */
    pthread_mutex_unlock(&srv->seat_mu);
    for (int i = 0; i < wf_rpc__nthreads(srv); i++)
        while (!atomic_load(&srv->workers[i].quiesced)) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }

    /* 4. Shut the queues down; the threads drain them and free what is
     * left. */
    grpc_completion_queue_shutdown(srv->pool.cq);
    grpc_completion_queue_shutdown(srv->health.cq);
    grpc_completion_queue_shutdown(srv->accept.cq);
    for (int i = 0; i < wf_rpc__nthreads(srv); i++)
        pthread_join(srv->workers[i].thread, NULL);
    grpc_server_destroy(srv->server);
    grpc_completion_queue_destroy(srv->pool.cq);
    grpc_completion_queue_destroy(srv->health.cq);
    grpc_completion_queue_destroy(srv->accept.cq);
    grpc_completion_queue_shutdown(scq);
    grpc_completion_queue_pluck(scq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_destroy(scq);

    free_server(srv);
}
