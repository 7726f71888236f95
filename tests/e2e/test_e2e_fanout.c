/*
 * End-to-end tests of the fan-out of a signal sent to an aggregate, over
 * gRPC, on the memory store and on Postgres (WF_TEST_STORE=pg): 10,000
 * waiting instances get one SendSignal each exactly once, with and without
 * a request id, the deliveries run by two schedulers on one store (as two
 * replicas) while a retry of the request id answers the first answer, and
 * the server's memory stays bounded; a later signal to the aggregate
 * queues behind the pending deliveries of an earlier one and reaches
 * every instance after it; ListSignals and /metrics show the progress.
 *
 * The waiting instances are started through the engine on the server's
 * store (the gRPC path would take minutes on Postgres); the signals go
 * through SendSignal over a real gRPC client.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_kit.h"
#include "handler.h"
#include "instances.h"
#include "net_kit.h"
#include "wf_time.h"

#define O_CORRELATED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED
#define O_QUEUED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_QUEUED
#define CROWD 10000
#define STARTERS 4
#define PAGE 100 /* WF_RUNTIME_FANOUT_PAGE */
/* The growth of the server's resident memory allowed from before the
 * signal to the end of its deliveries (10,000 instances). AddressSanitizer
 * holds freed memory back (its quarantine, 256 MB by default) and shadows
 * what it keeps, so under it the bound is four times wider; the passes
 * without sanitizers hold the real one. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KB (256 * 1024)
#else
#define RSS_BOUND_KB (64 * 1024)
#endif

/* An engine context on the server's store, in the default tenant. */
static wf_runtime_ctx
engine_ctx(wf_arena *a)
{
    return (wf_runtime_ctx){.ref = {.store = ts.app.store,
                                    .tenant = "default",
                                    .actor = "boss",
                                    .arena = a,
                                    .deadline_ms = wf_mono_ms() + 600000}};
}

/* s -> t (MSG "go" by aggregate) -> e, as key. */
static void
deploy_wait(const char *key)
{
    wf_arena *a = wf_arena_new();
    wf_transition *t = wf_arena_calloc(a, 1, sizeof *t);
    *t = (wf_transition){.id = "w",
                         .trigger = WF_TRIGGER_MSG,
                         .signal_name = "go",
                         .correlation = WF_CORRELATION_AGGREGATE};
    kit_deploy_line(engine_ctx(a), key, t);
    wf_arena_free(a);
}

typedef struct starter {
    const char *key, *agg;
    int from, to;
} starter;

static void *
start_some(void *p)
{
    const starter *s = p;
    for (int i = s->from; i < s->to; i++) {
        wf_arena *a = wf_arena_new();
        kit_start_order(engine_ctx(a), s->key, s->agg);
        wf_arena_free(a);
    }
    return NULL;
}

/* n instances of key waiting for "go" on ("order", agg). */
static void
start_crowd(const char *key, const char *agg, int n)
{
    pthread_t th[STARTERS];
    starter s[STARTERS];
    for (int i = 0; i < STARTERS; i++) {
        s[i] = (starter){key, agg, n * i / STARTERS, n * (i + 1) / STARTERS};
        pthread_create(&th[i], NULL, start_some, &s[i]);
    }
    for (int i = 0; i < STARTERS; i++)
        pthread_join(th[i], NULL);
}

static Workflow__V1__SendSignalResponse *
send_go(const char *agg, const char *request_id, wf_client_status *st)
{
    return signal_order(as("hook"), "go", agg, "{\"went\": true}", request_id, st);
}

/* The wire bytes of m (ta). */
static char *
packed(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *b = wf_arena_alloc(ta, *len + 1);
    protobuf_c_message_pack(m, b);
    return (char *)b;
}

