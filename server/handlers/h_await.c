/*
 * h_await: waiting for a result in the same call: AwaitInstance (a unary
 * long poll), and StartInstance and SendSignal with await_result, whose
 * handlers answer and then park the call here (wf_call.park_state).
 *
 * A waiting call is parked on the stream machinery: it holds no thread
 * and no database connection. Once it has read its instance, it listens
 * to the topic of the instance's root ("root:" + id), which the store's
 * notifications raise for the roots whose events a commit wrote, in this
 * process and on the other replicas: a commit on another root wakes no
 * waiter. It also looks again at least every RECHECK_MS, since
 * notifications are hints. Each wake-up reads the instance once (the view
 * GetInstance answers) and checks the condition on it (engine/await.c). The wait ends
 * with the view when the condition holds, or with the view and timed_out
 * when the timeout or the call's deadline (less DEADLINE_MARGIN_MS) comes.
 */
#include <string.h>

#include "await.h"
#include "h_common.h"
#include "handlers.h"
#include "wf_time.h"

/* Longest pause between two checks of a waiting call. */
#define RECHECK_MS 5000
/* A wait answers this long before the call's deadline. */
#define DEADLINE_MARGIN_MS 200

typedef struct await_state {
    const char *instance_id;
    wf_await_until until;
    int64_t end_ms;          /* monotonic */
    bool names_checked;      /* against the instance's net, at the first check */
    int64_t recheck_ms;      /* monotonic: the timed look, 0 before the first */
    ProtobufCMessage *first; /* StartInstance / SendSignal: their answer; NULL: AwaitInstance */
} await_state;

/* A violation of field + "." + what (what alone for the request's own
 * fields, field ""). */
static wf_code
await_invalid(wf_call *call, const char *field, const char *what, const char *msg, wf_error *err)
{
    char *path = field[0] != '\0' ? wf_arena_printf(call->arena, "%s.%s", field, what)
                                  : wf_arena_strdup(call->arena, what);
    wf_h_violation(call, path != NULL ? path : what, msg);
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s %s", path != NULL ? path : what, msg);
}

static wf_code
await_condition(wf_call *call, const char *field, const Workflow__V1__AwaitUntil *u,
                wf_await_until *out, wf_error *err)
{
    switch (u != NULL ? u->condition_case : WORKFLOW__V1__AWAIT_UNTIL__CONDITION__NOT_SET) {
    case WORKFLOW__V1__AWAIT_UNTIL__CONDITION_ENDED:
        *out = (wf_await_until){WF_AWAIT_ENDED, NULL};
        return WF_OK;
    case WORKFLOW__V1__AWAIT_UNTIL__CONDITION_STEP_ENABLED:
        *out = (wf_await_until){WF_AWAIT_STEP_ENABLED, u->step_enabled};
        break;
    case WORKFLOW__V1__AWAIT_UNTIL__CONDITION_PLACE_MARKED:
        *out = (wf_await_until){WF_AWAIT_PLACE_MARKED, u->place_marked};
        break;
    default:
        return await_invalid(call, field, "until",
                             "must name a condition (ended, step_enabled or place_marked)", err);
    }
    if (out->name == NULL || out->name[0] == '\0')
        return await_invalid(call, field, "until",
                             "must name a step, transition or place (not empty)", err);
    return WF_OK;
}

wf_code
wf_h_await_parse(wf_call *call, const char *field, const Workflow__V1__AwaitUntil *until,
                 const Google__Protobuf__Duration *timeout, void **state, wf_error *err)
{
    await_state *st = wf_arena_calloc(call->arena, 1, sizeof *st);
    if (st == NULL)
        return wf_error_nomem(err);
    wf_code rc = await_condition(call, field, until, &st->until, err);
    if (rc != WF_OK)
        return rc;
    int64_t wait = timeout != NULL ? wf_h_duration_ms(timeout) : WF_AWAIT_MAX_MS;
    if (wait < 0 || (timeout != NULL && (timeout->seconds < 0 || timeout->nanos < 0)))
        return await_invalid(call, field, "timeout", "must not be negative", err);
    if (wait > WF_AWAIT_MAX_MS)
        return await_invalid(call, field, "timeout", "must be at most 60 seconds", err);
    int64_t now = wf_mono_ms();
    st->end_ms = now + wait;
    if (call->deadline_ms > 0 && st->end_ms > call->deadline_ms - DEADLINE_MARGIN_MS)
        st->end_ms = call->deadline_ms - DEADLINE_MARGIN_MS;
    call->wake_topic = WF_TOPIC_EVENTS;
    *state = st;
    return WF_OK;
}

