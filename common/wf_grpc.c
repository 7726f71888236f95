/*
 * wf_grpc: wf_grpc.h.
 */
#include "wf_grpc.h"

#include <stdio.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

static const char *const code_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *
wf_grpc_code_name(int code)
{
    if (code < 0 || (size_t)code >= sizeof code_names / sizeof code_names[0])
        return "UNKNOWN";
    return code_names[code];
}

ProtobufCMessage *
wf_grpc_unpack(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc)
{
    grpc_byte_buffer_reader r;
    if (bb == NULL || !grpc_byte_buffer_reader_init(&r, bb))
        return NULL;
    grpc_slice all = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    ProtobufCMessage *m =
        protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    return m;
}

void
wf_grpc_unary_call(grpc_channel *ch, const wf_grpc_unary_req *req, wf_grpc_unary *u)
{
    memset(u, 0, sizeof *u);
    u->status = GRPC_STATUS_UNKNOWN;
    grpc_metadata_array_init(&u->trailers);
    u->cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice method = grpc_slice_from_copied_string(req->path);
    u->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, u->cq, method, NULL,
                                       req->deadline, NULL);
    grpc_slice_unref(method);

    grpc_slice s = grpc_slice_from_copied_buffer(req->body, req->len);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_metadata_array initial;
    grpc_metadata_array_init(&initial);
    grpc_slice details = grpc_empty_slice();

    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].flags = req->flags;
    ops[0].data.send_initial_metadata.count = req->nmd;
    ops[0].data.send_initial_metadata.metadata = req->md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &u->response;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &u->trailers;
    ops[5].data.recv_status_on_client.status = &u->status;
    ops[5].data.recv_status_on_client.status_details = &details;

    u->start = grpc_call_start_batch(u->call, ops, 6, u->call, NULL);
    if (u->start == GRPC_CALL_OK) {
        grpc_completion_queue_pluck(u->cq, u->call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        char *m = grpc_slice_to_c_string(details);
        snprintf(u->message, sizeof u->message, "%s", m);
        gpr_free(m);
    }

    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial);
}

void
wf_grpc_unary_done(wf_grpc_unary *u)
{
    if (u->response != NULL)
        grpc_byte_buffer_destroy(u->response);
    u->response = NULL;
    grpc_metadata_array_destroy(&u->trailers);
    /* The call owns the trailers' keys and values: it goes last. */
    grpc_call_unref(u->call);
    grpc_completion_queue_shutdown(u->cq);
    grpc_completion_queue_pluck(u->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_destroy(u->cq);
}
