/*
 * rpc_server: grpc core server, workers, call state machine, health service
 * and shutdown.
 *
 * DESIGN
 * - Two completion queues. The pool queue holds the request slots of every
 *   method but the Health service's, plus the catch-all; N worker threads
 *   all wait on it, so whichever thread is idle takes the next event, and a
 *   handler that blocks holds only its own thread. (With a queue per worker,
 *   grpc's matcher hands a connection's next call to the first queue that
 *   has a slot for the method, which can be the queue of a worker stuck in
 *   a handler: calls of one connection then wait for each other.) The
 *   health queue holds only the grpc.health.v1.Health slots and has a
 *   thread of its own, so Check and Watch answer however busy the pool is.
 * - A slot is re-posted when its call arrives, before the handler runs: the
 *   slots limit only how many arrived calls wait for a thread, not how many
 *   run.
 * - A unary handler runs synchronously on the thread that took the call and
 *   ends with one batch {initial metadata, message, status, RECV_CLOSE}.
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
#include "rpc_server.h"

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
#include "wf_log.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define POLL_MS 200
/* Request slots per method (and catch-all) on its queue. They are re-posted
 * as calls arrive, so they bound only the arrived calls that wait for a
 * free thread; calls beyond that wait in grpc's own queue. */
#define SLOTS_PER_METHOD 4

/* The FileDescriptorSet of the API, embedded at build time (descriptor_set.c). */
extern const unsigned char wf_descriptor_set[];
extern const size_t wf_descriptor_set_len;
#define HEALTH_POLL_MS 1000 /* store readiness probe */
#define TIMER_TICK_MS 100   /* precision of timed wake-ups (long polls) */
#define TOPIC_HEALTH "health"

enum tag_kind { T_NEW, T_BATCH, T_CLOSE, T_WAKE, T_RECV };

struct call;

struct tag {
    struct call *call;
    enum tag_kind kind;
};

/* A completion queue and what its calls need to know about it. */
struct queue {
    wf_rpc_server *srv;
    grpc_completion_queue *cq;
};

struct worker {
    struct queue *q;
    pthread_t thread;
    atomic_int quiesced; /* set by the thread itself between two events, once quiescing */
};

/* Health of one service name as the Health service reports it. */
enum health_service { HS_READINESS, HS_LIVENESS, HS_UNKNOWN };

struct call {
    struct queue *q; /* where its slot was posted and its events come back */
    const wf_rpc_method *m; /* NULL for the catch-all slot */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_call_details details; /* catch-all only */
    grpc_byte_buffer *payload; /* registered methods only */
    grpc_byte_buffer *send;    /* the message in flight, one per send */
    struct tag t_new, t_batch, t_close, t_wake, t_recv;
    grpc_byte_buffer *recv;    /* bidi streams: the message just received */
    int cancelled; /* out-param of RECV_CLOSE_ON_SERVER */

    pthread_mutex_t mu; /* guards the fields below and start_batch */
    int pending;        /* outstanding tags */
    wf_arena *arena;    /* request-scoped memory, created when the call arrives */
    int64_t start_us; /* wall clock, for durations in logs and metrics */
    wf_rpc_ctx ictx; /* what the interceptors established */

    /* Server stream state. */
    const wf_stream_ops *sops; /* non-NULL for a stream */
    void *sstate;
    wf_call scall;     /* the handler's view of the call, kept for the stream's life */
    int closed;        /* RECV_CLOSE came back: the client is gone */
    int sending;       /* a SEND_MESSAGE is in flight */
    int started;       /* initial metadata sent (streams; finish_with sets it too) */
    int ended;         /* the final status was sent */
    int pulling;       /* the worker is asking the stream for its next step */
    int rewake;        /* a wake-up arrived while pulling */
    int wake_inflight; /* an empty batch (T_WAKE) is outstanding */
    int64_t wake_at;   /* copy of scall.wake_at_ms taken under mu after each step */
    int done;          /* logged and counted: exactly once per call */
    struct call *snext, *sprev;
    int on_list;
};

struct wf_rpc_server {
    wf_app *app;
    grpc_server *server;
    wf_rpc_method *methods;
    size_t nmethods;
    struct queue pool;   /* every method but Health, and the catch-all */
    struct queue health; /* grpc.health.v1.Health only */
    struct worker *workers; /* nworkers on the pool queue, then one on the health queue */
    int nworkers;
    int port;
    atomic_int accepting; /* workers re-post slots while set */
    atomic_int quiescing; /* no batch is started any more; threads acknowledge */

