/*
 * rpc_probe: rpc_probe.h, on the unary call shared with the client library
 * (common/wf_grpc.h).
 */
#include "rpc_probe.h"

#include <stdio.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "grpc/health/v1/health.pb-c.h"
#include "wf_grpc.h"

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
    Grpc__Health__V1__HealthCheckResponse *m =
        (void *)wf_grpc_unpack(bb, &grpc__health__v1__health_check_response__descriptor);
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
    Grpc__Health__V1__HealthCheckRequest hreq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    hreq.service = "";
    uint8_t buf[64];
    wf_grpc_unary_req req = {
        .path = CHECK_PATH,
        .deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                 gpr_time_from_millis(p->timeout_ms, GPR_TIMESPAN)),
        .body = buf,
        .len = grpc__health__v1__health_check_request__pack(&hreq, buf),
    };
    wf_grpc_unary u;
    wf_grpc_unary_call(ch, &req, &u);
    grpc_status_code status = u.status;
    if (u.start == GRPC_CALL_OK) {
        snprintf(message, size, "%s", u.message);
        if (status == GRPC_STATUS_OK)
            *serving = is_serving(u.response);
    } else {
        status = GRPC_STATUS_INTERNAL;
        snprintf(message, size, "could not start the call");
    }
    wf_grpc_unary_done(&u);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return (int)status;
}
