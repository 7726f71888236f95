/*
 * End-to-end tests of the step-tagged timeout, on the memory store and on
 * Postgres (WF_TEST_STORE=pg): an awaited signal (MSG) and its timeout
 * (TIME) compete for one token (deferred choice).
 *
 * - The signal arrives first, then the timeout comes due and the timer
 *   scheduler runs: the case followed the signal's arc, and no timeout
 *   ever fires (no TIMER_FIRED, the stale timer row reports gone).
 * - SendSignal over gRPC and the timer's firing, released together, many
 *   rounds: exactly one side wins each round.
 *
 * Postgres keeps rows between runs: keys and aggregates carry a per-test
 * suffix.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "net_runtime.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define O_CORRELATED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED
#define O_DROPPED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DROPPED
#define C_AGGREGATE WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE

static wf_client *shop; /* made once per test: as() makes a new client */

/* s -> paid (MSG "paid" by aggregate) -> e, s -> timeout (TIME, delay_ms)
 * -> late -> chase (USER ann) -> e. The marking tells which arc the case
 * took: e (COMPLETED) after the signal, late (a chase task) after the
 * timeout. Returns the deployed key. */
static char *
deploy_signal_or_timeout(const char *name, int64_t delay_ms)
{
    char *key = u(name);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "late", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *paid = trans(n, "paid", T_MSG);
    paid->signal_name = "paid";
    paid->correlation = C_AGGREGATE;
    trans(n, "timeout", T_TIME)->delay = dur(delay_ms);
    Workflow__V1__Transition *chase = trans(n, "chase", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 1, sizeof *a->ids);
    a->ids[a->n_ids++] = "ann";
    chase->assignee = a;
    arc(n, "s", "paid");
    arc(n, "paid", "e");
    arc(n, "s", "timeout");
    arc(n, "timeout", "late");
    arc(n, "late", "chase");
    arc(n, "chase", "e");
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = &n->d;
    wf_client_status st;
    shop = as("shop");
    call(shop, "DeployDefinition", &req, &workflow__v1__deploy_definition_response__descriptor,
         &st);
    ck_ok(st);
    return key;
}

static Workflow__V1__Instance *
start_for(const char *key, const char *order_id)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.type = "order";
    agg.id = (char *)order_id;
    req.definition_key = (char *)key;
    req.aggregate = &agg;
    wf_client_status st;
    Workflow__V1__StartInstanceResponse *r =
        call(shop, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st);
    ck_ok(st);
    return r->instance;
}

/* The webhook: "paid" for the order, not buffered. */
static Workflow__V1__SendSignalResponse *
send_paid(wf_client *c, const char *order_id, wf_client_status *st)
{
    return signal_order(c, "paid", order_id, "{\"carrier\":\"dhl\"}", NULL, st);
}

/* How many events of instance_id have type, read from the server's store. */
static int
events_of_type(const char *instance_id, const char *type)
{
    size_t n;
    const wf_event_row *ev = events_of(instance_id, &n);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(ev[i].type, type) == 0;
    return k;
}

/* The case followed the signal's arc, and the timeout left no trace but
 * its withdrawal. */
static void
assert_signal_path(const char *instance_id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(instance_id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(marking(g, "e"), 1);
    ck_assert_int_eq(marking(g, "late"), 0);
    ck_assert_uint_eq(g->n_tasks, 0);
    ck_assert_uint_eq(g->n_timers, 0);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "dhl"));
    ck_assert_int_eq(events_of_type(instance_id, "SIGNAL_CONSUMED"), 1);
    ck_assert_int_eq(events_of_type(instance_id, "TRANSITION_FIRED"), 1);
    ck_assert_int_eq(events_of_type(instance_id, "TIMER_FIRED"), 0);
    ck_assert_int_eq(events_of_type(instance_id, "WORKITEM_WITHDRAWN"), 1);
}

/* Signals first; then the timeouts come due with the timer scheduler
 * running, and their stale rows are fired by hand too: none fires. */
