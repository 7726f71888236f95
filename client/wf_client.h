/*
 * wf_client: a small synchronous client for workflow.v1.WorkflowService on
 * grpc core.
 *
 * One wf_client holds one channel and the caller's identity (API key,
 * tenant, actor). Calls are blocking and thread-safe: each call uses its own
 * completion queue. Errors come back decoded: gRPC code, message and the
 * ErrorInfo reason from the grpc-status-details-bin trailer.
 */
#ifndef WF_CLIENT_H
#define WF_CLIENT_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

typedef struct wf_client wf_client;

typedef struct wf_client_options {
    const char *target;          /* "127.0.0.1:50051", "dns:///svc:50051", "unix:/path" */
    const char *api_key;         /* sent as x-api-key; NULL = none */
    const char *tenant;          /* x-tenant-id; NULL = server default */
    const char *actor;           /* x-actor-id; NULL = none */
    const char *actor_groups;    /* x-actor-groups; NULL = none */
    int timeout_ms;              /* per-call deadline; 0 = 10 s */
    int use_tls;                 /* 1: TLS (no mesh) */
    const char *tls_roots_pem;   /* with use_tls: trusted roots (PEM text); NULL = system roots */
    const char *tls_server_name; /* with use_tls: name the certificate must carry, when it
                                    differs from the target's host (127.0.0.1 probes) */
    int wait_for_ready;          /* 1: a call made while the channel cannot connect waits for it
                                    (until its deadline) instead of failing UNAVAILABLE at once;
                                    for workers and load, which outlive a connection failure */
} wf_client_options;

/* Extra metadata for one call (tests use it to send odd headers). */
typedef struct wf_client_md {
    const char *key;
    const char *value;
} wf_client_md;

/* The outcome of a call. */
typedef struct wf_client_status {
    int code;                      /* grpc_status_code; 0 = OK */
    char message[512];             /* grpc-message */
    char reason[64];               /* google.rpc.ErrorInfo.reason, "" when absent */
    char domain[64];               /* google.rpc.ErrorInfo.domain */
    int nviolations;               /* google.rpc.BadRequest field violations received */
    char violations[8][160];       /* the first few, as "field: description" */
    char violation_reasons[8][64]; /* their FieldViolation.reason, "" when absent */
    int nmetadata;                 /* ErrorInfo.metadata entries received */
    char metadata[8][160];         /* the first few, as "key=value", in wire order */
    int retry_delay_ms;            /* google.rpc.RetryInfo.retry_delay; 0 when absent */
} wf_client_status;

/* Per-call settings; NULL means the client's defaults. */
typedef struct wf_client_call_opts {
    int timeout_ms;         /* overrides the client's timeout when > 0; < 0 = already expired */
    int no_identity;        /* 1: send none of key/tenant/actor headers */
    const wf_client_md *md; /* extra metadata */
    size_t nmd;
    int no_deadline; /* 1: no deadline at all (long-lived streams); wins over timeout_ms */
} wf_client_call_opts;

/* Creates a client; copies every string of opts. NULL when out of memory. */
wf_client *wf_client_new(const wf_client_options *opts);

/* Destroys the channel. NULL-safe. */
void wf_client_free(wf_client *c);

/* Calls a unary method by full path ("/workflow.v1.WorkflowService/GetTask").
 * On OK, *resp is an unpacked message of type resp_desc that the caller frees
 * with protobuf_c_message_free_unpacked(*resp, NULL). Returns st->code. */
int wf_client_call(wf_client *c, const char *path, const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                   const wf_client_call_opts *opts, wf_client_status *st);

/* Like wf_client_call, with a raw request body (to send malformed bytes). */
int wf_client_call_raw(wf_client *c, const char *path, const void *body, size_t len,
                       const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                       const wf_client_call_opts *opts, wf_client_status *st);

/* A server stream (WatchEvents, Health/Watch). */
typedef struct wf_client_stream wf_client_stream;

/* Opens a server-streaming call. NULL when the call could not start. */
wf_client_stream *wf_client_stream_open(wf_client *c, const char *path, const ProtobufCMessage *req,
                                        const wf_client_call_opts *opts);

/* Receives the next message: 1 with *msg set (free with
 * protobuf_c_message_free_unpacked), 0 at the end of the stream (st filled). */
int wf_client_stream_next(wf_client_stream *s, const ProtobufCMessageDescriptor *desc,
                          ProtobufCMessage **msg, wf_client_status *st);

/* As wf_client_stream_next, waiting at most wait_ms (< 0: no limit): -1
 * when nothing came in time (the receive stays posted; call again), so a
 * worker can look at a stop flag between waits. */
int wf_client_stream_next_wait(wf_client_stream *s, const ProtobufCMessageDescriptor *desc,
                               ProtobufCMessage **msg, int wait_ms, wf_client_status *st);

/* ---- typed job calls (workflow/v1/workflow.pb-c.h) ---------------------- */

struct Workflow__V1__StreamActivatedJobsRequest;
struct Workflow__V1__Job;
struct Workflow__V1__CompleteJobsRequest;
struct Workflow__V1__CompleteJobsResponse;

/* Opens StreamActivatedJobs (give opts->no_deadline for a long-lived
 * worker). NULL when the call could not start. */
wf_client_stream *wf_client_stream_jobs(wf_client *c,
                                        const struct Workflow__V1__StreamActivatedJobsRequest *req,
                                        const wf_client_call_opts *opts);

/* The next job pushed on a job stream, waiting at most wait_ms (< 0: no
 * limit): 1 with *job (free with protobuf_c_message_free_unpacked), -1 when
 * nothing came in time, 0 at the end of the stream (st filled). Credit
 * comes back as jobs are completed or failed (CompleteJob, CompleteJobs,
 * FailJob). */
int wf_client_next_job(wf_client_stream *s, int wait_ms, struct Workflow__V1__Job **job,
                       wf_client_status *st);

/* CompleteJobs: on OK *resp has one result per completion (free it with
 * protobuf_c_message_free_unpacked). Returns st->code (the batch's). */
int wf_client_complete_jobs(wf_client *c, const struct Workflow__V1__CompleteJobsRequest *req,
                            struct Workflow__V1__CompleteJobsResponse **resp,
                            const wf_client_call_opts *opts, wf_client_status *st);

/* Cancels (if still open) and frees the stream. NULL-safe. */
void wf_client_stream_close(wf_client_stream *s);

/* Name of a gRPC status code ("NOT_FOUND"). */
const char *wf_client_code_name(int code);

#endif /* WF_CLIENT_H */
