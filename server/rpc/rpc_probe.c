/*
 * rpc_probe: rpc_probe.h.
 */
#include "rpc_probe.h"

#include <stdio.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"

#define CHECK_PATH "/grpc.health.v1.Health/Check"

static grpc_channel *
open_channel(const wf_rpc_probe *p)
{
    grpc_channel_credentials *cr = p->roots_pem != NULL
                                       ? grpc_ssl_credentials_create(p->roots_pem, NULL, NULL, NULL)
                                       : grpc_insecure_credentials_create();
    grpc_arg arg = {
        GRPC_ARG_STRING, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, {.string = (char *)p->server_name}};
    grpc_channel_args args = {p->roots_pem != NULL && p->server_name != NULL ? 1 : 0, &arg};
    grpc_channel *ch = grpc_channel_create(p->target, cr, &args);
    grpc_channel_credentials_release(cr);
    return ch;
}

/* The SERVING answer of a received response. */
static bool
is_serving(grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader r;
    if (bb == NULL || !grpc_byte_buffer_reader_init(&r, bb))
        return false;
    grpc_slice all = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    Grpc__Health__V1__HealthCheckResponse *m = grpc__health__v1__health_check_response__unpack(
        NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    bool serving =
        m != NULL && m->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    if (m != NULL)
        grpc__health__v1__health_check_response__free_unpacked(m, NULL);
    return serving;
}

int
wf_rpc_probe_health(const wf_rpc_probe *p, bool *serving, char *message, size_t size)
{
    *serving = false;
    if (size > 0)
        message[0] = '\0';
    grpc_init();
    grpc_channel *ch = open_channel(p);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                         gpr_time_from_millis(p->timeout_ms, GPR_TIMESPAN));
    grpc_slice method = grpc_slice_from_static_string(CHECK_PATH);
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                               deadline, NULL);
    grpc_slice_unref(method);

    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = "";
    uint8_t buf[64];
    size_t len = grpc__health__v1__health_check_request__pack(&req, buf);
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)buf, len);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    grpc_byte_buffer *recv = NULL;
    grpc_metadata_array initial, trailers;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailers);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();

    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailers;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    if (grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK) {
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        char *m = grpc_slice_to_c_string(details);
        snprintf(message, size, "%s", m);
        gpr_free(m);
        if (status == GRPC_STATUS_OK)
            *serving = is_serving(recv);
    } else {
        status = GRPC_STATUS_INTERNAL;
        snprintf(message, size, "could not start the call");
    }

    if (recv != NULL)
        grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailers);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return (int)status;
}
