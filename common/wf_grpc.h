/*
 * wf_grpc: what the client library and the server's health probe share as
 * callers of grpc core: the names of the status codes, one blocking unary
 * call, and the decoding of a received message.
 *
 * It sees neither the client library nor the server's modules, so
 * `workflowd` links it without linking wf_client.
 */
#ifndef WF_GRPC_H
#define WF_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

/* The canonical name of a grpc status code ("UNAVAILABLE"); "UNKNOWN" for
 * a number outside the table. */
const char *wf_grpc_code_name(int code);

/* A message of type desc unpacked from bb (protobuf-c's allocator), or NULL
 * when bb is NULL or does not decode. */
ProtobufCMessage *wf_grpc_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc);

/* One unary call: what is sent. */
typedef struct wf_grpc_unary_req {
    const char *path;      /* "/grpc.health.v1.Health/Check" */
    gpr_timespec deadline; /* of the call */
    uint32_t flags;        /* of the initial metadata (wait-for-ready) */
    grpc_metadata *md;     /* request metadata, kept by the caller */
    size_t nmd;
    const void *body; /* the serialized request */
    size_t len;
} wf_grpc_unary_req;

/* One unary call: what came back. */
typedef struct wf_grpc_unary {
    grpc_call_error start;        /* GRPC_CALL_OK: the call ran and the fields below are set */
    grpc_status_code status;      /* GRPC_STATUS_UNKNOWN until then */
    char message[512];            /* grpc-message */
    grpc_byte_buffer *response;   /* the response message; NULL when none came */
    grpc_metadata_array trailers; /* the trailing metadata; the call owns its keys and values */
    grpc_call *call;              /* kept alive for the trailers until wf_grpc_unary_done */
    grpc_completion_queue *cq;
} wf_grpc_unary;

/* Runs the call on ch and blocks until its status, on a completion queue of
 * its own (thread-safe). Whatever the outcome, release u with
 * wf_grpc_unary_done. */
void wf_grpc_unary_call(grpc_channel *ch, const wf_grpc_unary_req *req, wf_grpc_unary *u);

/* Frees the response and the trailers of u, then the call itself. */
void wf_grpc_unary_done(wf_grpc_unary *u);

#endif /* WF_GRPC_H */