    pthread_mutex_t hmu; /* health monitor state and the stream list */
    pthread_cond_t hcond;
    atomic_int ready;    /* the store answered at the last probe */
    atomic_int draining; /* shutdown has begun: NOT_SERVING */
    int hquiesced;    /* no more wake-ups may be started */
    int monitor_stop;
    struct call *streams; /* open server streams */
    wf_rpc_metrics *metrics;
    wf_reflection *reflection;
    pthread_t monitor;
    int monitor_started;
};

/* ---- call contexts ------------------------------------------------------ */

static void
call_free(struct call *c)
{
    grpc_metadata_array_destroy(&c->md);
    if (c->m == NULL)
        grpc_call_details_destroy(&c->details);
    if (c->payload != NULL)
        grpc_byte_buffer_destroy(c->payload);
    if (c->send != NULL)
        grpc_byte_buffer_destroy(c->send);
    if (c->recv != NULL)
        grpc_byte_buffer_destroy(c->recv);
    if (c->sops != NULL && c->sops->close != NULL)
        c->sops->close(c->sstate);
    if (c->call != NULL)
        grpc_call_unref(c->call);
    wf_arena_free(c->arena);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Posts one request slot for method m (NULL = catch-all) on queue q. */
static void
post_slot(struct queue *q, const wf_rpc_method *m)
{
    struct call *c = calloc(1, sizeof *c);
    if (c == NULL) {
        WF_LOG(WF_LOG_ERROR, "rpc_slot", "out of memory posting a request slot");
        return;
    }
    c->q = q;
    c->m = m;
    pthread_mutex_init(&c->mu, NULL);
    c->t_new = (struct tag){c, T_NEW};
    c->t_batch = (struct tag){c, T_BATCH};
    c->t_close = (struct tag){c, T_CLOSE};
    c->t_wake = (struct tag){c, T_WAKE};
    c->t_recv = (struct tag){c, T_RECV};
    grpc_metadata_array_init(&c->md);
    grpc_call_error rc;
    if (m != NULL) {
        /* Bidi methods read their messages themselves (no initial payload). */
        grpc_byte_buffer **payload = m->kind == WF_RPC_REFLECTION ? NULL : &c->payload;
        rc = grpc_server_request_registered_call(q->srv->server, m->handle, &c->call, &c->deadline,
                                                 &c->md, payload, q->cq, q->cq, &c->t_new);
    } else {
        grpc_call_details_init(&c->details);
        rc = grpc_server_request_call(q->srv->server, &c->call, &c->details, &c->md, q->cq, q->cq,
                                      &c->t_new);
    }
    if (rc != GRPC_CALL_OK) {
        WF_LOG(WF_LOG_ERROR, "rpc_slot", "could not post a request slot (grpc error %d)", (int)rc);
        call_free(c);
        return;
    }
    c->pending = 1;
}

/* Starts a batch on c under its mutex; counts the tag when it was started.
 * Never starts anything once the server is quiescing. */
static int
start_batch_locked(struct call *c, const grpc_op *ops, size_t nops, struct tag *tag)
{
    if (atomic_load(&c->q->srv->quiescing))
        return 0;
    grpc_call_error rc = grpc_call_start_batch(c->call, ops, nops, tag, NULL);
    if (rc != GRPC_CALL_OK) {
        WF_LOG(WF_LOG_ERROR, "rpc_batch", "could not start a batch (grpc error %d)", (int)rc);
        return 0;
    }
    c->pending++;
    return 1;
}

/* ---- protobuf <-> byte buffers ------------------------------------------ */

/* Decodes the request into the call's arena: WF_OK with *msg, or
 * INVALID_ARGUMENT for malformed bytes, excessive nesting or non-UTF-8
 * strings (checked before protobuf-c, which trusts both; *bad then names
 * the string's field). */
static wf_code
unpack(struct call *c, const ProtobufCMessageDescriptor *d, ProtobufCMessage **msg,
       wf_violation *bad, wf_error *err)
{
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, c->payload))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "the request could not be read");
    grpc_slice all = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    const uint8_t *bytes = GRPC_SLICE_START_PTR(all);
    size_t len = GRPC_SLICE_LENGTH(all);
    wf_code rc = wf_rpc_wire_check(d, bytes, len, WF_RPC_MAX_DEPTH, c->arena, bad, err);
    if (rc == WF_OK) {
        ProtobufCAllocator a = wf_arena_pb_allocator(c->arena);
        *msg = protobuf_c_message_unpack(d, &a, len, bytes);
        if (*msg == NULL)
            rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "the request is not a valid %s message",
                              d->name);
    }
    grpc_slice_unref(all);
    return rc;
}

