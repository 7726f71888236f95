/*
 * handler: the contract between the rpc layer and the request handlers.
 *
 * A handler receives one unpacked request message and fills one response
 * message. It translates protobuf-c messages to engine calls and back, and
 * nothing else: no grpc types, no SQL. All request-scoped memory (the
 * request, the response, scratch) lives in call->arena and is released by
 * the rpc layer when the call ends.
 */
#ifndef WF_HANDLER_H
#define WF_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "wf_arena.h"
#include "wf_config.h"
#include "wf_error.h"

#include "store.h"

/* The long-lived service: everything a handler may reach, built once by
 * main and shared between threads: read-only but for the waker and the
 * scheduler, which change under wake_mu (each member is thread-safe). */
typedef struct wf_app {
    const wf_config *cfg;
    wf_store *store;
    struct wf_directory *directory; /* users and groups (engine/base/directory.h) */
    /* Set by the rpc layer while it runs (wf_app_set_waker): wakes the
     * parked streams and long polls that listen to topic (see
     * wf_call.wake_topic). wake_mu guards the pair, so a notification
     * thread never calls into a server that has stopped. */
    pthread_mutex_t wake_mu;
    void (*wake_streams)(void *arg, const char *const *topics, size_t n);
    void *wake_arg;
    /* The background scheduler, once main has started it (under wake_mu):
     * WF_TOPIC_TIMERS wakes it. */
    struct wf_scheduler *sched;
    /* The clock of schedules (microseconds since the epoch); NULL = the
     * wall clock (wf_now_us). workflowd never sets it: it is the hook of
     * the in-process test server, whose tests run schedules through a DST
     * change or an outage in seconds. */
    int64_t (*clock)(void *arg);
    void *clock_arg;
    /* What this process's schedule passes did (atomic; /metrics): runs by
     * outcome (index: wf_schedule_outcome), and the lag of starts. */
    uint64_t schedule_runs[6];
    int64_t schedule_lag_us, schedule_lag_max_us;
    /* Waiting calls woken by their root's topic (atomic; /metrics). */
    uint64_t await_wakeups;
} wf_app;

/* Now, by app->clock (schedules: CreateSchedule, the passes, ...). */
int64_t wf_app_now(const wf_app *app);

/* Static initializer of the fields wf_app needs before use. */
#define WF_APP_INIT                                                                                \
    {                                                                                              \
        .wake_mu = PTHREAD_MUTEX_INITIALIZER                                                       \
    }

/* Installs (fn != NULL) or removes the waker. Once it returns with NULL,
 * no call of the previous waker is in progress or will start. */
void wf_app_set_waker(wf_app *app, void (*fn)(void *arg, const char *const *topics, size_t n),
                      void *arg);

/* Wake-up topics: events committed, and jobs of one type made activatable
 * ("jobs:" + job type). */
#define WF_TOPIC_EVENTS "events"
/* Events committed on one root: "root:" + root id (waiting calls, which
 * read their instance only when its root changed). WF_TOPIC_ROOT_PREFIX
 * alone wakes the waiters of every root. */
#define WF_TOPIC_ROOT_PREFIX "root:"
#define WF_TOPIC_JOBS_PREFIX "jobs:"
/* A commit in this process created a timer: wakes the scheduler, not the
 * streams (net_runtime.h's WF_RUNTIME_TOPIC_TIMERS). */
#define WF_TOPIC_TIMERS "timers"

/* Installs (s != NULL) or removes the background scheduler that
 * WF_TOPIC_TIMERS wakes. Once it returns with NULL, no wake of the
 * previous one is in progress or will start (so it may be stopped). */
void wf_app_set_scheduler(wf_app *app, struct wf_scheduler *s);

/* The scheduler's options from the configuration (retention) with the
 * wake-up hook that reaches this app's streams and the batch firing of
 * timers (wf_runtime_fire_timers). For wf_scheduler_start together with
 * wf_app_fire_timer and app as its arg. */