const wf_await_until *
wf_h_await_until(void *state)
{
    return &((await_state *)state)->until;
}

void
wf_h_await_park(wf_call *call, void *state, const char *instance_id, ProtobufCMessage *resp)
{
    await_state *st = state;
    st->instance_id = instance_id;
    st->first = resp;
    st->names_checked = true; /* the handler checked them before its work */
    call->park_state = st;
}

/* The answer: AwaitInstanceResponse, or the first answer with the view. */
static ProtobufCMessage *
await_answer(await_state *st, wf_arena *a, Workflow__V1__GetInstanceResponse *view, bool timed_out)
{
    if (st->first == NULL) {
        Workflow__V1__AwaitInstanceResponse *m = wf_arena_alloc(a, sizeof *m);
        if (m == NULL)
            return NULL;
        workflow__v1__await_instance_response__init(m);
        m->view = view;
        m->timed_out = timed_out;
        return &m->base;
    }
    if (st->first->descriptor == &workflow__v1__start_instance_response__descriptor) {
        Workflow__V1__StartInstanceResponse *m = (void *)st->first;
        m->view = view;
        m->timed_out = timed_out;
    } else {
        Workflow__V1__SendSignalResponse *m = (void *)st->first;
        m->view = view;
        m->timed_out = timed_out;
    }
    return st->first;
}

static wf_stream_step
await_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    await_state *st = state;
    Workflow__V1__GetInstanceResponse *view = NULL;
    wf_instance_view iv;
    if (wf_h_instance_view(call, scratch, st->instance_id, &view, &iv, err) != WF_OK)
        return WF_STREAM_END;
    if (!st->names_checked) {
        st->names_checked = true;
        if (wf_await_check_net(iv.net.is_net ? iv.net.net : NULL, &st->until, err) != WF_OK)
            return WF_STREAM_END;
    }
    int64_t now = wf_mono_ms();
    if (st->recheck_ms != 0 && now < st->recheck_ms)
        __atomic_fetch_add(&call->app->await_wakeups, 1, __ATOMIC_RELAXED);
    else if (st->recheck_ms == 0 && iv.tree.instance.root_id != NULL)
        call->wake_topic =
            wf_arena_printf(call->arena, "%s%s", WF_TOPIC_ROOT_PREFIX, iv.tree.instance.root_id);
    bool met = wf_await_met(&iv, &st->until);
    if (met) {
        /* The view is read in several statements, so one read may hold
         * part of the commit that met the condition and miss the rest
         * (the place marked, its task not yet). That commit is complete
         * now: a second read holds all of it. */
        Workflow__V1__GetInstanceResponse *again = NULL;
        wf_instance_view iv2;
        if (wf_h_instance_view(call, scratch, st->instance_id, &again, &iv2, err) != WF_OK)
            return WF_STREAM_END;
        if (wf_await_met(&iv2, &st->until))
            view = again;
    }
    if (!met && now < st->end_ms) {
        st->recheck_ms = now + RECHECK_MS < st->end_ms ? now + RECHECK_MS : st->end_ms;
        call->wake_at_ms = st->recheck_ms;
        return WF_STREAM_WAIT;
    }
    *msg = await_answer(st, scratch, view, !met);
    if (*msg == NULL) {
        wf_error_nomem(err);
        return WF_STREAM_END;
    }
    return WF_STREAM_MESSAGE;
}

static wf_code
await_open(wf_call *call, const ProtobufCMessage *msg, void **state, wf_error *err)
{
    const Workflow__V1__AwaitInstanceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_INSTANCE, "instance_id", req->instance_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_await_parse(call, "", req->until, req->timeout, state, err);
    if (rc == WF_OK) {
        ((await_state *)*state)->instance_id = req->instance_id;
        return rc;
    }
    /* An id that names nothing is NOT_FOUND whatever else the request
     * holds, as for every RPC (a read on this error path only). */
    Workflow__V1__GetInstanceResponse *view;
    wf_instance_view iv;
    wf_error nf;
    wf_error_clear(&nf);
    if (wf_h_instance_view(call, call->arena, req->instance_id, &view, &iv, &nf) ==
        WF_E_INSTANCE_NOT_FOUND) {
        call->nviolations = 0;
        *err = nf;
        return nf.code;
    }
    return rc;
}

const wf_stream_ops h_await_instance = {await_open, await_next, NULL, true};
const wf_stream_ops h_await_parked = {NULL, await_next, NULL, true};
