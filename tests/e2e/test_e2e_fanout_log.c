/*
 * End-to-end tests of the per-instance log of a signal fanned out to an
 * aggregate, over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg): ListSignals{instance_id} lists each fan-out signal
 * with a delivery to the instance once, with that delivery (pending before
 * a scheduler pass runs it, then delivered or skipped, when, and the id of
 * the signal's log row), in the log's order and page by page; an instance
 * id of another tenant lists nothing; the signals' retention removes the
 * deliveries that ran.
 *
 * The in-process server runs no scheduler: deliveries stay pending until
 * the test asks for a pass (scheduler_pass). Each test works in a tenant
 * of its own. Fan-outs go to more than 8 instances, so that SendSignal
 * leaves every delivery to the schedulers.
 */
#include <string.h>

#include "net_kit.h"
#include "wf_time.h"

#define O_CORRELATED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED
#define O_BUFFERED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED
#define O_NONE WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_UNSPECIFIED
#define D_PENDING WORKFLOW__V1__SIGNAL_DELIVERY_STATE__SIGNAL_DELIVERY_STATE_PENDING
#define D_DELIVERED WORKFLOW__V1__SIGNAL_DELIVERY_STATE__SIGNAL_DELIVERY_STATE_DELIVERED
#define D_SKIPPED WORKFLOW__V1__SIGNAL_DELIVERY_STATE__SIGNAL_DELIVERY_STATE_SKIPPED
#define C_AGGREGATE WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE
#define CROWD 12 /* more than the 8 a sender delivers itself */
#define MAX_ROWS 16

static void
log_setup(void)
{
    (void)setup_tenant(NULL, "fanlog");
}

static void
retention_setup(void)
{
    static const char *const env[] = {"WF_SIGNAL_RETENTION=1s", NULL};
    (void)setup_tenant(env, "fanret");
}

/* key: start -> w1 -> m1 -> ... -> wN -> end, each wK a MSG wait for "go"
 * by aggregate. */
static void
deploy_waits(const char *key, int waits)
{
    static const char *const ids[] = {"w1", "w2", "w3"};
    static const char *const mids[] = {"m1", "m2"};
    nb *n = net_new(key);
    place(n, "start", START);
    place(n, "end", END);
    for (int i = 0; i + 1 < waits; i++)
        place(n, mids[i], NORMAL);
    for (int i = 0; i < waits; i++) {
        Workflow__V1__Transition *t = trans(n, ids[i], T_MSG);
        t->signal_name = "go";
        t->correlation = C_AGGREGATE;
        arc(n, i == 0 ? "start" : mids[i - 1], ids[i]);
        arc(n, ids[i], i + 1 == waits ? "end" : mids[i]);
    }
    deploy_as(me("dev"), n);
}

/* CROWD instances of key bound to ("order", agg), in the order started. */
static void
start_crowd(const char *key, const char *agg, char **ids)
{
    for (int i = 0; i < CROWD; i++)
        ids[i] = start_order(me("boss"), key, agg, NULL, NULL)->id;
}

static Workflow__V1__SendSignalResponse *
send_go(const char *agg)
{
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r = signal_order(me("hook"), "go", agg, "{}", NULL, &st);
    ck_ok(st);
    return r;
}

