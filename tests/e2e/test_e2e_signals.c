/*
 * End-to-end tests of signals (MSG transitions) and SetVariables over
 * gRPC, on the memory store and on Postgres (WF_TEST_STORE=pg):
 * correlation by instance id and by aggregate (every bound instance
 * fires), the oldest waiting work item first, buffering then consumption
 * by a later start or a later enablement (payload merged, at most once),
 * expiry, signal_id deduplication (also racing from two threads), DROPPED,
 * the delivery log (ListSignals), buffered signals discarded when their
 * instance ends, a MSG withdrawn by a competing timeout, and SetVariables;
 * a signal sent to an aggregate racing an instance of it that starts to
 * wait (never both missed); RetryInstance of refused TIME and MSG firings,
 * also of a buffered signal refused when CompleteJob or StartInstance
 * enables its wait (the call itself succeeds); and the waits such a retry
 * finds still armed, which consume a signal buffered for them meanwhile
 * (not one that expired).
 *
 * Timers are fired the way the scheduler fires them (wf_runtime_fire_timer).
 * Postgres keeps rows between runs: keys, aggregates and signal ids are
 * made unique with a per-test suffix.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>
#include <jansson.h>

#include "defcache.h"
#include "expr.h"
#include "net_runtime.h"
#include "net_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

#define T_USER WORKFLOW__V1__TRIGGER__TRIGGER_USER
#define T_AUTO WORKFLOW__V1__TRIGGER__TRIGGER_AUTO
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define O_CORRELATED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED
#define O_BUFFERED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED
#define O_DUPLICATE WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DUPLICATE
#define O_DROPPED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DROPPED
#define C_AGGREGATE WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE

static Workflow__V1__Transition *
msg(nb *n, const char *id, const char *signal, bool by_aggregate)
{
    Workflow__V1__Transition *t = trans(n, id, T_MSG);
    t->signal_name = (char *)signal;
    if (by_aggregate)
        t->correlation = C_AGGREGATE;
    return t;
}

static void
user1(Workflow__V1__Transition *t, const char *id)
{
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 2, sizeof *a->ids);
    a->ids[a->n_ids++] = (char *)id;
    t->assignee = a;
}

/* Starts key as c, bound to aggregate ("order", agg_id) unless agg_id is
 * NULL. */
static Workflow__V1__Instance *
start_c(wf_client *c, const char *key, const char *agg_id, const char *vars)
{
    return start_order(c, key, agg_id, vars, NULL);
}

static Workflow__V1__Instance *
start(const char *key, const char *agg_id, const char *vars)
{
    return start_c(as("boss"), key, agg_id, vars);
}

/* The open task of transition_id. */
static const char *
open_task(const Workflow__V1__GetInstanceResponse *g, const char *transition_id)
{
    for (size_t i = 0; i < g->n_tasks; i++)
        if (strcmp(g->tasks[i]->transition_id, transition_id) == 0 &&
            g->tasks[i]->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN)
            return g->tasks[i]->id;
    ck_abort_msg("no open task of %s", transition_id);
    return NULL;
}

static void
complete(const char *actor, const char *task_id)
{
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    wf_client_status st;
    req.task_id = (char *)task_id;
    call(as(actor), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
}

/* SendSignal: to instance_id, or to the aggregate ("order", agg_id);
 * with start when not NULL. */
static Workflow__V1__SendSignalResponse *
send_cs(wf_client *c, const char *name, const char *instance_id, const char *agg_id,
        const char *payload, const char *signal_id, int64_t ttl_ms,
        Workflow__V1__SignalStart *start, wf_client_status *st)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    req.start = start;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    req.name = (char *)name;
    if (instance_id != NULL) {
        req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
        req.instance_id = (char *)instance_id;
    } else if (agg_id != NULL) {
        agg.type = "order";
        agg.id = (char *)agg_id;
        req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
        req.aggregate = &agg;
    }
    req.payload_json = (char *)(payload != NULL ? payload : "");
    req.signal_id = (char *)(signal_id != NULL ? signal_id : "");
    if (ttl_ms != 0)
        req.buffer_ttl = dur(ttl_ms);
    return call(c, "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, st);
}

static Workflow__V1__SendSignalResponse *
send_c(wf_client *c, const char *name, const char *instance_id, const char *agg_id,
       const char *payload, const char *signal_id, int64_t ttl_ms, wf_client_status *st)
{
    return send_cs(c, name, instance_id, agg_id, payload, signal_id, ttl_ms, NULL, st);
}

static Workflow__V1__SendSignalResponse *
send_sig(const char *name, const char *instance_id, const char *agg_id, const char *payload,
         const char *signal_id, int64_t ttl_ms)
{
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r =
        send_c(as(NULL), name, instance_id, agg_id, payload, signal_id, ttl_ms, &st);
    ck_ok(st);
    return r;
}

static Workflow__V1__ListSignalsResponse *
list_signals(const char *instance_id, const char *agg_id)
{
    Workflow__V1__ListSignalsRequest req = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    wf_client_status st;
    if (instance_id != NULL) {
        req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
        req.instance_id = (char *)instance_id;
    } else {
        agg.type = "order";
        agg.id = (char *)agg_id;
        req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
        req.aggregate = &agg;
    }
    Workflow__V1__ListSignalsResponse *r =
        call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    return r;
}

/* The value of key in a JSON object text, as compact text (test-owned). */
static char *
var(const char *json, const char *key)
{
    json_t *o = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *v = json_object_get(o, key);
    char *s = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char *copy = s != NULL ? wf_arena_strdup(ta, s) : NULL;
    free(s);
    json_decref(o);
    return copy;
}

/* s --recv(MSG name)--> e: waits for one signal. */
static char *
one_msg_net(const char *tag, const char *signal, bool by_aggregate)
{
    char *key = u(tag);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    msg(n, "recv", signal, by_aggregate);
    arc(n, "s", "recv");
    arc(n, "recv", "e");
    deploy(n);
    return key;
}

/* ---- tests ---------------------------------------------------------------------------------- */

WF_TEST(test_correlate_by_instance)
{
    char *key = one_msg_net("byid", "paid", false);
    Workflow__V1__Instance *in = start(key, NULL, "{\"a\":1}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    /* Another name, or the aggregate path, does not reach it. */
    Workflow__V1__SendSignalResponse *r = send_sig("other", in->id, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    r = send_sig("paid", in->id, NULL, "{\"amount\":42}", NULL, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_uint_eq(r->n_instance_ids, 1);
    ck_assert_str_eq(r->instance_ids[0], in->id);
    ck_assert_ptr_null(r->expires_at);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g->instance->variables_json, "amount"), "42");
    ck_assert_str_eq(var(g->instance->variables_json, "a"), "1");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "SIGNAL_RECEIVED SIGNAL_CONSUMED TRANSITION_FIRED") != NULL, "%s", ev);
    /* The instance has ended: a later signal is DROPPED. */
    r = send_sig("paid", in->id, NULL, NULL, NULL, 60000);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    ck_assert_ptr_null(r->expires_at);

    /* The delivery log of the instance. */
    Workflow__V1__ListSignalsResponse *l = list_signals(in->id, NULL);
    ck_assert_uint_eq(l->n_signals, 3);
    ck_assert_int_eq(l->signals[0]->outcome, O_DROPPED);
    ck_assert_str_eq(l->signals[0]->name, "other");
    Workflow__V1__Signal *s = l->signals[1];
    ck_assert_int_eq(s->outcome, O_CORRELATED);
    ck_assert_str_eq(s->name, "paid");
    ck_assert_str_eq(s->instance_id, in->id);
    ck_assert_ptr_null(s->aggregate);
    ck_assert_str_eq(s->consumed_by_instance, in->id);
    ck_assert_str_eq(s->transition_id, "recv");
    ck_assert_str_eq(var(s->payload_json, "amount"), "42");
    ck_assert_ptr_nonnull(s->received_at);
    ck_assert_ptr_nonnull(s->consumed_at);
    ck_assert_ptr_null(s->expires_at);
    ck_assert_str_eq(s->signal_id, "");
    ck_assert_int_eq(l->signals[2]->outcome, O_DROPPED);
    ck_assert_ptr_null(l->signals[2]->consumed_at);
    ck_assert_str_eq(l->next_page_token, "");

    /* Bad requests. */
    wf_client_status st;
    send_c(as(NULL), "", in->id, NULL, NULL, NULL, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    send_c(as(NULL), "paid", NULL, NULL, NULL, NULL, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    send_c(as(NULL), "paid", in->id, NULL, NULL, NULL, -1000, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    send_c(as(NULL), "paid", in->id, NULL, "[1]", NULL, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    send_c(as(NULL), "paid", "nope-no-such-instance", NULL, NULL, NULL, 0, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
}
END_TEST

WF_TEST(test_correlate_by_aggregate_fires_every_instance)
{
    char *key = one_msg_net("byagg", "payment", true);
    char *agg = u("A");
    Workflow__V1__Instance *i1 = start(key, agg, NULL);
    Workflow__V1__Instance *i2 = start(key, agg, NULL);
    Workflow__V1__Instance *other = start(key, u("B"), NULL);
    /* INSTANCE addressing does not reach an AGGREGATE subscription. */
    Workflow__V1__SendSignalResponse *r = send_sig("payment", i1->id, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    r = send_sig("payment", NULL, agg, "{\"paid\":true}", NULL, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_uint_eq(r->n_instance_ids, 2);
    ck_assert_str_eq(r->instance_ids[0], i1->id);
    ck_assert_str_eq(r->instance_ids[1], i2->id);
    ck_assert_int_eq(get_instance(i1->id)->instance->status, I_COMPLETED);
    Workflow__V1__GetInstanceResponse *g2 = get_instance(i2->id);
    ck_assert_int_eq(g2->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g2->instance->variables_json, "paid"), "true");
    ck_assert_int_eq(get_instance(other->id)->instance->status, I_RUNNING);
    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 1);
    Workflow__V1__Signal *s = l->signals[0];
    ck_assert_int_eq(s->outcome, O_CORRELATED);
    ck_assert_ptr_nonnull(s->aggregate);
    ck_assert_str_eq(s->aggregate->type, "order");
    ck_assert_str_eq(s->aggregate->id, agg);
    ck_assert_str_eq(s->instance_id, "");
    ck_assert_str_eq(s->consumed_by_instance, i1->id); /* the first */
    ck_assert_str_eq(s->transition_id, "recv");
}
END_TEST

WF_TEST(test_oldest_work_item_first)
{
    /* "late" is declared first but enabled after "early". */
    char *key = u("oldest");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "q0", NORMAL);
    place(n, "q", NORMAL);
    place(n, "x", NORMAL);
    place(n, "y", NORMAL);
    place(n, "e", END);
    msg(n, "late", "go", false);
    trans(n, "fork", T_AUTO);
    msg(n, "early", "go", false);
    user1(trans(n, "step", T_USER), "ann");
    trans(n, "join", T_AUTO);
    arc(n, "s", "fork");
    arc(n, "fork", "p");
    arc(n, "fork", "q0");
    arc(n, "q0", "step");
    arc(n, "step", "q");
    arc(n, "p", "early");
    arc(n, "early", "x");
    arc(n, "q", "late");
    arc(n, "late", "y");
    arc(n, "x", "join");
    arc(n, "y", "join");
    arc(n, "join", "e");
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    sleep_ms(5);
    complete("ann", open_task(get_instance(in->id), "step"));
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_awaiting_signals, 2);
    Workflow__V1__SendSignalResponse *r = send_sig("go", in->id, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "x"), 1);
    ck_assert_int_eq(marking(g, "q"), 1);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_str_eq(g->awaiting_signals[0]->transition_id, "late");
    r = send_sig("go", in->id, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_buffered_then_consumed_by_a_later_start)
{
    char *key = one_msg_net("buf", "payment", true);
    char *agg = u("A");
    Workflow__V1__SendSignalResponse *r =
        send_sig("payment", NULL, agg, "{\"amount\":7}", u("sig"), 60000);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    ck_assert_uint_eq(r->n_instance_ids, 0);
    ck_assert_ptr_nonnull(r->expires_at);
    int64_t now_s = wf_now_us() / 1000000;
    ck_assert_int_ge(r->expires_at->seconds, now_s + 55);
    ck_assert_int_le(r->expires_at->seconds, now_s + 61);
    /* The instance consumes it at enablement, in the start itself. */
    Workflow__V1__Instance *in = start(key, agg, "{\"a\":1}");
    ck_assert_int_eq(in->status, I_COMPLETED);
    ck_assert_str_eq(var(in->variables_json, "amount"), "7");
    ck_assert_str_eq(var(in->variables_json, "a"), "1");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "TRANSITION_ENABLED SIGNAL_CONSUMED TRANSITION_FIRED") != NULL, "%s",
                  ev);
    /* At most once: the next instance waits. */
    Workflow__V1__Instance *in2 = start(key, agg, NULL);
    ck_assert_int_eq(in2->status, I_RUNNING);
    ck_assert_uint_eq(get_instance(in2->id)->n_buffered_signals, 0);
    /* The log row stays BUFFERED and records the consumption. */
    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 1);
    Workflow__V1__Signal *s = l->signals[0];
    ck_assert_int_eq(s->outcome, O_BUFFERED);
    ck_assert_ptr_nonnull(s->expires_at);
    ck_assert_ptr_nonnull(s->consumed_at);
    ck_assert_str_eq(s->consumed_by_instance, in->id);
    ck_assert_str_eq(s->transition_id, "recv");
    ck_assert_str_eq(s->signal_id, u("sig"));
    /* By instance id, the log shows what the instance consumed. */
    ck_assert_uint_eq(list_signals(in->id, NULL)->n_signals, 1);
}
END_TEST

