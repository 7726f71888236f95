/*
 * rpc_health.c: the grpc.health.v1.Health service: the status of a
 * service name, the monitor thread that probes the store and times
 * wake-ups, and waking parked server streams (rpc_server.c explains the
 * design).
 */
#include "rpc_server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "rpc_status.h"
#include "rpc_wire.h"
#include "wf_log.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

/* ---- health --------------------------------------------------------------- */

enum health_service
wf_rpc__health_service_of(const char *name)
{
    if (name[0] == '\0' || strcmp(name, "workflow.v1.WorkflowService") == 0 ||
        strcmp(name, "readiness") == 0)
        return HS_READINESS;
    if (strcmp(name, "liveness") == 0)
        return HS_LIVENESS;
    return HS_UNKNOWN;
}

/* Current status of a service. Readiness and drain are atomics, so this
 * needs no lock and may run under a call's mutex. */
int
wf_rpc__health_status(wf_rpc_server *srv, enum health_service s)
{
    switch (s) {
    case HS_LIVENESS:
        return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    case HS_READINESS:
        return atomic_load(&srv->ready) && !atomic_load(&srv->draining)
                   ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                   : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
    case HS_UNKNOWN:
        break;
    }
    return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
}

/* Wakes c (caller holds c->mu): a step in progress will run again; a parked
 * call gets an empty batch on its own queue. */
static void
wake_call_locked(struct call *c)
{
    if (c->pulling) {
        c->rewake = 1;
    } else if (!c->closed && !c->ended && !c->sending && !c->wake_inflight) {
        if (wf_rpc__start_batch_locked(c, NULL, 0, &c->t_wake))
            c->wake_inflight = 1;
    }
}

static const char *const health_topic = TOPIC_HEALTH;

static int
topic_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether a stream that listens to want is woken by topics[0..n), sorted
 * by strcmp (wf_app_wake_topics): want NULL listens to everything; a topic
 * ending in ':' wakes every topic it begins ("root:" wakes the waiters of
 * every root). */
static int
topic_wakes(const char *want, const char *const *topics, size_t n, int prefixes)
{
    if (want == NULL || bsearch(&want, topics, n, sizeof *topics, topic_cmp) != NULL)
        return 1;
    for (size_t i = 0; prefixes && i < n; i++) {
        size_t len = strlen(topics[i]);
        if (len > 0 && topics[i][len - 1] == ':' && strncmp(want, topics[i], len) == 0)
            return 1;
    }
    return 0;
}

/* Wakes the streams listening to one of topics[0..n), sorted (topics NULL:
 * all). Caller holds hmu. */
void
wf_rpc__wake_streams_locked(wf_rpc_server *srv, const char *const *topics, size_t n)
{
    if (srv->hquiesced)
        return;
    int prefixes = 0;
    for (size_t i = 0; topics != NULL && i < n && !prefixes; i++) {
        size_t len = strlen(topics[i]);
        prefixes = len > 0 && topics[i][len - 1] == ':';
    }
    for (struct call *c = srv->streams; c != NULL; c = c->snext) {
        if (topics != NULL && !topic_wakes(atomic_load(&c->topic), topics, n, prefixes))
            continue;
        pthread_mutex_lock(&c->mu);
        wake_call_locked(c);
        pthread_mutex_unlock(&c->mu);
    }
}

/* Wakes the streams whose timed wake-up is due. Caller holds hmu. */
static void
wake_due_locked(wf_rpc_server *srv, int64_t now)
{
    if (srv->hquiesced)
        return;
    for (struct call *c = srv->streams; c != NULL; c = c->snext) {
        pthread_mutex_lock(&c->mu);
        if (c->wake_at != 0 && c->wake_at <= now) {
            c->wake_at = 0;
            wake_call_locked(c);
        }
        pthread_mutex_unlock(&c->mu);
    }
}

void
wf_rpc__wake_streams(void *arg, const char *const *topics, size_t n)
{
    wf_rpc_server *srv = arg;
    pthread_mutex_lock(&srv->hmu);
    wf_rpc__wake_streams_locked(srv, topics, n);
    pthread_mutex_unlock(&srv->hmu);
}

/* The server's clock thread: probes the store's readiness every second
 * (waking health watchers on a change) and fires timed wake-ups of long
 * polls every TIMER_TICK_MS. */
void *
wf_rpc__health_monitor(void *arg)
{
    wf_rpc_server *srv = arg;
    int64_t next_probe = 0;
    pthread_mutex_lock(&srv->hmu);
    while (!srv->monitor_stop) {
        int64_t now = wf_mono_ms();
        if (now >= next_probe) {
            pthread_mutex_unlock(&srv->hmu);
            int ready = wf_app_ready(srv->app) ? 1 : 0;
            pthread_mutex_lock(&srv->hmu);
            if (ready != atomic_load(&srv->ready)) {
                atomic_store(&srv->ready, ready);
                WF_LOG(WF_LOG_INFO, "health", "store is %s", ready ? "ready" : "not ready");
                wf_rpc__wake_streams_locked(srv, &health_topic, 1);
            }
            next_probe = now + HEALTH_POLL_MS;
        }
        wake_due_locked(srv, now);
        if (srv->monitor_stop)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TIMER_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->hcond, &srv->hmu, &until);
    }
    pthread_mutex_unlock(&srv->hmu);
    return NULL;
}

static wf_stream_step
health_watch_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg,
                  wf_error *err)
{
    (void)call;
    (void)err;
    struct health_watch *hw = state;
    int st = wf_rpc__health_status(hw->srv, hw->service);
    if (st == hw->sent)
        return WF_STREAM_WAIT;
    Grpc__Health__V1__HealthCheckResponse *resp = wf_arena_alloc(scratch, sizeof *resp);
    if (resp == NULL)
        return WF_STREAM_WAIT; /* try again at the next wake-up */
    grpc__health__v1__health_check_response__init(resp);
    resp->status = st;
    hw->sent = st;
    *msg = &resp->base;
    return WF_STREAM_MESSAGE;
}

const wf_stream_ops wf_rpc__health_watch_ops = {NULL, health_watch_next, NULL, false};