/* ListSignals of the instance as c, one page. */
static Workflow__V1__ListSignalsResponse *
list_page(wf_client *c, const char *instance_id, int32_t size, const char *token)
{
    Workflow__V1__ListSignalsRequest req = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = (char *)instance_id;
    req.page_size = size;
    req.page_token = (char *)(token != NULL ? token : "");
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *r =
        call(c, "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    return r;
}

/* Every row of the instance's log, page_size a page (at most MAX_ROWS). */
static size_t
list_all(const char *instance_id, int32_t page_size, Workflow__V1__Signal **out)
{
    size_t n = 0;
    const char *token = NULL;
    for (int page = 0; page < MAX_ROWS + 1; page++) {
        Workflow__V1__ListSignalsResponse *r =
            list_page(me("reader"), instance_id, page_size, token);
        for (size_t i = 0; i < r->n_signals; i++) {
            ck_assert_uint_lt(n, MAX_ROWS);
            out[n++] = r->signals[i];
        }
        if (r->next_page_token[0] == '\0')
            return n;
        token = r->next_page_token;
    }
    ck_abort_msg("the log of %s did not end", instance_id);
    return n;
}

/* The log row id of the aggregate's signal number which (oldest first). */
static const char *
agg_signal_id(const char *agg, size_t which)
{
    Workflow__V1__ListSignalsRequest req = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    Workflow__V1__Aggregate g = WORKFLOW__V1__AGGREGATE__INIT;
    g.type = "order";
    g.id = (char *)agg;
    req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &g;
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *r = call(
        me("reader"), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_gt(r->n_signals, which);
    return r->signals[which]->id;
}

/* The instance's log is exactly the one fan-out signal sig_id, its
 * delivery in state, with the outcome that state gives. */
static const Workflow__V1__Signal *
ck_one_delivery(const char *instance_id, const char *sig_id, int state)
{
    Workflow__V1__Signal *rows[MAX_ROWS];
    size_t n = list_all(instance_id, 0, rows);
    ck_assert_uint_eq(n, 1);
    const Workflow__V1__Signal *s = rows[0];
    ck_assert_str_eq(s->id, sig_id);
    ck_assert_str_eq(s->name, "go");
    ck_assert_int_eq(s->outcome, O_CORRELATED);
    ck_assert_ptr_nonnull(s->delivery);
    ck_assert_int_eq(s->delivery->state, state);
    ck_assert_str_eq(s->delivery->signal_log_id, sig_id);
    ck_assert_int_eq(s->delivery->outcome, state == D_DELIVERED ? O_CORRELATED : O_NONE);
    if (state == D_PENDING)
        ck_assert_ptr_null(s->delivery->delivered_at);
    else
        ck_assert_ptr_nonnull(s->delivery->delivered_at);
    return s;
}

static void
cancel(const char *instance_id)
{
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)instance_id;
    wf_client_status st;
    (void)call(me("boss"), "CancelInstance", &req,
               &workflow__v1__cancel_instance_response__descriptor, &st);
    ck_ok(st);
}

/* A fan-out to CROWD instances: each lists the one signal, pending until
 * a pass runs it, then delivered (CORRELATED, with its time), or skipped
 * for the instance cancelled meanwhile; the first instance, which the log
 * row names as its consumer, lists it once too. */
WF_CASE_TEST("log", test_each_instance_lists_its_delivery)
{
    const char *key = u("fanlog"), *agg = u("crowd");
    char *ids[CROWD];
    deploy_waits(key, 1);
    start_crowd(key, agg, ids);
    Workflow__V1__SendSignalResponse *r = send_go(agg);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_int_eq(r->instance_count, CROWD);
    ck_assert(r->deliveries_pending);
    const char *sig = agg_signal_id(agg, 0);
    const int some[] = {0, 5, CROWD - 1};
    for (size_t i = 0; i < 3; i++)
        ck_one_delivery(ids[some[i]], sig, D_PENDING);

    cancel(ids[7]);
    Workflow__V1__RunSchedulerPassResponse *p = scheduler_pass();
    (void)p;
    for (size_t i = 0; i < 3; i++) {
        const Workflow__V1__Signal *s = ck_one_delivery(ids[some[i]], sig, D_DELIVERED);
        ck_assert_int_eq(s->deliveries_delivered, CROWD - 1);
        ck_assert_int_eq(s->deliveries_skipped, 1);
        ck_assert_int_eq(s->deliveries_pending, 0);
    }
    const Workflow__V1__Signal *first = ck_one_delivery(ids[0], sig, D_DELIVERED);
    ck_assert_str_eq(first->consumed_by_instance, ids[0]);
    ck_assert_str_eq(first->transition_id, "w1");
    ck_one_delivery(ids[7], sig, D_SKIPPED);
}
END_TEST

/* An instance that took three fan-outs and one signal sent to it by id
 * (buffered: it waits for "go" only) lists the four in the order received,
 * the same in pages of one, two and the default. */
WF_CASE_TEST("log", test_instance_log_in_order_and_pages)
{
    const char *key = u("fanpage"), *agg = u("paged");
    char *ids[CROWD];
    deploy_waits(key, 3);
    start_crowd(key, agg, ids);
    const char *who = ids[4];
    send_go(agg);
    scheduler_pass();
    Workflow__V1__SendSignalRequest ping = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    ping.name = "ping";
    ping.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    ping.instance_id = (char *)who;
    ping.buffer_ttl = dur(3600000);
    wf_client_status st;
    Workflow__V1__SendSignalResponse *pr =
        call(me("hook"), "SendSignal", &ping, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(pr->outcome, O_BUFFERED);
    send_go(agg);
    scheduler_pass();
    send_go(agg);
    scheduler_pass();

    Workflow__V1__Signal *all[MAX_ROWS], *paged[MAX_ROWS];
    size_t n = list_all(who, 0, all);
    ck_assert_uint_eq(n, 4);
    const char *names[] = {"go", "ping", "go", "go"};
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(all[i]->name, names[i]);
        ck_assert_int_eq(all[i]->delivery != NULL, i != 1);
        if (i != 1) {
            ck_assert_int_eq(all[i]->delivery->state, D_DELIVERED);
            ck_assert_str_eq(all[i]->delivery->signal_log_id, all[i]->id);
        }
    }
    ck_assert_str_eq(all[0]->id, agg_signal_id(agg, 0));
    ck_assert_str_eq(all[2]->id, agg_signal_id(agg, 1));
    ck_assert_str_eq(all[3]->id, agg_signal_id(agg, 2));
    for (int32_t size = 1; size <= 2; size++) {
        ck_assert_uint_eq(list_all(who, size, paged), n);
        for (size_t i = 0; i < n; i++)
            ck_assert_str_eq(paged[i]->id, all[i]->id);
    }
    /* The first instance, named by each log row, lists each signal once. */
    ck_assert_uint_eq(list_all(ids[0], 1, paged), 3);
}
END_TEST

/* Another tenant's instance id lists nothing there, as an unknown id. */
WF_CASE_TEST("log", test_other_tenant_lists_nothing)
{
    const char *key = u("fanten"), *agg = u("tenant");
    char *ids[CROWD];
    deploy_waits(key, 1);
    start_crowd(key, agg, ids);
    send_go(agg);
    wf_client *other = as_tenant(u("elsewhere"), "reader");
    ck_assert_uint_eq(list_page(other, ids[3], 0, NULL)->n_signals, 0);
    scheduler_pass();
    ck_assert_uint_eq(list_page(other, ids[3], 0, NULL)->n_signals, 0);
    ck_assert_uint_eq(list_page(me("reader"), u("no-such-instance"), 0, NULL)->n_signals, 0);
    ck_assert_uint_eq(list_page(me("reader"), ids[3], 0, NULL)->n_signals, 1);
}
END_TEST

/* Deliveries that ran are removed once the signals' retention (1 s here)
 * has passed: the instances' logs no longer list them, the aggregate's log
 * keeps the signal's row. */
WF_CASE_TEST("retention", test_retention_removes_delivered_rows)
{
    const char *key = u("fanret"), *agg = u("swept");
    char *ids[CROWD];
    deploy_waits(key, 1);
    start_crowd(key, agg, ids);
    send_go(agg);
    const char *sig = agg_signal_id(agg, 0);
    scheduler_pass();
    ck_one_delivery(ids[3], sig, D_DELIVERED);
    int64_t removed = 0;
    int64_t until = wf_mono_ms() + 30000LL * wf_test_time_scale();
    while (removed < CROWD && wf_mono_ms() < until) {
        sleep_ms(100); /* the retention is a time to pass, 1 s */
        removed += scheduler_pass()->rows_removed;
    }
    ck_assert_int_ge(removed, CROWD);
    ck_assert_uint_eq(list_page(me("reader"), ids[3], 0, NULL)->n_signals, 0);
    /* The first instance is the log row's consumer: it still lists it,
     * without a delivery. */
    Workflow__V1__ListSignalsResponse *first = list_page(me("reader"), ids[0], 0, NULL);
    ck_assert_uint_eq(first->n_signals, 1);
    ck_assert_ptr_null(first->signals[0]->delivery);
    ck_assert_str_eq(agg_signal_id(agg, 0), sig);
}
END_TEST

int
main(void)
{
    static const wf_test_case cases[] = {
        {"log", log_setup, teardown, 300},
        {"retention", retention_setup, teardown, 300},
        {NULL},
    };
    return wf_test_run(wf_test_suite_of("e2e_fanout_log", cases));
}