WF_TEST(test_buffered_by_id_then_consumed_at_enablement)
{
    /* s -> step (USER) -> p -> recv (MSG) -> e */
    char *key = u("later");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    user1(trans(n, "step", T_USER), "ann");
    msg(n, "recv", "done", false);
    arc(n, "s", "step");
    arc(n, "step", "p");
    arc(n, "p", "recv");
    arc(n, "recv", "e");
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    Workflow__V1__SendSignalResponse *r =
        send_sig("done", in->id, NULL, "{\"z\":\"y\"}", NULL, 60000);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    ck_assert_str_eq(g->buffered_signals[0]->name, "done");
    ck_assert_int_eq(g->buffered_signals[0]->outcome, O_BUFFERED);
    ck_assert(count_of(event_types(in->id), "SIGNAL_BUFFERED") == 1);
    complete("ann", open_task(g, "step"));
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g->instance->variables_json, "z"), "\"y\"");
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    Workflow__V1__Signal *s = list_signals(in->id, NULL)->signals[0];
    ck_assert_int_eq(s->outcome, O_BUFFERED);
    ck_assert_str_eq(s->consumed_by_instance, in->id);
}
END_TEST

WF_TEST(test_expired_signal_is_never_consumed)
{
    char *key = one_msg_net("exp", "payment", true);
    char *agg = u("A");
    Workflow__V1__SendSignalResponse *r = send_sig("payment", NULL, agg, NULL, NULL, 300);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    sleep_ms(700);
    Workflow__V1__Instance *in = start(key, agg, NULL);
    ck_assert_int_eq(in->status, I_RUNNING);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    Workflow__V1__Signal *s = list_signals(NULL, agg)->signals[0];
    ck_assert_int_eq(s->outcome, O_BUFFERED);
    ck_assert_ptr_null(s->consumed_at);
    ck_assert_str_eq(s->consumed_by_instance, "");
}
END_TEST

/* s -> one (MSG go) -> p -> two (MSG go) -> e */
static char *
two_step_net(const char *tag)
{
    char *key = u(tag);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    msg(n, "one", "go", false);
    msg(n, "two", "go", false);
    arc(n, "s", "one");
    arc(n, "one", "p");
    arc(n, "p", "two");
    arc(n, "two", "e");
    deploy(n);
    return key;
}