static grpc_byte_buffer *
pack(const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    grpc_slice s = grpc_slice_malloc(n);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

/* ---- finishing a call ----------------------------------------------------- */

static const char *
call_path(struct call *c)
{
    if (c->m != NULL)
        return c->m->path;
    char *p = wf_arena_strndup(c->arena, (const char *)GRPC_SLICE_START_PTR(c->details.method),
                               GRPC_SLICE_LENGTH(c->details.method));
    return p != NULL ? p : "?";
}

static size_t
method_index(const struct call *c)
{
    return c->m != NULL ? (size_t)(c->m - c->q->srv->methods) : c->q->srv->nmethods;
}

/* The end of a call, whatever its outcome: one access-log line and the
 * handled counters. Runs exactly once per call. */
static void
call_done(struct call *c, grpc_status_code status, wf_code code)
{
    if (c->done)
        return;
    c->done = 1;
    double secs = (double)(wf_now_us() - c->start_us) / 1e6;
    wf_rpc_metrics_handled(c->q->srv->metrics, method_index(c), status, secs);
    wf_log_level lvl = code == WF_E_INTERNAL ? WF_LOG_ERROR : WF_LOG_INFO;
    if (lvl < wf_log_threshold)
        return;
    wf_log_line l;
    wf_log_line_begin(&l, lvl, "rpc");
    wf_log_line_str(&l, "method", call_path(c));
    wf_log_line_str(&l, "code", wf_rpc_code_name(status));
    if (code != WF_OK)
        wf_log_line_str(&l, "reason", wf_code_reason(code));
    wf_log_line_double(&l, "dur_ms", secs * 1000.0);
    wf_log_line_str(&l, "tenant", c->ictx.tenant);
    wf_log_line_str(&l, "actor", c->ictx.actor);
    wf_log_line_str(&l, "key_id", c->ictx.key_id);
    wf_log_line_str(&l, "request_id", c->ictx.request_id);
    wf_log_line_str(&l, "trace_id", c->ictx.trace_id);
    wf_log_line_end(&l);
}

/* Fills the response's initial metadata: x-request-id echoes the request id
 * (sent or generated). Returns the count; *rid must be unref'd after the
 * batch has started. */
static size_t
initial_metadata(struct call *c, grpc_metadata md[1], grpc_slice *rid)
{
    *rid = grpc_empty_slice();
    if (c->ictx.request_id == NULL)
        return 0;
    *rid = grpc_slice_from_copied_string(c->ictx.request_id);
    md[0].key = grpc_slice_from_static_string("x-request-id");
    md[0].value = *rid;
    return 1;
}

/* Fills a SEND_STATUS_FROM_SERVER op: the status, its message and, for a
 * core error, the google.rpc.Status trailer. *msg and *details must be
 * unref'd after the batch has started. */
static void
status_op(struct call *c, grpc_op *op, grpc_status_code status, wf_code code, const char *message,
          const wf_violation *violations, size_t nviolations, grpc_slice *msg,
          grpc_metadata trailer[1], grpc_slice *details)
{
    *msg = grpc_empty_slice();
    *details = grpc_empty_slice();
    op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    op->data.send_status_from_server.status = status;
    if (status != GRPC_STATUS_OK) {
        *msg = grpc_slice_from_copied_string(message);
        op->data.send_status_from_server.status_details = msg;
    }
    if (code == WF_OK)
        return;
    uint8_t *bytes = NULL;
    size_t len = wf_rpc_status_details(c->arena, code, message, violations, nviolations, &bytes);
    if (len == 0)
        return;
    *details = grpc_slice_from_copied_buffer((const char *)bytes, len);
    trailer[0].key = grpc_slice_from_static_string("grpc-status-details-bin");
    trailer[0].value = *details;
    op->data.send_status_from_server.trailing_metadata_count = 1;
    op->data.send_status_from_server.trailing_metadata = trailer;
}

/* Sends the final batch of a unary call: the response when status is OK,
 * otherwise the status with its message and, when code is a core error,
 * the google.rpc.Status trailer. */
static void
finish_with(struct call *c, const ProtobufCMessage *resp, grpc_status_code status, wf_code code,
            const char *message, const wf_violation *violations, size_t nviolations)
{
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    size_t n = 0;

    grpc_metadata initial[1];
    grpc_slice rid = grpc_empty_slice();
    if (!c->started) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = initial_metadata(c, initial, &rid);
        ops[n].data.send_initial_metadata.metadata = initial;
        n++;
        c->started = 1;
    }

    if (status == GRPC_STATUS_OK && resp != NULL) {
        c->send = pack(resp);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->send;
        n++;
    }

    grpc_slice msg, details;
    grpc_metadata trailer[1];
    status_op(c, &ops[n++], status, code, message, violations, nviolations, &msg, trailer,
              &details);

    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
    n++;

    /* Counted and logged before the answer can reach the client: a caller
     * that reads /metrics right after its answer sees its call. */
    call_done(c, status, code);
    pthread_mutex_lock(&c->mu);
    start_batch_locked(c, ops, n, &c->t_batch);
    pthread_mutex_unlock(&c->mu);
    /* Core took its own references during start_batch. */
    grpc_slice_unref(rid);
    grpc_slice_unref(msg);
    grpc_slice_unref(details);
}