static void
ck_same_answer(const Workflow__V1__SendSignalResponse *a, const Workflow__V1__SendSignalResponse *b)
{
    size_t la, lb;
    char *pa = packed(&a->base, &la), *pb = packed(&b->base, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert(memcmp(pa, pb, la) == 0);
}

/* The delivery-log rows of the aggregate, oldest first. */
static Workflow__V1__ListSignalsResponse *
list_agg(const char *agg)
{
    Workflow__V1__ListSignalsRequest req = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    Workflow__V1__Aggregate g = WORKFLOW__V1__AGGREGATE__INIT;
    g.type = "order";
    g.id = (char *)agg;
    req.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &g;
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *r = call(
        as("reader"), "ListSignals", &req, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    return r;
}

static long
rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kb;
}

/* Two schedulers on the server's store, as two replicas would run. */
static wf_scheduler *
replica_scheduler(void)
{
    wf_scheduler_options o;
    wf_app_scheduler_options(&ts.app, &o);
    o.idle_ms = 50;
    wf_error err;
    wf_scheduler *s = wf_scheduler_start(ts.app.store, &o, wf_app_fire_timer, &ts.app, &err);
    ck_assert_msg(s != NULL, "scheduler: %s", err.msg);
    return s;
}

/* Waits (bounded, scaled) until the signal's deliveries are done; the
 * largest resident size seen meanwhile in *peak_kb. */
static Workflow__V1__Signal *
wait_delivered(const char *agg, int which, long *peak_kb)
{
    int64_t until = wf_mono_ms() + 300000LL * wf_test_time_scale();
    for (int i = 0; i < 100000 && wf_mono_ms() < until; i++) {
        long kb = rss_kb();
        if (kb > *peak_kb)
            *peak_kb = kb;
        Workflow__V1__ListSignalsResponse *l = list_agg(agg);
        ck_assert_uint_gt(l->n_signals, (size_t)which);
        Workflow__V1__Signal *s = l->signals[which];
        if (s->outcome != O_QUEUED && s->deliveries_pending == 0)
            return s;
        sleep_ms(200);
    }
    ck_abort_msg("the deliveries of signal %d to %s did not end", which, agg);
    return NULL;
}

/* SIGNAL_CONSUMED events of the tenant's instances of key (from the store). */
static int64_t
consumed_of(const char *key)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx sc = {"default", 0, a};
    const char *types[] = {"SIGNAL_CONSUMED"};
    wf_event_filter f = {.definition_key = key, .types = types, .n_types = 1};
    int64_t after = 0, n = 0;
    wf_error e0;
    /* Number what committed (Postgres numbers events after commit). */
    ck_assert_int_eq(wf_store_sequence_events(ts.app.store, &sc, &e0), WF_OK);
    for (int i = 0; i < 1000; i++) {
        wf_event_row *rows;
        size_t k;
        wf_error err;
        ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, after, &f, 1000, &rows, &k, &err),
                         WF_OK);
        if (k == 0)
            break;
        n += (int64_t)k;
        after = rows[k - 1].sequence;
    }
    wf_arena_free(a);
    return n;
}

static void
fan_out(bool with_request_id)
{
    const char *key = u(with_request_id ? "fan-r" : "fan-n");
    const char *agg = u("crowd");
    deploy_wait(key);
    start_crowd(key, agg, CROWD);
    wf_scheduler *s1 = replica_scheduler(), *s2 = replica_scheduler();
    long before = rss_kb(), peak = before;
    int64_t t0 = wf_mono_ms();
    wf_client_status st;
    const char *rid = with_request_id ? u("r1") : NULL;
    Workflow__V1__SendSignalResponse *r = send_go(agg, rid, &st);
    int64_t answered = wf_mono_ms() - t0;
    ck_ok(st);
    ck_assert_int_eq(r->outcome, O_CORRELATED);
    ck_assert_int_eq(r->instance_count, CROWD);
    ck_assert_uint_eq(r->n_instance_ids, PAGE);
    ck_assert(r->deliveries_pending);
    if (with_request_id) {
        /* A retry during the fan-out answers the first answer. */
        Workflow__V1__SendSignalResponse *again = send_go(agg, rid, &st);
        ck_ok(st);
        ck_same_answer(r, again);
    }
    Workflow__V1__Signal *sig = wait_delivered(agg, 0, &peak);
    int64_t took = wf_mono_ms() - t0;
    wf_scheduler_stop(s1);
    wf_scheduler_stop(s2);
    ck_assert_int_eq(sig->deliveries_delivered, CROWD);
    ck_assert_int_eq(sig->deliveries_skipped, 0);
    ck_assert_str_eq(sig->consumed_by_instance, r->instance_ids[0]);
    ck_assert_int_eq(consumed_of(key), CROWD); /* one consumption each */
    if (with_request_id) {
        Workflow__V1__SendSignalResponse *again = send_go(agg, rid, &st);
        ck_ok(st);
        ck_same_answer(r, again);
    }
    printf("fan-out (%s, %s): %d instances, answered in %lld ms, delivered in %lld ms, "
           "RSS %ld -> peak %ld kB\n",
           wf_test_store_name(), with_request_id ? "request id" : "no request id", CROWD,
           (long long)answered, (long long)took, before, peak);
    ck_assert_msg(peak - before < RSS_BOUND_KB, "RSS grew by %ld kB", peak - before);
}