struct wf_scheduler_options;
void wf_app_scheduler_options(const wf_app *app, struct wf_scheduler_options *opt);

/* The scheduler's fire callback (wf_sched_fire_fn; arg is the wf_app):
 * one timer through the net runtime, whose commit wakes this app's
 * streams (wf_app_wake_streams). */
struct wf_timer_row;
wf_code wf_app_fire_timer(void *arg, const struct wf_timer_row *timer, int64_t deadline_ms,
                          bool *fired, wf_error *err);

/* Writes the gauges of the store's connection pool in Prometheus text
 * format (the backlog gauges come from wf_app_count_backlog). Thread-safe. */
void wf_app_render_metrics(wf_app *app, FILE *out);

/* The work backlog counts (wf_reads_count_backlog) for the metrics
 * endpoint's gauges; the read may take timeout_ms. */
wf_code wf_app_count_backlog(wf_app *app, wf_arena *arena, int64_t timeout_ms, size_t max_types,
                             wf_store_counts *out, wf_error *err);

/* Wakes the server's parked streams that listen to topic (NULL: every
 * stream; a no-op before the server runs). Cheap and non-blocking: any
 * thread may call it. */
void wf_app_wake_streams(wf_app *app, const char *topic);

/* Wakes the streams that listen to any of topics[0..n) in one pass;
 * reorders topics (they are sorted for the lookup). */
void wf_app_wake_topics(wf_app *app, const char **topics, size_t n);

/* Opens the store the configuration names (Postgres when DATABASE_URL is
 * set, else memory) into app->store, and builds app->directory from
 * WF_USERS / WF_GROUP_<id>. */
wf_code wf_app_open_store(wf_app *app, wf_error *err);

/* `workflowd migrate`: applies the pending migrations of DATABASE_URL and
 * closes the connection; *version gets the schema's version. Refuses a
 * configuration without DATABASE_URL (WF_E_INVALID_ARGUMENT) and a schema
 * newer than this binary knows (WF_E_SCHEMA_TOO_NEW). */
wf_code wf_app_migrate(const wf_config *cfg, int *version, wf_error *err);

/* Subscribes to the store's commit notifications (every replica's commits
 * on Postgres, this process's on the memory store) and turns them into
 * stream wake-ups. Call once the rpc layer has set app->wake_streams. */
wf_code wf_app_listen(wf_app *app, wf_error *err);

/* Closes app->store and frees app->directory. */
void wf_app_close_store(wf_app *app);

/* One field violation for google.rpc.BadRequest (validation errors). */
typedef struct wf_violation {
    const char *field;       /* request path, e.g. "definition.transitions[2].assignee" */
    const char *reason;      /* stable code, e.g. "TRIGGER_FIELD_MISSING"; NULL = the error's */
    const char *description; /* client-safe message */
} wf_violation;

/* One call as a handler sees it. Strings are borrowed for the call's
 * lifetime; copy what must outlive it. */
typedef struct wf_call {
    wf_app *app;
    wf_arena *arena;
    const char *method;       /* e.g. "StartInstance" */
    const char *tenant;       /* never NULL: x-tenant-id, the key's tenant, or "default" */
    const char *actor;        /* x-actor-id, NULL when absent */
    const char *actor_groups; /* x-actor-groups when trusted (WF_TRUST_ACTOR_GROUPS), else NULL */
    const char *request_id;   /* x-request-id or a generated id; for logs */
    int64_t deadline_ms;      /* monotonic ms (wf_mono_ms), 0 = no deadline */

    /* Streams and long polls: what wakes a parked call (NULL: every
     * wake-up), and, set by a step that answers WAIT, when to ask again
     * anyway (monotonic ms; 0 = only on a wake-up). */
    const char *wake_topic;
    int64_t wake_at_ms;

    /* Set by a unary handler whose call is to be answered later (a
     * StartInstance or SendSignal that awaits a result): the rpc layer
     * then parks the call on its route's stream ops with this state
     * instead of sending the response now. NULL: answer at once. */
    void *park_state;

    /* Filled by a handler that fails with field violations; the rpc layer
     * sends them as google.rpc.BadRequest next to the ErrorInfo. */
    wf_violation *violations;
    size_t nviolations;

    /* The gRPC status code of a wf_code (the rpc layer's one mapping), for
     * handlers that report per-item outcomes inside an OK response
     * (CompleteJobs). Set by the rpc layer; may be NULL elsewhere. */
    int (*status_code)(wf_code code);
} wf_call;