static void
finish_unary(struct call *c, const ProtobufCMessage *resp, const wf_error *err,
             const wf_violation *violations, size_t nviolations)
{
    finish_with(c, resp, wf_rpc_status_code(err->code), err->code, err->msg, violations,
                nviolations);
}

/* ---- health --------------------------------------------------------------- */

static enum health_service
health_service_of(const char *name)
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
static int
health_status(wf_rpc_server *srv, enum health_service s)
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
        if (start_batch_locked(c, NULL, 0, &c->t_wake))
            c->wake_inflight = 1;
    }
}

/* Wakes the streams listening to topic (NULL: all). Caller holds hmu. */
static void
wake_streams_locked(wf_rpc_server *srv, const char *topic)
{
    if (srv->hquiesced)
        return;
    for (struct call *c = srv->streams; c != NULL; c = c->snext) {
        const char *want = c->scall.wake_topic;
        if (topic != NULL && want != NULL && strcmp(topic, want) != 0)
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

static void
wake_streams(void *arg, const char *topic)
{
    wf_rpc_server *srv = arg;
    pthread_mutex_lock(&srv->hmu);
    wake_streams_locked(srv, topic);
    pthread_mutex_unlock(&srv->hmu);
}

/* The server's clock thread: probes the store's readiness every second
 * (waking health watchers on a change) and fires timed wake-ups of long
 * polls every TIMER_TICK_MS. */
static void *
health_monitor(void *arg)
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
                wake_streams_locked(srv, TOPIC_HEALTH);
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

/* Health Watch as a stream: a message whenever the status differs from
 * the last one sent. */
struct health_watch {
    wf_rpc_server *srv;
    enum health_service service;
    int sent; /* last status sent, -1 before the first */
};

static wf_stream_step
health_watch_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg,
                  wf_error *err)
{
    (void)call;
    (void)err;
    struct health_watch *hw = state;
    int st = health_status(hw->srv, hw->service);
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

static const wf_stream_ops health_watch_ops = {NULL, health_watch_next, NULL, false};

static void
stream_unlist(struct call *c)
{
    wf_rpc_server *srv = c->q->srv;
    pthread_mutex_lock(&srv->hmu);
    if (c->on_list) {
        if (c->sprev != NULL)
            c->sprev->snext = c->snext;
        else
            srv->streams = c->snext;
        if (c->snext != NULL)
            c->snext->sprev = c->sprev;
        c->on_list = 0;
    }
    pthread_mutex_unlock(&srv->hmu);
}

/* Sends a stream's next message, or its final status, or parks it. Runs on
 * the stream's worker, without c->mu held on entry. */
static void
stream_pull(struct call *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->pulling || c->sending || c->closed || c->ended ||
        atomic_load(&c->q->srv->quiescing)) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->pulling = 1;
    for (;;) {
        c->rewake = 0;
        pthread_mutex_unlock(&c->mu);
        wf_arena *scratch = wf_arena_new();
        ProtobufCMessage *msg = NULL;
        wf_error err;
        wf_error_clear(&err);
        wf_stream_step step = WF_STREAM_WAIT;
        if (scratch != NULL)
            step = c->sops->next(&c->scall, c->sstate, scratch, &msg, &err);
        grpc_byte_buffer *bb = step == WF_STREAM_MESSAGE ? pack(msg) : NULL;
        wf_arena_free(scratch);
        pthread_mutex_lock(&c->mu);
        c->wake_at = step == WF_STREAM_WAIT ? c->scall.wake_at_ms : 0;
        if (c->closed) {
            if (bb != NULL)
                grpc_byte_buffer_destroy(bb);
            break;
        }
        if (step == WF_STREAM_WAIT) {
            if (c->rewake)
                continue;
            break;
        }
        grpc_op ops[3];
        memset(ops, 0, sizeof ops);
        size_t n = 0;
        grpc_metadata initial[1];
        grpc_slice rid = grpc_empty_slice();
        /* A long poll's message is its response: status OK goes with it. */
        int last = step == WF_STREAM_END || c->sops->unary;
        if (!c->started) {
            ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
            ops[n].data.send_initial_metadata.count = initial_metadata(c, initial, &rid);
            ops[n].data.send_initial_metadata.metadata = initial;
            n++;
        }
        grpc_slice smsg = grpc_empty_slice(), sdetails = grpc_empty_slice();
        grpc_metadata trailer[1];
        if (step == WF_STREAM_MESSAGE) {
            if (c->send != NULL)
                grpc_byte_buffer_destroy(c->send);
            c->send = bb;
            ops[n].op = GRPC_OP_SEND_MESSAGE;
            ops[n].data.send_message.send_message = c->send;
            n++;
        }
        if (last)
            status_op(c, &ops[n++], wf_rpc_status_code(err.code), err.code, err.msg, NULL, 0,
                      &smsg, trailer, &sdetails);
        if (start_batch_locked(c, ops, n, &c->t_batch)) {
            c->started = 1;
            if (last)
                c->ended = 1;
            else
                c->sending = 1;
        }
        if (last)
            call_done(c, wf_rpc_status_code(err.code), err.code);
        grpc_slice_unref(rid);
        grpc_slice_unref(smsg);
        grpc_slice_unref(sdetails);
        break;
    }
    c->pulling = 0;
    pthread_mutex_unlock(&c->mu);
}

/* Turns the call into a stream: lists it for wake-ups, learns about the
 * client going away through RECV_CLOSE, and pulls the first message. */
static void
stream_start(struct call *c, const wf_stream_ops *ops, void *state)
{
    wf_rpc_server *srv = c->q->srv;
    c->sops = ops;
    c->sstate = state;
    /* On the list first, so no wake-up can slip between the first pull and
     * the registration. */
    pthread_mutex_lock(&srv->hmu);
    c->snext = srv->streams;
    if (c->snext != NULL)
        c->snext->sprev = c;
    srv->streams = c;
    c->on_list = 1;
    pthread_mutex_unlock(&srv->hmu);

    /* Headers go out at once, so the client knows the stream is accepted
     * even when there is nothing to send yet; the first pull follows when
     * they are out (T_BATCH). */
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    grpc_op hop;
    memset(&hop, 0, sizeof hop);
    grpc_metadata initial[1];
    grpc_slice rid;
    hop.op = GRPC_OP_SEND_INITIAL_METADATA;
    hop.data.send_initial_metadata.count = initial_metadata(c, initial, &rid);
    hop.data.send_initial_metadata.metadata = initial;
    pthread_mutex_lock(&c->mu);
    int refused = !start_batch_locked(c, &op, 1, &c->t_close);
    if (refused)
        c->closed = 1;
    else if (start_batch_locked(c, &hop, 1, &c->t_batch))
        c->started = c->sending = 1;
    pthread_mutex_unlock(&c->mu);
    grpc_slice_unref(rid);
    if (refused)
        stream_unlist(c);
}

/* ---- server reflection (bidi) ---------------------------------------------- */

/* One turn of a reflection stream, on its worker: answer the message just
 * received and ask for the next one in the same batch; end with OK when the
 * client half-closes. */
static void
reflection_step(struct call *c, int ok)
{
    wf_rpc_server *srv = c->q->srv;
    grpc_byte_buffer *bb = c->recv;
    c->recv = NULL;
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    if (!ok) {
        /* The stream broke (client gone, deadline, shutdown): only learn
         * how it ended. */
        if (bb != NULL)
            grpc_byte_buffer_destroy(bb);
        ops[0].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[0].data.recv_close_on_server.cancelled = &c->cancelled;
        pthread_mutex_lock(&c->mu);
        start_batch_locked(c, ops, 1, &c->t_close);
        pthread_mutex_unlock(&c->mu);
        call_done(c, GRPC_STATUS_CANCELLED, WF_E_CANCELLED);
        return;
    }
    if (bb == NULL) {
        finish_with(c, NULL, GRPC_STATUS_OK, WF_OK, "", NULL, 0);
        return;
    }
    wf_arena *scratch = wf_arena_new();
    Grpc__Reflection__V1__ServerReflectionResponse *resp = NULL;
    if (scratch != NULL) {
        grpc_byte_buffer_reader r;
        ProtobufCMessage *req = NULL;
        if (grpc_byte_buffer_reader_init(&r, bb)) {
            grpc_slice all = grpc_byte_buffer_reader_readall(&r);
            grpc_byte_buffer_reader_destroy(&r);
            ProtobufCAllocator a = wf_arena_pb_allocator(scratch);
            req = protobuf_c_message_unpack(&grpc__reflection__v1__server_reflection_request__descriptor,
                                            &a, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
            grpc_slice_unref(all);
        }
        if (req != NULL)
            resp = wf_reflection_answer(srv->reflection, (const void *)req, scratch);
    }
    grpc_byte_buffer_destroy(bb);
    if (resp == NULL) {
        wf_arena_free(scratch);
        wf_error err;
        wf_error_set(&err, WF_E_INVALID_ARGUMENT, "the request is not a valid %s message",
                     grpc__reflection__v1__server_reflection_request__descriptor.name);
        finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (c->send != NULL)
        grpc_byte_buffer_destroy(c->send);
    c->send = pack(&resp->base);
    wf_arena_free(scratch);
    ops[0].op = GRPC_OP_SEND_MESSAGE;
    ops[0].data.send_message.send_message = c->send;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    pthread_mutex_lock(&c->mu);
    start_batch_locked(c, ops, 2, &c->t_recv);
    pthread_mutex_unlock(&c->mu);
}

static void
reflection_start(struct call *c)
{
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    grpc_metadata initial[1];
    grpc_slice rid;
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = initial_metadata(c, initial, &rid);
    ops[0].data.send_initial_metadata.metadata = initial;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    pthread_mutex_lock(&c->mu);
    if (start_batch_locked(c, ops, 2, &c->t_recv))
        c->started = 1;
    pthread_mutex_unlock(&c->mu);
    grpc_slice_unref(rid);
}

/* ---- dispatch ------------------------------------------------------------- */

/* wf_call.status_code: the one mapping of rpc_status.c. */
static int
status_code_of(wf_code code)
{
    return (int)wf_rpc_status_code(code);
}

static void
dispatch(struct call *c)
{
    wf_rpc_server *srv = c->q->srv;
    const wf_config *cfg = srv->app->cfg;
    wf_error err;
    wf_error_clear(&err);
    c->start_us = wf_now_us();
    wf_rpc_metrics_started(srv->metrics, method_index(c));
    c->arena = wf_arena_new();
    if (c->arena == NULL) {
        /* Nothing can be built without memory: cancel with a static status. */
        grpc_call_cancel_with_status(c->call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
                                     NULL);
        return;
    }
    c->ictx.cfg = cfg;
    c->ictx.md = &c->md;
    c->ictx.arena = c->arena;
    c->ictx.deadline = c->m != NULL ? c->deadline : c->details.deadline;
    c->ictx.public_method = c->m == NULL || c->m->kind != WF_RPC_WORKFLOW;
    c->ictx.route_flags = c->m != NULL && c->m->route != NULL ? c->m->route->flags : 0;

    if (c->m == NULL) {
        wf_rpc_intercept(&c->ictx, &err); /* for the request id in the log only */
        wf_error_set(&err, WF_E_UNIMPLEMENTED, "method %s is not served here", call_path(c));
        finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (wf_rpc_intercept(&c->ictx, &err) != WF_OK) {
        finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (c->m->kind == WF_RPC_REFLECTION) {
        reflection_start(c);
        return;
    }
    if (c->payload == NULL) {
        wf_error_set(&err, WF_E_INVALID_ARGUMENT, "the request message is missing");
        finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (grpc_byte_buffer_length(c->payload) > (size_t)cfg->max_message_bytes) {
        wf_error_set(&err, WF_E_TOO_LARGE, "the request is larger than %d bytes",
                     cfg->max_message_bytes);
        finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    ProtobufCMessage *req = NULL;
    wf_violation bad;
    if (unpack(c, c->m->input, &req, &bad, &err) != WF_OK) {
        finish_unary(c, NULL, &err, &bad, bad.field != NULL ? 1 : 0);
        return;
    }

    switch (c->m->kind) {
    case WF_RPC_HEALTH_CHECK: {
        const Grpc__Health__V1__HealthCheckRequest *hreq = (const void *)req;
        enum health_service s = health_service_of(hreq->service);
        if (s == HS_UNKNOWN) {
            /* The health protocol answers NOT_FOUND, without our error
             * details: it is grpc's contract, not workflow.v1's. */
            char msg[160];
            snprintf(msg, sizeof msg, "unknown service \"%.100s\"", hreq->service);
            finish_with(c, NULL, GRPC_STATUS_NOT_FOUND, WF_OK, msg, NULL, 0);
            return;
        }
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
        resp.status = health_status(srv, s);
        finish_unary(c, &resp.base, &err, NULL, 0);
        return;
    }
    case WF_RPC_HEALTH_WATCH: {
        const Grpc__Health__V1__HealthCheckRequest *hreq = (const void *)req;
        struct health_watch *hw = wf_arena_alloc(c->arena, sizeof *hw);
        if (hw == NULL) {
            wf_error_set(&err, WF_E_INTERNAL, "out of memory");
            finish_unary(c, NULL, &err, NULL, 0);
            return;
        }
        hw->srv = srv;
        hw->service = health_service_of(hreq->service);
        hw->sent = -1;
        c->scall.wake_topic = TOPIC_HEALTH;
        stream_start(c, &health_watch_ops, hw);
        return;
    }
    case WF_RPC_REFLECTION: /* handled above */
    case WF_RPC_WORKFLOW:
        break;
    }

    wf_call *call = &c->scall;
    *call = (wf_call){
        .app = srv->app,
        .arena = c->arena,
        .method = c->m->route->method,
        .tenant = c->ictx.tenant,
        .actor = c->ictx.actor,
        .actor_groups = c->ictx.actor_groups,
        .request_id = c->ictx.request_id,
        .deadline_ms = c->ictx.deadline_ms,
        .status_code = status_code_of,
    };
    const wf_stream_ops *sops = c->m->route->stream;
    if (sops != NULL) {
        void *state = NULL;
        if (sops->open(call, req, &state, &err) != WF_OK) {
            finish_unary(c, NULL, &err, call->violations, call->nviolations);
            return;
        }
        stream_start(c, sops, state);
        return;
    }
    ProtobufCMessage *resp = NULL;
    wf_code rc = c->m->route->fn(call, req, &resp, &err);
    if (rc == WF_OK && resp == NULL)
        wf_error_set(&err, WF_E_INTERNAL, "the handler of %s produced no response", call->method);
    else if (rc == WF_OK)
        wf_error_clear(&err);
    else if (err.code != rc)
        wf_error_set(&err, rc, "%s", err.msg[0] ? err.msg : wf_code_reason(rc));
    finish_unary(c, resp, &err, call->violations, call->nviolations);
}

/* ---- workers -------------------------------------------------------------- */

/* Handles one event of c. Its tag stays counted in c->pending while it is
 * handled: another thread taking another event of the same call cannot free
 * it meanwhile. */
static void
on_event(struct tag *t, int ok)
{
    struct call *c = t->call;
    wf_rpc_server *srv = c->q->srv;
    int quiescing = atomic_load(&srv->quiescing);

    if (t->kind == T_NEW) {
        /* ok == 0: a slot given back at shutdown (no call attached). */
        if (ok && !quiescing) {
            /* The next call of this method is matched at once, to whichever
             * thread of the queue is idle. */
            if (atomic_load(&srv->accepting))
                post_slot(c->q, c->m);
            dispatch(c);
        }
    } else if (t->kind == T_RECV) {
        if (!quiescing)
            reflection_step(c, ok);
    } else if (t->kind == T_CLOSE) {
        stream_unlist(c); /* before taking c->mu: lock order is hmu → c->mu */
        pthread_mutex_lock(&c->mu);
        c->closed = 1;
        /* A stream that never sent its status was cancelled: by the client,
         * its deadline, or the shutdown. */
        if (c->sops != NULL && !c->ended)
            call_done(c, GRPC_STATUS_CANCELLED, WF_E_CANCELLED);
        pthread_mutex_unlock(&c->mu);
    } else {
        pthread_mutex_lock(&c->mu);
        if (t->kind == T_BATCH)
            c->sending = 0;
        else
            c->wake_inflight = 0;
        int pull = c->sops != NULL && (ok || t->kind == T_WAKE);
        pthread_mutex_unlock(&c->mu);
        if (pull)
            stream_pull(c);
    }

    pthread_mutex_lock(&c->mu);
    int done = --c->pending == 0;
    pthread_mutex_unlock(&c->mu);
    if (done)
        call_free(c);
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    wf_rpc_server *srv = w->q->srv;
    for (;;) {
        /* Between two events: from here on this thread is in no handler. */
        if (atomic_load(&srv->quiescing))
            atomic_store(&w->quiesced, 1);
        gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                          gpr_time_from_millis(POLL_MS, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(w->q->cq, until, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_QUEUE_TIMEOUT)
            continue;
        on_event(ev.tag, ev.success);
    }
    return NULL;
}

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
    grpc_server_credentials *cr =
        grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
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
    struct queue *qs[] = {&srv->pool, &srv->health};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        if (qs[i]->cq == NULL)
            continue;
        grpc_completion_queue_shutdown(qs[i]->cq);
        while (grpc_completion_queue_next(qs[i]->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
                   .type != GRPC_QUEUE_SHUTDOWN)
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
        wf_error_set(err, WF_E_INTERNAL, "out of memory");
        return NULL;
    }
    srv->app = app;
    pthread_mutex_init(&srv->hmu, NULL);
    pthread_cond_init(&srv->hcond, NULL);
    grpc_init();

    if (wf_rpc_table_build(&workflow__v1__workflow_service__descriptor, wf_routes, &srv->methods,
                           &srv->nmethods, err) != WF_OK) {
        destroy_unstarted(srv);
        return NULL;
    }
    static const char *const services[] = {
        "workflow.v1.WorkflowService", "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"};
    srv->reflection = wf_reflection_new(wf_descriptor_set, wf_descriptor_set_len, services,
                                        sizeof services / sizeof services[0], err);
    if (srv->reflection == NULL) {
        destroy_unstarted(srv);
        return NULL;
    }
    srv->metrics = wf_rpc_metrics_new(srv->methods, srv->nmethods);
    if (srv->metrics == NULL) {
        wf_error_set(err, WF_E_INTERNAL, "out of memory");
        destroy_unstarted(srv);
        return NULL;
    }

    /* Core's own size limit sits above ours, so that most oversized requests
     * reach us and get the TOO_LARGE reason; beyond it core answers
     * RESOURCE_EXHAUSTED by itself. */
    int core_max = cfg->max_message_bytes > (1 << 29) ? (1 << 30) : cfg->max_message_bytes * 2;
    grpc_arg args[] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_ALLOW_REUSEPORT, {.integer = 0}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = core_max}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = core_max}},
        /* Behind a mesh: ping idle connections, let clients ping every 10 s,
         * and recycle connections every 5 minutes so that clients
         * re-resolve and load spreads over new replicas. */
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = 60000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 20000}},
        {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, {.integer = 1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
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

    srv->nworkers = cfg->threads;
    srv->workers = calloc((size_t)srv->nworkers + 1, sizeof *srv->workers);
    if (srv->workers == NULL) {
        srv->nworkers = 0;
        wf_error_set(err, WF_E_INTERNAL, "out of memory");
        destroy_unstarted(srv);
        return NULL;
    }
    struct queue *qs[] = {&srv->pool, &srv->health};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        qs[i]->srv = srv;
        qs[i]->cq = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(srv->server, qs[i]->cq, NULL);
    }
    for (int i = 0; i <= srv->nworkers; i++)
        srv->workers[i].q = i < srv->nworkers ? &srv->pool : &srv->health;

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
    wf_app_set_waker(app, wake_streams, srv);
    atomic_store(&srv->accepting, 1);
    for (int k = 0; k < SLOTS_PER_METHOD; k++) {
        for (size_t m = 0; m < srv->nmethods; m++) {
            const wf_rpc_method *mm = &srv->methods[m];
            int health =
                mm->kind == WF_RPC_HEALTH_CHECK || mm->kind == WF_RPC_HEALTH_WATCH;
            post_slot(health ? &srv->health : &srv->pool, mm);
        }
        post_slot(&srv->pool, NULL);
    }
    for (int i = 0; i <= srv->nworkers; i++)
        pthread_create(&srv->workers[i].thread, NULL, worker_main, &srv->workers[i]);
    if (pthread_create(&srv->monitor, NULL, health_monitor, srv) == 0)
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
    wake_streams_locked(srv, TOPIC_HEALTH);
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
    gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                      gpr_time_from_millis(grace_ms, GPR_TIMESPAN));
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
    for (int i = 0; i <= srv->nworkers; i++)
        while (!atomic_load(&srv->workers[i].quiesced)) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }

    /* 4. Shut both queues down; the threads drain them and free what is
     * left. */
    grpc_completion_queue_shutdown(srv->pool.cq);
    grpc_completion_queue_shutdown(srv->health.cq);
    for (int i = 0; i <= srv->nworkers; i++)
        pthread_join(srv->workers[i].thread, NULL);
    grpc_server_destroy(srv->server);
    grpc_completion_queue_destroy(srv->pool.cq);
    grpc_completion_queue_destroy(srv->health.cq);
    grpc_completion_queue_shutdown(scq);
    grpc_completion_queue_pluck(scq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_destroy(scq);

    free_server(srv);
}
