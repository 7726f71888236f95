/*
 * rpc_stream.c: server streams (pull-based, parked and woken) and the
 * bidi reflection stream (rpc_server.c explains the design).
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

void
wf_rpc__stream_unlist(struct call *c)
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
void
wf_rpc__stream_pull(struct call *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->pulling || c->sending || c->closed || c->ended || atomic_load(&c->q->srv->quiescing)) {
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
        if (scratch != NULL) {
            wf_rpc__handler_begin(c->q->srv);
            step = c->sops->next(&c->scall, c->sstate, scratch, &msg, &err);
            wf_rpc__handler_end();
        }
        grpc_byte_buffer *bb = NULL;
        if (step == WF_STREAM_MESSAGE && (bb = wf_rpc__pack_answer(c, msg, &err)) == NULL)
            step = WF_STREAM_END; /* TOO_LARGE in err */
        wf_arena_free(scratch);
        pthread_mutex_lock(&c->mu);
        c->wake_at = step == WF_STREAM_WAIT ? c->scall.wake_at_ms : 0;
        atomic_store(&c->topic, c->scall.wake_topic);
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
            ops[n].data.send_initial_metadata.count = wf_rpc__initial_metadata(c, initial, &rid);
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
            wf_rpc__status_op(c, &ops[n++], wf_rpc_status_code(err.code), err.code, err.msg, NULL,
                              0, &smsg, trailer, &sdetails);
        if (wf_rpc__start_batch_locked(c, ops, n, &c->t_batch)) {
            c->started = 1;
            if (last)
                c->ended = 1;
            else
                c->sending = 1;
        }
        if (last)
            wf_rpc__call_done(c, wf_rpc_status_code(err.code), err.code);
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
void
wf_rpc__stream_start(struct call *c, const wf_stream_ops *ops, void *state)
{
    wf_rpc_server *srv = c->q->srv;
    c->sops = ops;
    c->sstate = state;
    atomic_store(&c->topic, c->scall.wake_topic);
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
    hop.data.send_initial_metadata.count = wf_rpc__initial_metadata(c, initial, &rid);
    hop.data.send_initial_metadata.metadata = initial;
    pthread_mutex_lock(&c->mu);
    int refused = !wf_rpc__start_batch_locked(c, &op, 1, &c->t_close);
    if (refused)
        c->closed = 1;
    else if (wf_rpc__start_batch_locked(c, &hop, 1, &c->t_batch))
        c->started = c->sending = 1;
    pthread_mutex_unlock(&c->mu);
    grpc_slice_unref(rid);
    if (refused)
        wf_rpc__stream_unlist(c);
}

/* ---- server reflection (bidi) ---------------------------------------------- */

/* One turn of a reflection stream, on its worker: answer the message just
 * received and ask for the next one in the same batch; end with OK when the
 * client half-closes. */
void
wf_rpc__reflection_step(struct call *c, int ok)
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
        wf_rpc__start_batch_locked(c, ops, 1, &c->t_close);
        pthread_mutex_unlock(&c->mu);
        wf_rpc__call_done(c, GRPC_STATUS_CANCELLED, WF_E_CANCELLED);
        return;
    }
    if (bb == NULL) {
        wf_rpc__finish_with(c, NULL, GRPC_STATUS_OK, WF_OK, "", NULL, 0);
        return;
    }
    wf_error err;
    wf_arena *scratch = wf_arena_new();
    Grpc__Reflection__V1__ServerReflectionResponse *resp = NULL;
    if (scratch == NULL)
        wf_error_nomem(&err);
    else {
        grpc_byte_buffer_reader r;
        ProtobufCMessage *req = NULL;
        if (grpc_byte_buffer_reader_init(&r, bb)) {
            grpc_slice all = grpc_byte_buffer_reader_readall(&r);
            grpc_byte_buffer_reader_destroy(&r);
            ProtobufCAllocator a = wf_arena_pb_allocator(scratch);
            req = protobuf_c_message_unpack(
                &grpc__reflection__v1__server_reflection_request__descriptor, &a,
                GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
            grpc_slice_unref(all);
        }
        if (req != NULL)
            resp = wf_reflection_answer(srv->reflection, (const void *)req, scratch, &err);
        else if (wf_arena_failed(scratch))
            wf_error_nomem(&err);
        else
            wf_error_set(&err, WF_E_INVALID_ARGUMENT, "the request is not a valid %s message",
                         grpc__reflection__v1__server_reflection_request__descriptor.name);
    }
    grpc_byte_buffer_destroy(bb);
    if (resp == NULL) {
        wf_arena_free(scratch);
        wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (c->send != NULL)
        grpc_byte_buffer_destroy(c->send);
    c->send = wf_rpc__pack(&resp->base);
    wf_arena_free(scratch);
    ops[0].op = GRPC_OP_SEND_MESSAGE;
    ops[0].data.send_message.send_message = c->send;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    pthread_mutex_lock(&c->mu);
    wf_rpc__start_batch_locked(c, ops, 2, &c->t_recv);
    pthread_mutex_unlock(&c->mu);
}

void
wf_rpc__reflection_start(struct call *c)
{
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    grpc_metadata initial[1];
    grpc_slice rid;
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = wf_rpc__initial_metadata(c, initial, &rid);
    ops[0].data.send_initial_metadata.metadata = initial;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    pthread_mutex_lock(&c->mu);
    if (wf_rpc__start_batch_locked(c, ops, 2, &c->t_recv))
        c->started = 1;
    pthread_mutex_unlock(&c->mu);
    grpc_slice_unref(rid);
}