WF_TEST(test_crowd_gets_the_signal_once_with_request_id)
{
    fan_out(true);
}
END_TEST

WF_TEST(test_crowd_gets_the_signal_once_without_request_id)
{
    fan_out(false);
}
END_TEST

/* s -> w1 (MSG go) -> m -> w2 (MSG go) -> e, both by aggregate. */
static void
deploy_two_waits(const char *key)
{
    wf_arena *a = wf_arena_new();
    static const wf_place p[] = {{.id = "s", .kind = WF_PLACE_START},
                                 {.id = "m", .kind = WF_PLACE_NORMAL},
                                 {.id = "e", .kind = WF_PLACE_END}};
    wf_transition t[] = {{.id = "w1",
                          .trigger = WF_TRIGGER_MSG,
                          .signal_name = "go",
                          .correlation = WF_CORRELATION_AGGREGATE},
                         {.id = "w2",
                          .trigger = WF_TRIGGER_MSG,
                          .signal_name = "go",
                          .correlation = WF_CORRELATION_AGGREGATE}};
    const wf_arc arcs[] = {{.source = "s", .target = "w1"},
                           {.source = "w1", .target = "m"},
                           {.source = "m", .target = "w2"},
                           {.source = "w2", .target = "e"}};
    wf_net net = {.key = key,
                  .places = (wf_place *)p,
                  .n_places = 3,
                  .transitions = t,
                  .n_transitions = 2,
                  .arcs = (wf_arc *)arcs,
                  .n_arcs = 4};
    wf_runtime_ctx c = engine_ctx(a);
    kit_deploy(&c, &net);
    wf_arena_free(a);
}

/* A later signal to the aggregate waits behind the pending deliveries of
 * an earlier one (QUEUED) and reaches every instance after it: each
 * instance takes both waits, the first signal's then the second's. */
WF_TEST(test_later_signal_queues_behind)
{
    const char *key = u("fan-q");
    const char *agg = u("queue");
    int n = 40;
    deploy_two_waits(key);
    start_crowd(key, agg, n);
    wf_client_status st;
    Workflow__V1__SendSignalResponse *first = send_go(agg, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(first->outcome, O_CORRELATED);
    ck_assert_int_eq(first->instance_count, n);
    /* No scheduler runs yet: the deliveries are pending. */
    Workflow__V1__SendSignalResponse *second = send_go(agg, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(second->outcome, O_QUEUED);
    ck_assert(second->deliveries_pending);
    Workflow__V1__ListSignalsResponse *l = list_agg(agg);
    ck_assert_uint_eq(l->n_signals, 2);
    ck_assert_int_eq(l->signals[0]->deliveries_pending, n);
    ck_assert_int_eq(l->signals[1]->outcome, O_QUEUED);
    wf_scheduler *s1 = replica_scheduler();
    long peak = 0;
    Workflow__V1__Signal *a = wait_delivered(agg, 0, &peak);
    Workflow__V1__Signal *b = wait_delivered(agg, 1, &peak);
    wf_scheduler_stop(s1);
    ck_assert_int_eq(a->deliveries_delivered, n);
    ck_assert_int_eq(b->outcome, O_CORRELATED);
    ck_assert_int_eq(b->deliveries_delivered, n);
    ck_assert_int_eq(consumed_of(key), 2 * n);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_fanout", wf_test_store_name(), setup, teardown, 900));
}