WF_TEST(test_duplicate_signal_id_changes_nothing)
{
    char *key = two_step_net("dup");
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    char *sid = u("sid");
    Workflow__V1__SendSignalResponse *r = send_sig("go", in->id, NULL, "{\"n\":1}", sid, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    r = send_sig("go", in->id, NULL, "{\"n\":2}", sid, 0);
    ck_assert_int_eq(r->outcome, O_DUPLICATE);
    ck_assert_uint_eq(r->n_instance_ids, 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "p"), 1);
    ck_assert_str_eq(var(g->instance->variables_json, "n"), "1");
    /* The duplicate has a row of its own, and changed nothing else. */
    Workflow__V1__ListSignalsResponse *l = list_signals(in->id, NULL);
    ck_assert_uint_eq(l->n_signals, 2);
    ck_assert_int_eq(l->signals[1]->outcome, O_DUPLICATE);
    ck_assert_str_eq(l->signals[1]->signal_id, sid);
    ck_assert_ptr_null(l->signals[1]->consumed_at);
    /* A duplicate is recognised whatever its target. */
    r = send_sig("go", NULL, u("Z"), NULL, sid, 60000);
    ck_assert_int_eq(r->outcome, O_DUPLICATE);
    r = send_sig("go", in->id, NULL, NULL, u("sid2"), 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

/* WatchEvents history of the given types whose data mentions tag, as
 * "TYPE TYPE ..." (EventType names without prefix); the data_json of the
 * i-th such event goes to data[i] (up to cap). Retried briefly: Postgres
 * numbers committed events asynchronously. */
static char *
watched(const Workflow__V1__EventType *types, size_t n_types, const char *tag, size_t want,
        char **data, size_t cap)
{
    static char out[2048];
    for (int attempt = 0; attempt < 40; attempt++) {
        Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
        req.types = (Workflow__V1__EventType *)types;
        req.n_types = n_types;
        wf_client_stream *st = wf_client_stream_open(as(NULL), SVC "WatchEvents", &req.base, NULL);
        ck_assert_ptr_nonnull(st);
        ProtobufCMessage *m;
        wf_client_status cs;
        size_t n = 0;
        out[0] = '\0';
        while (
            wf_client_stream_next(st, &workflow__v1__watch_events_response__descriptor, &m, &cs)) {
            Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
            if (strstr(e->data_json, tag) != NULL) {
                const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
                    &workflow__v1__event_type__descriptor, e->type);
                size_t len = strlen(out);
                snprintf(out + len, sizeof out - len, "%s%s", len ? " " : "",
                         v != NULL ? v->name + strlen("EVENT_TYPE_") : "?");
                if (n < cap)
                    data[n] = wf_arena_strdup(ta, e->data_json);
                n++;
            }
            protobuf_c_message_free_unpacked(m, NULL);
        }
        wf_client_stream_close(st);
        ck_ok(cs);
        if (n >= want)
            break;
        sleep_ms(50);
    }
    return out;
}

/* Every delivery is logged: DROPPED, BUFFERED, CORRELATED, DUPLICATE,
 * DROPPED leave five rows (the DUPLICATE one once had none), and the
 * DROPPED and DUPLICATE ones are events a watcher sees without polling
 * the log. */
WF_TEST(test_every_delivery_is_logged_and_lost_ones_are_events)
{
    char *key = u("five");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    msg(n, "one", "go", true);
    msg(n, "two", "go", true);
    arc(n, "s", "one");
    arc(n, "one", "p");
    arc(n, "p", "two");
    arc(n, "two", "e");
    deploy(n);
    char *agg = u("FIVE");
    char *sid = u("five-3");
    ck_assert_int_eq(send_sig("go", NULL, agg, NULL, u("five-1"), 0)->outcome, O_DROPPED);
    ck_assert_int_eq(send_sig("go", NULL, agg, NULL, u("five-2"), 60000)->outcome, O_BUFFERED);
    Workflow__V1__Instance *in = start(key, agg, NULL); /* "one" consumes the buffered one */
    ck_assert_int_eq(marking(get_instance(in->id), "p"), 1);
    ck_assert_int_eq(send_sig("go", NULL, agg, "{\"n\":1}", sid, 0)->outcome, O_CORRELATED);
    Workflow__V1__SendSignalResponse *r = send_sig("go", NULL, agg, "{\"n\":2}", sid, 60000);
    ck_assert_int_eq(r->outcome, O_DUPLICATE);
    ck_assert_uint_eq(r->n_instance_ids, 0);
    ck_assert_ptr_null(r->expires_at);
    ck_assert_int_eq(send_sig("go", NULL, agg, NULL, u("five-5"), 0)->outcome, O_DROPPED);

    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 5);
    const int want[] = {O_DROPPED, O_BUFFERED, O_CORRELATED, O_DUPLICATE, O_DROPPED};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(l->signals[i]->outcome, want[i]);
    ck_assert_str_eq(l->signals[1]->consumed_by_instance, in->id);
    Workflow__V1__Signal *dup = l->signals[3];
    ck_assert_str_eq(dup->signal_id, sid);
    ck_assert_str_eq(dup->payload_json, "{\"n\":2}");
    ck_assert_ptr_null(dup->consumed_at);
    ck_assert_ptr_null(dup->expires_at);
    ck_assert_str_ne(dup->id, l->signals[2]->id);
    /* Nothing else changed: the instance kept the first payload. */
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g->instance->variables_json, "n"), "1");
    ck_assert_uint_eq(g->n_buffered_signals, 0);

    Workflow__V1__EventType types[] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_SIGNAL_DROPPED,
                                       WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_SIGNAL_DUPLICATE};
    char *data[3] = {0};
    ck_assert_str_eq(watched(types, 2, agg, 3, data, 3),
                     "SIGNAL_DROPPED SIGNAL_DUPLICATE SIGNAL_DROPPED");
    json_t *d = json_loads(data[1], 0, NULL);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(json_string_value(json_object_get(d, "signalLogId")), dup->id);
    ck_assert_str_eq(json_string_value(json_object_get(d, "originalSignalLogId")),
                     l->signals[2]->id);
    ck_assert_str_eq(json_string_value(json_object_get(d, "signalId")), sid);
    ck_assert_str_eq(json_string_value(json_object_get(d, "aggregateId")), agg);
    json_decref(d);

    /* By instance id: the DROPPED event belongs to the instance. */
    ck_assert_int_eq(send_sig("go", in->id, NULL, NULL, NULL, 0)->outcome, O_DROPPED);
    ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_DROPPED"), 1);
}
END_TEST

/* ---- correlate or start -------------------------------------------------------------------- */

static Workflow__V1__SignalStart *
start_of(const char *key, const char *vars)
{
    Workflow__V1__SignalStart *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__signal_start__init(s);
    s->definition_key = (char *)key;
    s->variables_json = (char *)(vars != NULL ? vars : "");
    return s;
}