/* Handles one unary call. On WF_OK *resp points to a response message of the
 * method's output type, allocated in call->arena (or static). On error err
 * is set and *resp is ignored. */
typedef wf_code (*wf_handler_fn)(wf_call *call, const ProtobufCMessage *req,
                                 ProtobufCMessage **resp, wf_error *err);

/* ---- server streams ------------------------------------------------------
 *
 * A server-streaming method is pull-based: the rpc layer asks the stream for
 * its next message only when the previous one has been sent, so a slow
 * consumer never makes the server buffer anything. When nothing is ready the
 * stream says WAIT and is asked again after the next wake-up
 * (wf_app_wake_streams). Steps run on a worker thread and must not block
 * for long (bounded store reads only).
 */
typedef enum wf_stream_step {
    WF_STREAM_MESSAGE, /* *msg is the next message */
    WF_STREAM_WAIT,    /* nothing now: ask again after a wake-up */
    WF_STREAM_END,     /* the stream is over; err->code is its status (WF_OK: clean) */
} wf_stream_step;

typedef struct wf_stream_ops {
    /* Validates the request and builds the stream's state in call->arena
     * (which lives as long as the stream). */
    wf_code (*open)(wf_call *call, const ProtobufCMessage *req, void **state, wf_error *err);
    /* Produces the next step. A message is allocated in scratch, which is
     * released once the message has been serialized. */
    wf_stream_step (*next)(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg,
                           wf_error *err);
    /* Releases what the state holds outside call->arena, however the stream
     * ended. May be NULL. */
    void (*close)(void *state);
    /* True for a long-polling unary method: the call ends at its first
     * message (the response, status OK) or at WF_STREAM_END before any
     * (err's status, no response). */
    bool unary;
} wf_stream_ops;

/* Route flags. */
enum {
    WF_ROUTE_ACTOR = 1 << 0,  /* the interceptors require x-actor-id (the call acts for a
                                 person) */
    WF_ROUTE_STREAM = 1 << 1, /* server streaming in the proto (a unary long poll such as
                                 ActivateJobs also runs on stream ops, without this flag) */
};

/* One row of the method table: a method name of workflow.v1.WorkflowService,
 * its handler and flags. The rpc layer checks at startup that the table and
 * the protobuf service descriptor name exactly the same methods. */
typedef struct wf_route {
    const char *method;
    wf_handler_fn fn; /* unary methods; NULL when stream is set */
    unsigned flags;
    /* Server streams and unary long polls; else NULL. With fn set too:
     * the ops a call of fn is parked on when fn sets park_state. */
    const wf_stream_ops *stream;
} wf_route;

/* The method table (handlers/routes.c), terminated by a NULL method. */
extern const wf_route wf_routes[];

/* True when the service can take traffic (the store answers). */
bool wf_app_ready(wf_app *app);

/* A protobuf-c allocator over an arena: unpacked messages live as long as
 * the arena, and protobuf_c_message_free_unpacked is never needed. */
ProtobufCAllocator wf_arena_pb_allocator(wf_arena *arena);

/* Allocates a violation list entry in the call's arena; reason NULL = the
 * reason of the error the call fails with. */
wf_code wf_call_add_violation(wf_call *call, const char *field, const char *reason,
                              const char *description, wf_error *err);

#endif /* WF_HANDLER_H */
