/*
 * rpc_server_int.h: what the files of the grpc server share (rpc_server.c,
 * rpc_call.c, rpc_stream.c, rpc_health.c): the call context, the server
 * and the functions one file calls in another. rpc_server.c explains the
 * design. Internal to server/rpc.
 */
#ifndef WF_RPC_SERVER_INT_H
#define WF_RPC_SERVER_INT_H

#include "rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>

#include "rpc_interceptors.h"
#include "rpc_metrics.h"
#include "rpc_reflection.h"
#include "rpc_table.h"

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

enum tag_kind { T_NEW, T_BATCH, T_CLOSE, T_WAKE, T_RECV, T_DISPATCH };

struct call;

struct tag {
    struct call *call;
    enum tag_kind kind;
};

/* A completion queue and what its calls need to know about it. */
struct queue {
    wf_rpc_server *srv;
    grpc_completion_queue *cq;
    grpc_completion_queue *notify; /* where its slots report arrivals (T_NEW) */
};

struct worker {
    struct queue *q;
    pthread_t thread;
    atomic_int quiesced; /* set by the thread itself between two events, once quiescing */
    int seated;          /* a pool thread holding one of the shared places (under seat_mu) */
};

/* Health of one service name as the Health service reports it. */
enum health_service { HS_READINESS, HS_LIVENESS, HS_UNKNOWN };

struct call {
    struct queue *q;        /* where its slot was posted and its events come back */
    const wf_rpc_method *m; /* NULL for the catch-all slot */
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_call_details details; /* catch-all only */
    grpc_byte_buffer *payload; /* registered methods only */
    grpc_byte_buffer *send;    /* the message in flight, one per send */
    struct tag t_new, t_batch, t_close, t_wake, t_recv, t_dispatch;
    grpc_byte_buffer *recv; /* bidi streams: the message just received */
    int cancelled;          /* out-param of RECV_CLOSE_ON_SERVER */

    pthread_mutex_t mu; /* guards the fields below and start_batch */
    int pending;        /* outstanding tags */
    wf_arena *arena;    /* request-scoped memory, created when the call arrives */
    int64_t start_us;   /* wall clock, for durations in logs and metrics */
    wf_rpc_ctx ictx;    /* what the interceptors established */
    /* Ids the call concerns, for its access-log line (borrowed from the
     * request or the response, in arena; NULL when absent). */
    const char *ids[3]; /* instance_id, task_id, job_key */

    /* Server stream state. */
    const wf_stream_ops *sops; /* non-NULL for a stream */
    void *sstate;
    wf_call scall;     /* the handler's view of the call, kept for the stream's life */
    int closed;        /* RECV_CLOSE came back: the client is gone */
    int sending;       /* a SEND_MESSAGE is in flight */
    int started;       /* initial metadata sent (streams; wf_rpc__finish_with sets it too) */
    int ended;         /* the final status was sent */
    int pulling;       /* the worker is asking the stream for its next step */
    int rewake;        /* a wake-up arrived while pulling */
    int wake_inflight; /* an empty batch (T_WAKE) is outstanding */
    int64_t wake_at;   /* copy of scall.wake_at_ms taken under mu after each step */
    /* copy of scall.wake_topic, stored after each step and read by the
     * wakers without mu (a step may change its topic) */
    _Atomic(const char *) topic;
    int done; /* logged and counted: exactly once per call */
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
    struct queue accept; /* arrivals of the pool's calls: admitted or refused */
    /* The pool's threads, then the health and accept threads. nworkers of
     * the pool's threads take calls at once (the shared places, "seats");
     * nspares more stand by to take the place of one whose call joined a
     * bulkhead (core/wf_bulkhead.h), as many as the bulkheads' limits. */
    struct worker *workers;
    int nworkers;
    int nspares;
    pthread_mutex_t seat_mu;
    pthread_cond_t seat_cv; /* a seat came free, or quiescing began */
    int seated;             /* pool threads holding a seat (at most nworkers) */
    int max_queued;         /* WF_MAX_QUEUED_CALLS */
    int port;
    atomic_int accepting; /* workers re-post slots while set */
    atomic_int quiescing; /* no batch is started any more; threads acknowledge */

    pthread_mutex_t hmu; /* health monitor state and the stream list */
    pthread_cond_t hcond;
    atomic_int ready;    /* the store answered at the last probe */
    atomic_int draining; /* shutdown has begun: NOT_SERVING */
    int hquiesced;       /* no more wake-ups may be started */
    int monitor_stop;
    struct call *streams; /* open server streams */
    wf_rpc_metrics *metrics;
    wf_reflection *reflection;
    pthread_t monitor;
    int monitor_started;
};

/* Health Watch as a stream: a message whenever the status differs from
 * the last one sent. */
struct health_watch {
    wf_rpc_server *srv;
    enum health_service service;
    int sent; /* last status sent, -1 before the first */
};

/* rpc_call.c: call contexts, finishing a call, dispatch, workers */
void wf_rpc__post_slot(struct queue *q, const wf_rpc_method *m);
int wf_rpc__start_batch_locked(struct call *c, const grpc_op *ops, size_t nops, struct tag *tag);
grpc_byte_buffer *wf_rpc__pack(const ProtobufCMessage *msg);
/* msg packed for c, or NULL with TOO_LARGE in err when it passes the send
 * limit (WF_MAX_ANSWER_BYTES). */
grpc_byte_buffer *wf_rpc__pack_answer(struct call *c, const ProtobufCMessage *msg, wf_error *err);
void wf_rpc__call_done(struct call *c, grpc_status_code status, wf_code code);
size_t wf_rpc__initial_metadata(struct call *c, grpc_metadata md[1], grpc_slice *rid);
void wf_rpc__status_op(struct call *c, grpc_op *op, grpc_status_code status, wf_code code,
                       const char *message, const wf_violation *violations, size_t nviolations,
                       grpc_slice *msg, grpc_metadata trailer[1], grpc_slice *details);
void wf_rpc__finish_with(struct call *c, const ProtobufCMessage *resp, grpc_status_code status,
                         wf_code code, const char *message, const wf_violation *violations,
                         size_t nviolations);
void wf_rpc__finish_unary(struct call *c, const ProtobufCMessage *resp, const wf_error *err,
                          const wf_violation *violations, size_t nviolations);
void *wf_rpc__worker_main(void *arg);
/* Around a handler's code (a unary handler, a stream's open or step): the
 * call's bulkheads, and the hand-off of a pool thread's seat when the call
 * joins one. */
void wf_rpc__handler_begin(wf_rpc_server *srv);
void wf_rpc__handler_end(void);
/* Pool threads plus the health and accept threads. */
int wf_rpc__nthreads(const wf_rpc_server *srv);

/* rpc_health.c: the Health service, its monitor, stream wake-ups */
enum health_service wf_rpc__health_service_of(const char *name);
int wf_rpc__health_status(wf_rpc_server *srv, enum health_service s);
void wf_rpc__wake_streams_locked(wf_rpc_server *srv, const char *const *topics, size_t n);
void wf_rpc__wake_streams(void *arg, const char *const *topics, size_t n);
void *wf_rpc__health_monitor(void *arg);
extern const wf_stream_ops wf_rpc__health_watch_ops;

/* rpc_stream.c: server streams and the reflection stream */
void wf_rpc__stream_unlist(struct call *c);
void wf_rpc__stream_pull(struct call *c);
void wf_rpc__stream_start(struct call *c, const wf_stream_ops *ops, void *state);
void wf_rpc__reflection_step(struct call *c, int ok);
void wf_rpc__reflection_start(struct call *c);

#endif