/* Root instances of aggregate ("order", agg_id) started by actor. */
static size_t
instances_of(const char *actor, const char *agg_id)
{
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    wf_client_status st;
    agg.type = "order";
    agg.id = (char *)agg_id;
    req.aggregate = &agg;
    Workflow__V1__ListInstancesResponse *l = call(
        as(actor), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    return l->n_instances;
}

/* s -> recv (MSG paid, aggregate) -> p -> ship (USER alice) -> e */
static char *
paid_then_ship(const char *tag)
{
    char *key = u(tag);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    msg(n, "recv", "paid", true);
    user1(trans(n, "ship", T_USER), "alice");
    arc(n, "s", "recv");
    arc(n, "recv", "p");
    arc(n, "p", "ship");
    arc(n, "ship", "e");
    deploy(n);
    return key;
}

/* SendSignal with start: no instance of the aggregate, so one starts and
 * its first wait consumes the signal (STARTED); then the instance runs but
 * does not wait (DROPPED / BUFFERED, nothing started); a waiting instance
 * is CORRELATED; a duplicate changes nothing; refusals. */
WF_TEST(test_correlate_or_start)
{
    char *key = paid_then_ship("cos");
    char *agg = u("COS");
    wf_client *hook = as("hook");
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r =
        send_cs(hook, "paid", NULL, agg, "{\"amount\":5}", u("cos-1"), 0,
                start_of(key, "{\"src\":\"webhook\"}"), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_STARTED);
    ck_assert_uint_eq(r->n_instance_ids, 1);
    ck_assert_ptr_nonnull(r->expires_at); /* 24 h without buffer_ttl */
    ck_assert_int_ge(r->expires_at->seconds, time(NULL) + 23 * 3600);
    char *id = wf_arena_strdup(ta, r->instance_ids[0]);
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_str_eq(g->instance->definition_key, key);
    ck_assert_str_eq(g->instance->started_by, "hook");
    ck_assert_str_eq(g->instance->aggregate->id, agg);
    ck_assert_int_eq(marking(g, "p"), 1); /* the first wait consumed it */
    ck_assert_str_eq(var(g->instance->variables_json, "amount"), "5");
    ck_assert_str_eq(var(g->instance->variables_json, "src"), "\"webhook\"");
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert_int_eq(l->signals[0]->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_STARTED);
    ck_assert_str_eq(l->signals[0]->consumed_by_instance, id);
    ck_assert_str_eq(l->signals[0]->transition_id, "recv");
    ck_assert_msg(strstr(event_types(id), "INSTANCE_STARTED") == event_types(id), "%s",
                  event_types(id));
    ck_assert_int_eq(count_of(event_types(id), "SIGNAL_CONSUMED"), 1);

    /* Running, not waiting: the normal outcome, nothing started. */
    r = send_cs(hook, "paid", NULL, agg, NULL, u("cos-2"), 0, start_of(key, NULL), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    r = send_cs(hook, "paid", NULL, agg, NULL, u("cos-3"), 60000, start_of(key, NULL), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    ck_assert_uint_eq(r->n_instance_ids, 0);
    ck_assert_uint_eq(instances_of("hook", agg), 1);
    /* A duplicate starts nothing either. */
    r = send_cs(hook, "paid", NULL, agg, NULL, u("cos-1"), 0, start_of(key, NULL), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, O_DUPLICATE);
    ck_assert_uint_eq(instances_of("hook", agg), 1);

    /* Waiting: correlated, nothing started. */
    char *agg2 = u("COS2");
    Workflow__V1__Instance *waiting = start(key, agg2, NULL);
    r = send_cs(hook, "paid", NULL, agg2, NULL, NULL, 0, start_of(key, NULL), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_uint_eq(r->n_instance_ids, 1);
    ck_assert_str_eq(r->instance_ids[0], waiting->id);
    ck_assert_uint_eq(instances_of("hook", agg2), 0);

    /* Refusals: by instance id, a bad start, no actor, an unknown version. */
    ck_assert_ptr_null(send_cs(hook, "paid", id, NULL, NULL, NULL, 0, start_of(key, NULL), &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_str_eq(st.violations[0],
                     "start: needs the signal sent to an aggregate, not to an instance_id");
    char *agg3 = u("COS3");
    ck_assert_ptr_null(send_cs(hook, "paid", NULL, agg3, NULL, NULL, 0, start_of("", NULL), &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(strncmp(st.violations[0], "start.definition_key: ", 22) == 0, "%s",
                  st.violations[0]);
    ck_assert_ptr_null(send_cs(hook, "paid", NULL, agg3, NULL, NULL, 0, start_of(key, "[1]"), &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    ck_assert_ptr_null(
        send_cs(as(NULL), "paid", NULL, agg3, NULL, NULL, 0, start_of(key, NULL), &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    Workflow__V1__SignalStart *v9 = start_of(key, NULL);
    v9->version = 9;
    ck_assert_ptr_null(send_cs(hook, "paid", NULL, agg3, NULL, NULL, 0, v9, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    ck_assert_uint_eq(list_signals(NULL, agg3)->n_signals, 0); /* refused: not logged */
    ck_assert_uint_eq(instances_of("hook", agg3), 0);
}
END_TEST

/* A started instance whose first step is not the wait: the signal stays
 * buffered for it (even without buffer_ttl) until its wait consumes it. */
WF_TEST(test_start_buffers_for_a_later_wait)
{
    char *key = u("cosl");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    user1(trans(n, "review", T_USER), "alice");
    msg(n, "recv", "paid", true);
    arc(n, "s", "review");
    arc(n, "review", "p");
    arc(n, "p", "recv");
    arc(n, "recv", "e");
    deploy(n);
    char *agg = u("COSL");
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r =
        send_cs(as("hook"), "paid", NULL, agg, "{\"amount\":7}", NULL, 0, start_of(key, NULL), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_STARTED);
    char *id = wf_arena_strdup(ta, r->instance_ids[0]);
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    ck_assert_int_eq(count_of(event_types(id), "SIGNAL_CONSUMED"), 0);
    complete("alice", open_task(g, "review"));
    g = get_instance(id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g->instance->variables_json, "amount"), "7");
    ck_assert_str_eq(list_signals(NULL, agg)->signals[0]->consumed_by_instance, id);
}
END_TEST

/* s -> recv (MSG go, aggregate) -> p; p -> more (MSG go, aggregate) -> p;
 * p -> done (MSG stop) -> e: every "go" of the aggregate is consumed, and
 * the instance stays running. */
static char *
loop_net(const char *tag)
{
    char *key = u(tag);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    msg(n, "recv", "go", true);
    msg(n, "more", "go", true);
    msg(n, "done", "stop", true);
    arc(n, "s", "recv");
    arc(n, "recv", "p");
    arc(n, "p", "more");
    arc(n, "more", "p");
    arc(n, "p", "done");
    arc(n, "done", "e");
    deploy(n);
    return key;
}

#define STARTERS 8

typedef struct starter {
    wf_client *c;
    const char *agg_id;
    const char *key;
    const char *signal_id;
    pthread_barrier_t *bar;
    wf_client_status st;
    int outcome;
    char instance[64];
} starter;

static void *
race_start(void *arg)
{
    starter *r = arg;
    Workflow__V1__SignalStart s = WORKFLOW__V1__SIGNAL_START__INIT;
    s.definition_key = (char *)r->key;
    pthread_barrier_wait(r->bar);
    Workflow__V1__SendSignalResponse *resp =
        send_cs(r->c, "go", NULL, r->agg_id, NULL, r->signal_id, 60000, &s, &r->st);
    r->outcome = resp != NULL ? (int)resp->outcome : -1;
    if (resp != NULL && resp->n_instance_ids == 1)
        snprintf(r->instance, sizeof r->instance, "%s", resp->instance_ids[0]);
    return NULL;
}

/* Concurrent senders with start to one aggregate (different signal ids;
 * on Postgres through two servers, as two replicas): exactly one instance
 * starts, every other signal correlates with it or is buffered for it,
 * and it consumes all of them. */
WF_TEST(test_concurrent_starters_start_one_instance)
{
    char *key = loop_net("cosr");
    wf_test_server ts2 = {0};
    bool two = wf_test_store_is_pg();
    if (two)
        wf_test_server_start(&ts2, NULL);
    for (int round = 0; round < 3; round++) {
        char *agg = wf_arena_printf(ta, "%s-%d", u("COSR"), round);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, STARTERS);
        starter r[STARTERS];
        pthread_t th[STARTERS];
        for (int i = 0; i < STARTERS; i++) {
            r[i] =
                (starter){.c = two && i % 2 ? wf_test_client(&ts2, NULL, NULL, "hook") : as("hook"),
                          .agg_id = agg,
                          .key = key,
                          .signal_id = wf_arena_printf(ta, "%s-%d", agg, i),
                          .bar = &bar,
                          .outcome = -1};
            pthread_create(&th[i], NULL, race_start, &r[i]);
        }
        for (int i = 0; i < STARTERS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        int started = 0;
        const char *id = NULL;
        for (int i = 0; i < STARTERS; i++) {
            ck_assert_msg(r[i].st.code == 0, "%d %s %s", r[i].st.code, r[i].st.reason,
                          r[i].st.message);
            if (r[i].outcome == WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_STARTED) {
                started++;
                id = wf_arena_strdup(ta, r[i].instance);
            } else {
                ck_assert_msg(r[i].outcome == O_CORRELATED || r[i].outcome == O_BUFFERED,
                              "outcome %d", r[i].outcome);
            }
            if (two && i % 2)
                wf_client_free(r[i].c);
        }
        ck_assert_int_eq(started, 1);
        for (int i = 0; i < STARTERS; i++)
            if (r[i].outcome == O_CORRELATED)
                ck_assert_str_eq(r[i].instance, id);
        ck_assert_uint_eq(instances_of("hook", agg), 1);
        ck_assert_int_eq(count_of(event_types(id), "SIGNAL_CONSUMED"), STARTERS);
        ck_assert_int_eq(marking(get_instance(id), "p"), 1);
    }
    if (two)
        wf_test_server_stop(&ts2, 1000);
}
END_TEST

typedef struct racer {
    const char *agg_id; /* by aggregate when set */
    const char *instance_id;
    const char *signal_id;
    pthread_barrier_t *bar;
    int code;
    int outcome;
    char message[1024];
} racer;

static void *
race(void *arg)
{
    racer *r = arg;
    wf_client *c = as(NULL);
    wf_client_status st;
    pthread_barrier_wait(r->bar);
    Workflow__V1__SendSignalResponse *resp = send_c(
        c, "go", r->agg_id != NULL ? NULL : r->instance_id, r->agg_id, NULL, r->signal_id, 0, &st);
    r->code = st.code;
    snprintf(r->message, sizeof r->message, "%s %s", st.reason, st.message);
    r->outcome = resp != NULL ? (int)resp->outcome : -1;
    return NULL;
}

WF_TEST(test_concurrent_duplicates_correlate_once)
{
    char *key = two_step_net("race");
    for (int round = 0; round < 3; round++) {
        Workflow__V1__Instance *in = start(key, NULL, NULL);
        char *sid = wf_arena_printf(ta, "%s-%d", u("race"), round);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        racer r[2] = {{NULL, in->id, sid, &bar, -1, -1, ""}, {NULL, in->id, sid, &bar, -1, -1, ""}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race, &r[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        ck_assert_msg(r[0].code == 0, "%d %s", r[0].code, r[0].message);
        ck_assert_msg(r[1].code == 0, "%d %s", r[1].code, r[1].message);
        ck_assert_int_eq((r[0].outcome == O_CORRELATED) + (r[1].outcome == O_CORRELATED), 1);
        ck_assert_int_eq((r[0].outcome == O_DUPLICATE) + (r[1].outcome == O_DUPLICATE), 1);
        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_int_eq(marking(g, "p"), 1); /* fired once */
        ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_CONSUMED"), 1);
        ck_assert_uint_eq(list_signals(in->id, NULL)->n_signals, 2); /* one is DUPLICATE */
    }
}
END_TEST

WF_TEST(test_concurrent_duplicates_by_aggregate)
{
    char *key = u("racea");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    msg(n, "recv", "go", true);
    arc(n, "s", "recv");
    arc(n, "recv", "e");
    deploy(n);
    for (int round = 0; round < 3; round++) {
        char *agg = wf_arena_printf(ta, "%s-%d", u("AG"), round);
        Workflow__V1__Instance *i1 = start(key, agg, NULL);
        Workflow__V1__Instance *i2 = start(key, agg, NULL);
        char *sid = wf_arena_printf(ta, "%s-%d", u("racea"), round);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        racer r[2] = {{agg, NULL, sid, &bar, -1, -1, ""}, {agg, NULL, sid, &bar, -1, -1, ""}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race, &r[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        ck_assert_msg(r[0].code == 0, "%d %s", r[0].code, r[0].message);
        ck_assert_msg(r[1].code == 0, "%d %s", r[1].code, r[1].message);
        ck_assert_int_eq((r[0].outcome == O_CORRELATED) + (r[1].outcome == O_CORRELATED), 1);
        ck_assert_int_eq((r[0].outcome == O_DUPLICATE) + (r[1].outcome == O_DUPLICATE), 1);
        ck_assert_int_eq(get_instance(i1->id)->instance->status, I_COMPLETED);
        ck_assert_int_eq(get_instance(i2->id)->instance->status, I_COMPLETED);
        ck_assert_int_eq(count_of(event_types(i1->id), "SIGNAL_CONSUMED"), 1);
        ck_assert_int_eq(count_of(event_types(i2->id), "SIGNAL_CONSUMED"), 1);
        Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
        ck_assert_uint_eq(l->n_signals, 2);
        ck_assert_int_eq(
            (l->signals[0]->outcome == O_DUPLICATE) + (l->signals[1]->outcome == O_DUPLICATE), 1);
    }
}
END_TEST

WF_TEST(test_dropped_without_ttl)
{
    char *agg = u("nobody");
    Workflow__V1__SendSignalResponse *r = send_sig("payment", NULL, agg, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    ck_assert_ptr_null(r->expires_at);
    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert_int_eq(l->signals[0]->outcome, O_DROPPED);
    ck_assert_ptr_null(l->signals[0]->expires_at);
    ck_assert_ptr_nonnull(l->signals[0]->received_at);
    /* Paging, the name filter and bad listings. */
    send_sig("other", NULL, agg, NULL, NULL, 0);
    send_sig("payment", NULL, agg, NULL, NULL, 0);
    Workflow__V1__ListSignalsRequest req = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    Workflow__V1__Aggregate ag = WORKFLOW__V1__AGGREGATE__INIT;
    wf_client_status st;
    ag.type = "order";
    ag.id = agg;
    req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &ag;
    req.page_size = 2;
    l = call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 2);
    ck_assert_str_ne(l->next_page_token, "");
    req.page_token = l->next_page_token;
    l = call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert_str_eq(l->signals[0]->name, "payment");
    ck_assert_str_eq(l->next_page_token, "");
    req.page_token = "";
    req.page_size = 0;
    req.name = "payment";
    l = call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 2);
    req.page_size = -1;
    call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    req.page_size = 0;
    req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET__NOT_SET;
    call(as(NULL), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* A later instance does not get it. */
    char *key = one_msg_net("drop", "payment", true);
    ck_assert_int_eq(start(key, agg, NULL)->status, I_RUNNING);
}
END_TEST

WF_TEST(test_buffered_signals_discarded_when_the_instance_ends)
{
    /* fork -> p1: step (USER) -> x: recv (MSG) -> e; p2: fin (USER) -> e.
     * Completing fin ends the case before recv is ever enabled. */
    char *key = u("discard");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p1", NORMAL);
    place(n, "p2", NORMAL);
    place(n, "x", NORMAL);
    place(n, "e", END);
    trans(n, "fork", T_AUTO);
    user1(trans(n, "step", T_USER), "ann");
    msg(n, "recv", "late", false);
    user1(trans(n, "fin", T_USER), "bob");
    arc(n, "s", "fork");
    arc(n, "fork", "p1");
    arc(n, "fork", "p2");
    arc(n, "p1", "step");
    arc(n, "step", "x");
    arc(n, "x", "recv");
    arc(n, "recv", "e");
    arc(n, "p2", "fin");
    arc(n, "fin", "e");
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    Workflow__V1__SendSignalResponse *r = send_sig("late", in->id, NULL, NULL, NULL, 60000);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    complete("bob", open_task(g, "fin"));
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    Workflow__V1__Signal *s = list_signals(in->id, NULL)->signals[0];
    ck_assert_int_eq(s->outcome, O_BUFFERED);
    ck_assert_ptr_null(s->consumed_at);
    /* In the store: out of the buffer, discarded. */
    wf_arena *a = wf_arena_new();
    wf_store_ctx sc = {"default", 0, a};
    wf_signal_filter f = {.instance_id = in->id};
    wf_signal_row *rows;
    size_t nr;
    char *next;
    wf_error err;
    ck_assert_int_eq(
        wf_store_list_signals(ts.app.store, &sc, &f, 10, NULL, &rows, &nr, &next, &err), WF_OK);
    ck_assert_uint_eq(nr, 1);
    ck_assert(rows[0].discarded);
    ck_assert(!rows[0].buffered);
    wf_arena_free(a);
}
END_TEST

WF_TEST(test_timeout_withdraws_the_msg)
{
    /* s -> pay (MSG) -> e, s -> timeout (TIME) -> late -> chase (USER) -> e */
    char *key = u("tmo");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "late", NORMAL);
    place(n, "e", END);
    msg(n, "pay", "paid", false);
    Workflow__V1__Transition *t = trans(n, "timeout", T_TIME);
    t->delay = dur(3600 * 1000);
    user1(trans(n, "chase", T_USER), "ann");
    arc(n, "s", "pay");
    arc(n, "pay", "e");
    arc(n, "s", "timeout");
    arc(n, "timeout", "late");
    arc(n, "late", "chase");
    arc(n, "chase", "e");
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_ptr_nonnull(g->awaiting_signals[0]->times_out_at);
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert(fire_timer(in->id, g->timers[0]->id));
    g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "late"), 1);
    ck_assert_uint_eq(g->n_awaiting_signals, 0);
    Workflow__V1__SendSignalResponse *r = send_sig("paid", in->id, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r->outcome, O_DROPPED);
    r = send_sig("paid", in->id, NULL, NULL, NULL, 60000);
    ck_assert_int_eq(r->outcome, O_BUFFERED);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(g, "late"), 1);
    ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_CONSUMED"), 0);
    /* The other way round: the signal first, then the timer is gone. */
    Workflow__V1__Instance *in2 = start(key, NULL, NULL);
    const char *timer = get_instance(in2->id)->timers[0]->id;
    ck_assert_int_eq(send_sig("paid", in2->id, NULL, NULL, NULL, 0)->outcome, O_CORRELATED);
    ck_assert(!fire_timer(in2->id, timer));
    ck_assert_int_eq(get_instance(in2->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_set_variables)
{
    char *key = one_msg_net("vars", "paid", false);
    Workflow__V1__Instance *in = start(key, NULL, "{\"a\":1,\"b\":{\"c\":1}}");
    wf_client_status st;
    Workflow__V1__Instance *out = set_vars(in->id, "{\"b\":{\"d\":2},\"x\":true}", &st);
    ck_ok(st);
    ck_assert_str_eq(var(out->variables_json, "a"), "1");
    ck_assert_str_eq(var(out->variables_json, "b"), "{\"d\":2}"); /* top-level merge */
    ck_assert_str_eq(var(out->variables_json, "x"), "true");
    ck_assert_str_eq(var(get_instance(in->id)->instance->variables_json, "x"), "true");
    ck_assert_int_eq(count_of(event_types(in->id), "VARIABLES_SET"), 1);
    set_vars(in->id, "[1,2]", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    set_vars(in->id, "not json", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    set_vars("no-such-instance", "{}", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_int_eq(count_of(event_types(in->id), "VARIABLES_SET"), 1);
    /* A signal payload merges over it; an ended instance refuses. */
    send_sig("paid", in->id, NULL, "{\"x\":false}", NULL, 0);
    ck_assert_str_eq(var(get_instance(in->id)->instance->variables_json, "x"), "false");
    set_vars(in->id, "{\"y\":1}", &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
}
END_TEST

/* ---- SendSignal by aggregate racing an instance that starts to wait ------------------------- */

typedef struct side {
    wf_client *c;
    pthread_barrier_t *bar;
    const char *task_id; /* the driver: completing it enables the wait */
    const char *agg_id;  /* the sender: the aggregate addressed */
    int code;
    int outcome;
    char message[512];
} side;

static void *
drive_to_wait(void *arg)
{
    side *s = arg;
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    wf_client_status st;
    req.task_id = (char *)s->task_id;
    pthread_barrier_wait(s->bar);
    call(s->c, "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    s->code = st.code;
    snprintf(s->message, sizeof s->message, "%.64s %.400s", st.reason, st.message);
    return NULL;
}

static void *
send_to_aggregate(void *arg)
{
    side *s = arg;
    wf_client_status st;
    pthread_barrier_wait(s->bar);
    Workflow__V1__SendSignalResponse *r =
        send_c(s->c, "ready", NULL, s->agg_id, "{\"sent\":true}", NULL, 60000, &st);
    s->code = st.code;
    s->outcome = r != NULL ? (int)r->outcome : -1;
    snprintf(s->message, sizeof s->message, "%.64s %.400s", st.reason, st.message);
    return NULL;
}

WF_TEST(test_buffering_races_the_wait_by_aggregate)
{
    /* s -> step (USER ann) -> p -> recv (MSG "ready", AGGREGATE) -> e. Each
     * round one thread sends "ready" to the instance's aggregate (buffered
     * for a minute when nobody waits) while another completes step, which
     * makes the instance wait for it. Whoever comes second must see the
     * other: the signal ends consumed by the instance, exactly once. */
    char *key = u("aggrace");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    user1(trans(n, "step", T_USER), "ann");
    msg(n, "recv", "ready", true);
    arc(n, "s", "step");
    arc(n, "step", "p");
    arc(n, "p", "recv");
    arc(n, "recv", "e");
    deploy(n);
    /* Clients are connected before the race, one per side. */
    wf_client *boss = as("boss"), *ann = as("ann"), *sender = as(NULL);
    wf_error err;
    int buffered = 0, rounds = 200;
    for (int round = 0; round < rounds; round++) {
        wf_arena *a = wf_arena_new();
        wf_store_ctx sc = {"default", 0, a};
        char *agg = wf_arena_printf(ta, "%s-%d", u("R"), round);
        Workflow__V1__Instance *in = start_c(boss, key, agg, NULL);
        wf_aggregate ag;
        ck_assert_int_eq(wf_uow_read_aggregate(ts.app.store, &sc, in->id, &ag, &err), WF_OK);
        ck_assert_uint_eq(ag.n_tasks, 1);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        side drv = {.c = ann, .bar = &bar, .task_id = ag.tasks[0].id, .code = -1};
        side snd = {.c = sender, .bar = &bar, .agg_id = agg, .code = -1, .outcome = -1};
        pthread_t th[2];
        pthread_create(&th[0], NULL, drive_to_wait, &drv);
        pthread_create(&th[1], NULL, send_to_aggregate, &snd);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
        pthread_barrier_destroy(&bar);
        ck_assert_msg(drv.code == 0, "round %d: complete: %d %s", round, drv.code, drv.message);
        ck_assert_msg(snd.code == 0, "round %d: send: %d %s", round, snd.code, snd.message);
        ck_assert_msg(snd.outcome == O_CORRELATED || snd.outcome == O_BUFFERED, "round %d: %d",
                      round, snd.outcome);
        buffered += snd.outcome == O_BUFFERED;
        /* Never buffered-and-unconsumed while the instance waits. */
        wf_instance_row row;
        ck_assert_int_eq(wf_store_get_instance(ts.app.store, &sc, in->id, &row, &err), WF_OK);
        ck_assert_msg(row.status == WF_INSTANCE_COMPLETED, "round %d: instance %d, signal %s",
                      round, (int)row.status, snd.outcome == O_BUFFERED ? "buffered" : "fired");
        ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_CONSUMED"), 1);
        wf_signal_filter f = {.aggregate_type = "order", .aggregate_id = agg};
        wf_signal_row *sig;
        size_t ns;
        char *next;
        ck_assert_int_eq(
            wf_store_list_signals(ts.app.store, &sc, &f, 10, NULL, &sig, &ns, &next, &err), WF_OK);
        ck_assert_uint_eq(ns, 1);
        ck_assert(!sig[0].buffered);
        ck_assert_str_eq(sig[0].consumed_by_instance, in->id);
        ck_assert_str_eq(var(row.variables_json, "sent"), "true");
        wf_arena_free(a);
    }
    printf("aggregate buffering race (%s): buffered %d times, correlated %d times\n",
           wf_test_store_name(), buffered, rounds - buffered);
}
END_TEST

/* ---- RetryInstance of refused TIME and MSG firings --------------------------------------------
 */

typedef struct retrier {
    wf_client *c;
    const char *instance_id;
    pthread_barrier_t *bar;
    int code;
    char reason[64];
} retrier;

static void *
retry_once(void *arg)
{
    retrier *r = arg;
    Workflow__V1__RetryInstanceRequest req = WORKFLOW__V1__RETRY_INSTANCE_REQUEST__INIT;
    wf_client_status st;
    req.instance_id = (char *)r->instance_id;
    if (r->bar != NULL)
        pthread_barrier_wait(r->bar);
    call(r->c, "RetryInstance", &req, &workflow__v1__retry_instance_response__descriptor, &st);
    r->code = st.code;
    snprintf(r->reason, sizeof r->reason, "%s", st.reason);
    return NULL;
}

/* Two RetryInstance calls at once on an incident whose retry ends the
 * case: one resolves it, the other finds it ended. */
static void
retry_twice_at_once(const char *instance_id)
{
    wf_client *c[2] = {as("ops"), as("ops")};
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    retrier r[2] = {{c[0], instance_id, &bar, -1, ""}, {c[1], instance_id, &bar, -1, ""}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, retry_once, &r[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    int ok = r[0].code == 0 ? 0 : 1;
    ck_assert_msg(r[ok].code == 0, "%d %s / %d %s", r[0].code, r[0].reason, r[1].code, r[1].reason);
    ck_assert_int_eq(r[1 - ok].code, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(r[1 - ok].reason, "INSTANCE_NOT_RUNNING");
}

WF_TEST(test_retry_refires_a_refused_timer)
{
    /* s -> tmo (TIME) -> e only when .ok: fired with ok = false it matches
     * no arc, an incident. */
    char *key = u("tmoinc");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "tmo", T_TIME);
    t->delay = dur(3600 * 1000);
    arc(n, "s", "tmo");
    arc(n, "tmo", "e")->guard = ".ok == true";
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, "{\"ok\":false}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert(fire_timer(in->id, g->timers[0]->id));
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "tmo"));
    ck_assert_uint_eq(g->n_timers, 0);

    /* Retried as it is: refused again, nothing changes. */
    retrier r = {as("ops"), in->id, NULL, -1, ""};
    retry_once(&r);
    ck_assert_int_eq(r.code, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(r.reason, "NO_ARC_MATCHED");
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_str_ne(g->last_error, "");
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 0);

    /* The operator fixes the variables; two retries at once resolve it once. */
    wf_client_status st;
    set_vars(in->id, "{\"ok\":true}", &st);
    ck_ok(st);
    retry_twice_at_once(in->id);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(g->last_error, "");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "VARIABLES_SET INCIDENT_RESOLVED TRANSITION_FIRED") != NULL, "%s", ev);
    ck_assert_int_eq(count_of(ev, "INCIDENT_RESOLVED"), 1);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1);
    ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
    retry_once(&r);
    ck_assert_int_eq(r.code, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(r.reason, "INSTANCE_NOT_RUNNING");
}
END_TEST

WF_TEST(test_retry_refires_a_refused_signal)
{
    /* s -> recv (MSG "paid") -> e only when .amount > 10. */
    char *key = u("msginc");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    msg(n, "recv", "paid", false);
    arc(n, "s", "recv");
    arc(n, "recv", "e")->guard = ".amount > 10";
    deploy(n);
    Workflow__V1__Instance *in = start(key, NULL, NULL);
    Workflow__V1__SendSignalResponse *r = send_sig("paid", in->id, NULL, "{\"amount\":5}", NULL, 0);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "paid"));
    ck_assert_uint_eq(g->n_awaiting_signals, 0); /* the signal was consumed */
    ck_assert_str_eq(var(g->instance->variables_json, "amount"), "5");
    /* While FAILED a new signal fires nothing (DROPPED without a TTL). */
    ck_assert_int_eq(send_sig("paid", in->id, NULL, "{\"amount\":99}", NULL, 0)->outcome,
                     O_DROPPED);

    retrier rr = {as("ops"), in->id, NULL, -1, ""};
    retry_once(&rr);
    ck_assert_int_eq(rr.code, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(rr.reason, "NO_ARC_MATCHED");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_FAILED);

    wf_client_status st;
    set_vars(in->id, "{\"amount\":50}", &st);
    ck_ok(st);
    retry_twice_at_once(in->id);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var(g->instance->variables_json, "amount"), "50");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "INCIDENT_RESOLVED TRANSITION_FIRED INSTANCE_COMPLETED") != NULL, "%s",
                  ev);
    ck_assert_int_eq(count_of(ev, "INCIDENT_RESOLVED"), 1);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1); /* the retry awaits no new signal */
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1);
}
END_TEST

/* ---- a buffered signal refused when its wait is enabled --------------------------------- */

/* [s -> charge (AUTO job_type) ->] p -> paid (MSG "payment" of the order
 * aggregate) -> e only when .ok; without job_type p is the start place
 * and StartInstance enables the wait itself. */
static char *
refused_payment_net(const char *tag, const char *job_type)
{
    char *key = u(tag);
    nb *n = net_new(key);
    if (job_type != NULL) {
        place(n, "s", START);
        place(n, "p", NORMAL);
        trans(n, "charge", T_AUTO)->job_type = (char *)job_type;
        arc(n, "s", "charge");
        arc(n, "charge", "p");
    } else {
        place(n, "p", START);
    }
    place(n, "e", END);
    msg(n, "paid", "payment", true);
    arc(n, "p", "paid");
    arc(n, "paid", "e")->guard = ".ok == true";
    deploy(n);
    return key;
}

/* The incident a refused firing of paid leaves: FAILED naming the
 * transition, the buffered payment spent on the instance (payload merged,
 * log row consumed by it for paid), the token still before paid and no
 * wait left; then SetVariables and RetryInstance complete the case. */
static void
assert_refused_then_retried(const char *instance_id, const char *agg, const char *signal_id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(instance_id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "transition \"paid\"") != NULL, "%s", g->last_error);
    ck_assert_msg(strstr(g->last_error, "no output arc") != NULL, "%s", g->last_error);
    ck_assert_str_eq(var(g->instance->variables_json, "paidBy"), "\"card\"");
    ck_assert_int_eq(marking(g, "p"), 1);
    ck_assert_uint_eq(g->n_awaiting_signals, 0);
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert_int_eq(l->signals[0]->outcome, O_BUFFERED);
    ck_assert_ptr_nonnull(l->signals[0]->consumed_at);
    ck_assert_str_eq(l->signals[0]->consumed_by_instance, instance_id);
    ck_assert_str_eq(l->signals[0]->transition_id, "paid");
    ck_assert_str_eq(l->signals[0]->signal_id, signal_id);
    const char *ev = event_types(instance_id);
    ck_assert_msg(strstr(ev, "TRANSITION_ENABLED SIGNAL_CONSUMED INSTANCE_FAILED") != NULL, "%s",
                  ev);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);

    wf_client_status st;
    set_vars(instance_id, "{\"ok\":true}", &st);
    ck_ok(st);
    retrier r = {as("ops"), instance_id, NULL, -1, ""};
    retry_once(&r);
    ck_assert_msg(r.code == 0, "%d %s", r.code, r.reason);
    g = get_instance(instance_id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(g->last_error, "");
    ck_assert_str_eq(var(g->instance->variables_json, "paidBy"), "\"card\"");
    ev = event_types(instance_id);
    ck_assert_msg(strstr(ev, "INCIDENT_RESOLVED TRANSITION_FIRED INSTANCE_COMPLETED") != NULL, "%s",
                  ev);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1); /* the retry awaits no new signal */
}

WF_TEST(test_buffered_signal_refused_after_complete_job)
{
    char *type = u("charge");
    char *key = refused_payment_net("payjob", type);
    char *agg = u("A"), *sig = u("sig");
    ck_assert_int_eq(send_sig("payment", NULL, agg, "{\"paidBy\":\"card\"}", sig, 60000)->outcome,
                     O_BUFFERED);
    Workflow__V1__Instance *in = start(key, agg, "{\"ok\":false}");
    ck_assert_int_eq(in->status, I_RUNNING);

    /* The job's work is done whatever the payment's firing does. */
    Workflow__V1__ActivateJobsRequest ar = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    wf_client_status st;
    ar.job_type = type;
    ar.worker = "w1";
    ar.max_jobs = 1;
    ar.wait = dur(2000);
    Workflow__V1__ActivateJobsResponse *jobs =
        call(as(NULL), "ActivateJobs", &ar, &workflow__v1__activate_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(jobs->n_jobs, 1);
    Workflow__V1__CompleteJobRequest cr = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    cr.job_key = jobs->jobs[0]->key;
    cr.variables_json = "{\"charged\":true}";
    call(as(NULL), "CompleteJob", &cr, &workflow__v1__complete_job_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_jobs, 0);
    ck_assert_str_eq(var(g->instance->variables_json, "charged"), "true");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "JOB_COMPLETED TRANSITION_FIRED") != NULL, "%s", ev);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1); /* charge only */
    /* Completed: its key completes nothing more. */
    call(as(NULL), "CompleteJob", &cr, &workflow__v1__complete_job_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");

    assert_refused_then_retried(in->id, agg, sig);
}
END_TEST

WF_TEST(test_buffered_signal_refused_at_start)
{
    char *key = refused_payment_net("paystart", NULL);
    char *agg = u("A"), *sig = u("sig");
    ck_assert_int_eq(send_sig("payment", NULL, agg, "{\"paidBy\":\"card\"}", sig, 60000)->outcome,
                     O_BUFFERED);
    Workflow__V1__Instance *in = start(key, agg, "{\"ok\":false}");
    ck_assert_int_eq(in->status, I_FAILED);
    ck_assert_int_eq(count_of(event_types(in->id), "INSTANCE_STARTED"), 1);
    assert_refused_then_retried(in->id, agg, sig);
}
END_TEST

/* ---- RetryInstance and the waits a refused firing left armed ----------------------------- */

/* s -> step (USER ann) -> p, q; p -> a (MSG "paid" of the order
 * aggregate) -> x only when .ok; q -> b (MSG "shipped", by instance or of
 * the aggregate) -> y; x, y -> join (AUTO) -> e. Completing step enables
 * a and b in one step, a first. */
static char *
two_waits_net(const char *tag, bool shipped_by_aggregate)
{
    char *key = u(tag);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "q", NORMAL);
    place(n, "x", NORMAL);
    place(n, "y", NORMAL);
    place(n, "e", END);
    user1(trans(n, "step", T_USER), "ann");
    msg(n, "a", "paid", true);
    msg(n, "b", "shipped", shipped_by_aggregate);
    trans(n, "join", T_AUTO);
    arc(n, "s", "step");
    arc(n, "step", "p");
    arc(n, "step", "q");
    arc(n, "p", "a");
    arc(n, "a", "x")->guard = ".ok == true";
    arc(n, "q", "b");
    arc(n, "b", "y");
    arc(n, "x", "join");
    arc(n, "y", "join");
    arc(n, "join", "e");
    deploy(n);
    return key;
}

/* The one row named name in l. */
static Workflow__V1__Signal *
signal_named(const Workflow__V1__ListSignalsResponse *l, const char *name)
{
    Workflow__V1__Signal *found = NULL;
    for (size_t i = 0; i < l->n_signals; i++) {
        if (strcmp(l->signals[i]->name, name) != 0)
            continue;
        ck_assert_msg(found == NULL, "two log rows of %s", name);
        found = l->signals[i];
    }
    ck_assert_msg(found != NULL, "no log row of %s", name);
    return found;
}

/* The log row of "shipped", read where it was sent. */
static Workflow__V1__Signal *
shipped_row(const char *instance_id, const char *agg, bool by_aggregate)
{
    return signal_named(list_signals(by_aggregate ? NULL : instance_id, by_aggregate ? agg : NULL),
                        "shipped");
}

/* Buffers "paid" for the aggregate and "shipped" (for shipped_ttl_ms) for
 * an instance of two_waits_net, then completes step: a consumes paid and
 * is refused (.ok is false), so the instance is FAILED before b fires and
 * shipped goes back to the buffer, unconsumed, with b still waiting. */
static Workflow__V1__Instance *
refuse_a(const char *key, const char *agg, bool by_aggregate, int64_t shipped_ttl_ms)
{
    Workflow__V1__Instance *in = start(key, agg, "{\"ok\":false}");
    ck_assert_int_eq(send_sig("paid", NULL, agg, "{\"paidBy\":\"card\"}", NULL, 60000)->outcome,
                     O_BUFFERED);
    ck_assert_int_eq(send_sig("shipped", by_aggregate ? NULL : in->id, by_aggregate ? agg : NULL,
                              "{\"carrier\":\"ups\"}", NULL, shipped_ttl_ms)
                         ->outcome,
                     O_BUFFERED);
    complete("ann", open_task(get_instance(in->id), "step"));
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "transition \"a\"") != NULL, "%s", g->last_error);
    ck_assert_str_eq(var(g->instance->variables_json, "paidBy"), "\"card\"");
    ck_assert_ptr_null(var(g->instance->variables_json, "carrier"));
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_str_eq(g->awaiting_signals[0]->transition_id, "b");
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    ck_assert_str_eq(g->buffered_signals[0]->name, "shipped");
    ck_assert_int_eq(marking(g, "p"), 1);
    ck_assert_int_eq(marking(g, "q"), 1);
    Workflow__V1__Signal *s = shipped_row(in->id, agg, by_aggregate);
    ck_assert_ptr_null(s->consumed_at);
    ck_assert_str_eq(s->consumed_by_instance, "");
    ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_CONSUMED"), 1); /* paid */
    return in;
}

static void
retry_ok(const char *instance_id)
{
    retrier r = {as("ops"), instance_id, NULL, -1, ""};
    retry_once(&r);
    ck_assert_msg(r.code == 0, "%d %s", r.code, r.reason);
}

/* The fix of a's incident lets a fire; b, still waiting, then consumes the
 * shipped signal put back in the buffer, in the same call, once. */
WF_TEST(test_retry_consumes_the_signal_a_refused_step_put_back)
{
    for (int by_aggregate = 0; by_aggregate < 2; by_aggregate++) {
        char *key = two_waits_net(by_aggregate ? "putback-agg" : "putback-id", by_aggregate);
        char *agg = u(by_aggregate ? "PA" : "PI");
        Workflow__V1__Instance *in = refuse_a(key, agg, by_aggregate, 60000);
        wf_client_status st;
        set_vars(in->id, "{\"ok\":true}", &st);
        ck_ok(st);
        retry_ok(in->id);

        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_int_eq(g->instance->status, I_COMPLETED);
        ck_assert_str_eq(var(g->instance->variables_json, "carrier"), "\"ups\"");
        ck_assert_str_eq(var(g->instance->variables_json, "paidBy"), "\"card\"");
        const char *ev = event_types(in->id);
        const char *resolved = strstr(ev, "INCIDENT_RESOLVED");
        ck_assert_ptr_nonnull(resolved);
        ck_assert_msg(strstr(resolved, "INCIDENT_RESOLVED TRANSITION_FIRED") == resolved, "%s", ev);
        ck_assert_msg(strstr(resolved, "SIGNAL_CONSUMED TRANSITION_FIRED") != NULL, "%s", ev);
        ck_assert_int_eq(count_of(resolved, "SIGNAL_CONSUMED"), 1); /* shipped */
        ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 2);
        ck_assert_int_eq(count_of(ev, "INCIDENT_RESOLVED"), 1);
        ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 4); /* step, a, b, join */

        Workflow__V1__Signal *s = shipped_row(in->id, agg, by_aggregate);
        ck_assert_int_eq(s->outcome, O_BUFFERED);
        ck_assert_ptr_nonnull(s->consumed_at);
        ck_assert_str_eq(s->consumed_by_instance, in->id);
        ck_assert_str_eq(s->transition_id, "b");
        ck_assert(!s->expired);
        Workflow__V1__ListSignalsResponse *l = list_signals(NULL, agg);
        Workflow__V1__Signal *paid = signal_named(l, "paid");
        ck_assert_str_eq(paid->consumed_by_instance, in->id);
        ck_assert_str_eq(paid->transition_id, "a");
        /* Nothing is left in the buffer. */
        for (size_t i = 0; i < l->n_signals; i++)
            ck_assert_ptr_nonnull(l->signals[i]->consumed_at);
        l = list_signals(in->id, NULL);
        for (size_t i = 0; i < l->n_signals; i++)
            ck_assert_ptr_nonnull(l->signals[i]->consumed_at);
    }
}
END_TEST

/* The same, but shipped expires before the retry: b does not consume it
 * and waits for a new one. */
WF_TEST(test_retry_leaves_an_expired_signal_in_the_log)
{
    for (int by_aggregate = 0; by_aggregate < 2; by_aggregate++) {
        char *key = two_waits_net(by_aggregate ? "expback-agg" : "expback-id", by_aggregate);
        char *agg = u(by_aggregate ? "EA" : "EI");
        Workflow__V1__Instance *in = refuse_a(key, agg, by_aggregate, 2000);
        sleep_ms(2300);
        wf_client_status st;
        set_vars(in->id, "{\"ok\":true}", &st);
        ck_ok(st);
        retry_ok(in->id);

        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_int_eq(g->instance->status, I_RUNNING);
        ck_assert_int_eq(marking(g, "x"), 1);
        ck_assert_int_eq(marking(g, "q"), 1);
        ck_assert_uint_eq(g->n_awaiting_signals, 1);
        ck_assert_str_eq(g->awaiting_signals[0]->transition_id, "b");
        ck_assert_uint_eq(g->n_buffered_signals, 0);
        ck_assert_ptr_null(var(g->instance->variables_json, "carrier"));
        ck_assert_int_eq(count_of(event_types(in->id), "SIGNAL_CONSUMED"), 1); /* paid */
        Workflow__V1__Signal *s = shipped_row(in->id, agg, by_aggregate);
        ck_assert_ptr_null(s->consumed_at);
        ck_assert_str_eq(s->consumed_by_instance, "");
        ck_assert_str_eq(s->transition_id, "");

        /* The wait is live: a new signal fires it. */
        Workflow__V1__SendSignalResponse *r =
            send_sig("shipped", by_aggregate ? NULL : in->id, by_aggregate ? agg : NULL,
                     "{\"carrier\":\"dhl\"}", NULL, 0);
        ck_assert_int_eq(r->outcome, O_CORRELATED);
        g = get_instance(in->id);
        ck_assert_int_eq(g->instance->status, I_COMPLETED);
        ck_assert_str_eq(var(g->instance->variables_json, "carrier"), "\"dhl\"");
    }
}
END_TEST

/* A job out of attempts leaves the instance FAILED while a parallel MSG
 * wait is armed; a signal sent to the instance then is buffered. The
 * retry that re-arms the job lets the wait consume it. */
/* A signal sent while the instance is FAILED, by instance id or by its
 * aggregate, is buffered (the FAILED instance's wait cannot fire; by
 * aggregate it used to count as a new waiter on every round and end in
 * CONFLICT) and consumed by the retry. */
static void
failed_job_then_signal(bool by_aggregate)
{
    /* s -> fork -> p -> charge (AUTO job) -> x, q -> b (MSG shipped) -> y;
     * x, y -> join -> e. */
    char *key = u("jobwait"), *type = u("charge"), *agg = by_aggregate ? u("o") : NULL;
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "q", NORMAL);
    place(n, "x", NORMAL);
    place(n, "y", NORMAL);
    place(n, "e", END);
    trans(n, "fork", T_AUTO);
    trans(n, "charge", T_AUTO)->job_type = type;
    msg(n, "b", "shipped", by_aggregate);
    trans(n, "join", T_AUTO);
    arc(n, "s", "fork");
    arc(n, "fork", "p");
    arc(n, "fork", "q");
    arc(n, "p", "charge");
    arc(n, "charge", "x");
    arc(n, "q", "b");
    arc(n, "b", "y");
    arc(n, "x", "join");
    arc(n, "y", "join");
    arc(n, "join", "e");
    deploy(n);
    Workflow__V1__Instance *in = start(key, agg, NULL);
    Workflow__V1__ActivateJobsResponse *jobs = activate(type, 1, 0, 2000);
    ck_assert_uint_eq(jobs->n_jobs, 1);
    wf_client_status st;
    ck_assert_int_eq(fail_job(jobs->jobs[0]->key, "card declined", 0, -1, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_FAILED);
    ck_assert_int_eq(
        send_sig("shipped", by_aggregate ? NULL : in->id, agg, "{\"carrier\":\"ups\"}", NULL, 60000)
            ->outcome,
        O_BUFFERED);

    retry_ok(in->id);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(g, "y"), 1);
    ck_assert_uint_eq(g->n_awaiting_signals, 0);
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_str_eq(var(g->instance->variables_json, "carrier"), "\"ups\"");
    const char *ev = event_types(in->id);
    ck_assert_msg(strstr(ev, "INCIDENT_RESOLVED SIGNAL_CONSUMED TRANSITION_FIRED") != NULL, "%s",
                  ev);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1);
    Workflow__V1__Signal *s = shipped_row(in->id, agg, by_aggregate);
    ck_assert_ptr_nonnull(s->consumed_at);
    ck_assert_str_eq(s->consumed_by_instance, in->id);
    ck_assert_str_eq(s->transition_id, "b");

    jobs = activate(type, 1, 0, 2000);
    ck_assert_uint_eq(jobs->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as(NULL), jobs->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}

WF_TEST(test_retry_of_a_failed_job_consumes_a_signal_buffered_meanwhile)
{
    failed_job_then_signal(false);
    failed_job_then_signal(true);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_signals", wf_test_store_name(), setup, teardown, 60));
}