WF_TEST(test_signal_first_then_the_timeout_comes_due)
{
    enum { DELAY_MS = 1500 };
    int rounds = wf_test_store_is_pg() ? 10 : 30;
    char *key = deploy_signal_or_timeout("sigfirst", DELAY_MS);
    wf_client *carrier = as("carrier");
    wf_scheduler *sched = scheduler_start(20);
    const char *ids[30], *timers[30];
    int64_t last_due_us = 0;
    for (int i = 0; i < rounds; i++) {
        const char *order = wf_arena_printf(ta, "%s-%d", key, i);
        ids[i] = start_for(key, order)->id;
        Workflow__V1__GetInstanceResponse *g = get_instance(ids[i]);
        ck_assert_uint_eq(g->n_timers, 1);
        ck_assert_uint_eq(g->n_awaiting_signals, 1);
        timers[i] = g->timers[0]->id;
        const Google__Protobuf__Timestamp *due = g->timers[0]->due_at;
        int64_t due_us = due->seconds * 1000000 + due->nanos / 1000;
        if (due_us > last_due_us)
            last_due_us = due_us;
        /* CORRELATED proves the signal came first: a fired timeout would
         * have withdrawn the subscription (DROPPED). */
        wf_client_status st;
        Workflow__V1__SendSignalResponse *r = send_paid(carrier, order, &st);
        ck_ok(st);
        ck_assert_int_eq(r->outcome, O_CORRELATED);
        ck_assert_uint_eq(r->n_instance_ids, 1);
        ck_assert_str_eq(r->instance_ids[0], ids[i]);
    }
    /* Past every due time, with several scheduler passes on top. */
    int64_t left_ms = (last_due_us - wf_now_us()) / 1000;
    ck_assert_int_le(left_ms, DELAY_MS);
    sleep_ms((int)(left_ms > 0 ? left_ms : 0) + 400);
    wf_scheduler_stop(sched);
    for (int i = 0; i < rounds; i++) {
        ck_assert(!fire_timer(ids[i], timers[i]));
        assert_signal_path(ids[i]);
    }
}
END_TEST

/* One round of the race: SendSignal over gRPC on one thread, the timer's
 * firing on another, released together. */
struct racer {
    pthread_barrier_t *gate;
    wf_client *client;
    const char *order, *instance_id, *timer_id;
    wf_client_status st;
    int outcome;
    bool fired;
    wf_code fire_rc;
};

static void *
race_signal(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->gate);
    Workflow__V1__SendSignalResponse *resp = send_paid(r->client, r->order, &r->st);
    r->outcome = resp != NULL ? (int)resp->outcome : -1;
    return NULL;
}

static void *
race_timer(void *arg)
{
    struct racer *r = arg;
    wf_timer_row row = {.id = (char *)r->timer_id,
                        .tenant = "default",
                        .root_id = (char *)r->instance_id,
                        .instance_id = (char *)r->instance_id};
    wf_runtime_host rt = {.store = ts.app.store};
    wf_error err;
    pthread_barrier_wait(r->gate);
    r->fire_rc = wf_runtime_fire_timer(&rt, &row, wf_mono_ms() + 10000, &r->fired, &err);
    return NULL;
}

WF_TEST(test_signal_racing_its_timeout)
{
    int rounds = wf_test_store_is_pg() ? 60 : 300;
    /* Not due for an hour: only this test's own firing can fire it. */
    char *key = deploy_signal_or_timeout("sigrace", 3600 * 1000);
    wf_client *carrier = as("carrier");
    wf_client_status st;
    send_paid(carrier, "warm-up", &st); /* connects before the first race */
    ck_ok(st);
    int signal_won = 0, timer_won = 0;
    for (int i = 0; i < rounds; i++) {
        const char *order = wf_arena_printf(ta, "%s-%d", key, i);
        Workflow__V1__Instance *in = start_for(key, order);
        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_uint_eq(g->n_timers, 1);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        struct racer r = {.gate = &gate,
                          .client = carrier,
                          .order = order,
                          .instance_id = in->id,
                          .timer_id = g->timers[0]->id};
        pthread_t a, b;
        pthread_create(&a, NULL, race_signal, &r);
        pthread_create(&b, NULL, race_timer, &r);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&gate);
        ck_ok(r.st);
        ck_assert_msg(r.fire_rc == WF_OK, "round %d: fire: %s", i, wf_code_reason(r.fire_rc));

        if (r.outcome == O_CORRELATED) {
            ck_assert_msg(!r.fired, "round %d: both the signal and the timeout won", i);
            ck_assert(!fire_timer(in->id, r.timer_id)); /* stale: never fires later */
            assert_signal_path(in->id);
            signal_won++;
        } else {
            ck_assert_msg(r.fired, "round %d: neither side won (outcome %d)", i, r.outcome);
            ck_assert_int_eq(r.outcome, O_DROPPED);
            g = get_instance(in->id);
            ck_assert_int_eq(g->instance->status, I_RUNNING);
            ck_assert_int_eq(marking(g, "late"), 1);
            ck_assert_uint_eq(g->n_awaiting_signals, 0);
            ck_assert_int_eq(events_of_type(in->id, "TIMER_FIRED"), 1);
            ck_assert_int_eq(events_of_type(in->id, "SIGNAL_CONSUMED"), 0);
            ck_assert(!fire_timer(in->id, r.timer_id));
            timer_won++;
        }
    }
    printf("%s: signal-vs-timeout over gRPC: the signal won %d times, the timeout %d times\n",
           wf_test_store_name(), signal_won, timer_won);
    ck_assert_int_eq(signal_won + timer_won, rounds);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite(wf_test_store_is_pg() ? "e2e_races_pg" : "e2e_races",
                                     wf_test_store_name(), setup, teardown, 120));
}
