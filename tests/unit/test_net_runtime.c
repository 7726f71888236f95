/*
 * Unit tests of the net runtime over the memory store, without a server:
 * TIME transitions fired the way the scheduler fires them (claim due
 * timers with wf_store_claim_due_timers, then wf_runtime_fire_timer), the
 * deferred choice between a USER and a TIME transition in both directions,
 * due_expression, a refused timer firing becoming an incident, the
 * subscription of a MSG transition, versioning, the definition cache, and
 * a buffered signal whose firing is refused when its wait is enabled, and
 * the signal of a second wait of that step, which the retry consumes;
 * CompleteAndEnd of a net task withdrawing the competing timer.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "defcache.h"
#include "engine_kit.h"
#include "expr.h"
#include "net_runtime.h"
#include "instances.h"
#include "referral.h"
#include "signals.h"
#include "store.h"
#include "test_support.h"
#include "wf_time.h"

static wf_store *st;
static wf_arena *arena;
static int wakes_events, wakes_jobs;

static void
setup(void)
{
    kit_setup();
    wakes_events = wakes_jobs = 0;
}

static wf_ref_ctx
as(const char *actor)
{
    return kit_ctx(actor).ref;
}

static void
count_wake(void *arg, const char *topic)
{
    (void)arg;
    if (strcmp(topic, WF_RUNTIME_TOPIC_EVENTS) == 0)
        wakes_events++;
    else if (strncmp(topic, WF_RUNTIME_TOPIC_JOBS_PREFIX, strlen(WF_RUNTIME_TOPIC_JOBS_PREFIX)) ==
             0)
        wakes_jobs++;
}

/* ---- nets ----------------------------------------------------------------------------- */

static const char *alice_ids[] = {"alice"};

/* start -> review (USER alice) -> end, start -> timeout (TIME) -> end: the
 * deferred choice. The timeout's arc to end carries guard (NULL = none). */
static wf_net *
race_net(const char *key, int64_t delay_ms, const char *due_expression, const char *guard)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 2, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 2, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 4, sizeof *a);
    p[0] = (wf_place){.id = "start", .kind = WF_PLACE_START};
    p[1] = (wf_place){.id = "end", .kind = WF_PLACE_END};
    t[0] = (wf_transition){.id = "review", .name = "Review", .trigger = WF_TRIGGER_USER};
    t[0].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
    t[1] = (wf_transition){.id = "timeout",
                           .trigger = WF_TRIGGER_TIME,
                           .delay_ms = delay_ms,
                           .due_expression = due_expression};
    a[0] = (wf_arc){.source = "start", .target = "review"};
    a[1] = (wf_arc){.source = "review", .target = "end"};
    a[2] = (wf_arc){.source = "start", .target = "timeout"};
    a[3] = (wf_arc){.source = "timeout", .target = "end", .guard = guard};
    *n = (wf_net){.key = key,
                  .places = p,
                  .n_places = 2,
                  .transitions = t,
                  .n_transitions = 2,
                  .arcs = a,
                  .n_arcs = 4};
    return n;
}

static wf_runtime_deployed
deploy(const wf_net *net)
{
    wf_runtime_ctx c = {.ref = as("dev")};
    return kit_deploy(&c, net);
}

static wf_instance_row
start(const char *key, const char *vars)
{
    wf_ref_ctx c = as("boss");
    wf_start_spec spec = {.definition_key = key, .variables_json = vars};
    return kit_start(&c, &spec, NULL);
}

/* Claims every timer due at `now` (all tenants of this private store). */
static wf_timer_row *
claim(int64_t now, size_t *n)
{
    wf_store_ctx sc = {"default", 0, arena};
    wf_timer_row *rows;
    wf_error err;
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sc, now, 100, 30000, &rows, n, &err), WF_OK);
    return rows;
}

static bool
fire(const wf_timer_row *row)
{
    wf_runtime_host rt = {.store = st, .wake = count_wake};
    bool fired = true;
    wf_error err;
    wf_code rc = wf_runtime_fire_timer(&rt, row, wf_mono_ms() + 5000, &fired, &err);
    ck_assert_msg(rc == WF_OK, "fire: %s %s", wf_code_reason(rc), err.msg);
    return fired;
}

#define HOUR_US ((int64_t)3600 * 1000000)

/* ---- tests ----------------------------------------------------------------------------- */

WF_TEST(test_timer_fires_once_and_withdraws_the_task)
{
    deploy(race_net("race", 60 * 60 * 1000, NULL, NULL));
    wf_instance_row in = start("race", "{}");
    ck_assert_int_eq(in.definition_version, 1);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_timers, 1);
    ck_assert_uint_eq(agg.n_tasks, 1);
    ck_assert_uint_eq(agg.n_work_items, 2);
    ck_assert_uint_eq(agg.n_tokens, 1);
    /* The task's deadline is the competing timer's. */
    ck_assert(agg.tasks[0].due_at == agg.timers[0].due_at);
    ck_assert(agg.timers[0].due_at > wf_now_us() + HOUR_US - 60 * 1000000LL);

    size_t n;
    ck_assert_ptr_nonnull(claim(wf_now_us(), &n));
    ck_assert_uint_eq(n, 0); /* not due yet */
    wf_timer_row *rows = claim(wf_now_us() + 2 * HOUR_US, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].instance_id, in.id);
    wf_timer_row row = rows[0];

    ck_assert(fire(&row));
    ck_assert_int_ge(wakes_events, 1);
    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
    ck_assert_uint_eq(agg.n_timers, 0);
    ck_assert_uint_eq(agg.n_work_items, 0);
    ck_assert_int_eq(agg.tasks[0].status, WF_TASK_CANCELLED);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_str_eq(agg.tokens[0].place_id, "end");

    /* The same row again (a second replica, a retry): a no-op. */
    ck_assert(!fire(&row));
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
    ck_assert_int_eq(count_of(ev, "TIMER_SCHEDULED"), 1);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1);
    ck_assert_int_eq(count_of(ev, "TASK_CANCELLED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
    ck_assert_str_eq(ev, "INSTANCE_STARTED TRANSITION_ENABLED TASK_CREATED TRANSITION_ENABLED "
                         "TIMER_SCHEDULED TIMER_FIRED TRANSITION_FIRED WORKITEM_WITHDRAWN "
                         "TASK_CANCELLED INSTANCE_COMPLETED");
}
END_TEST

WF_TEST(test_complete_and_end_withdraws_the_net_and_ends_it)
{
    deploy(race_net("race", 60 * 60 * 1000, NULL, NULL));
    wf_instance_row in = start("race", "{\"n\":1}");
    wf_aggregate agg = kit_aggregate(in.id);
    const char *task_id = agg.tasks[0].id;
    /* A scheduler claimed the timer before the end. */
    size_t n;
    wf_timer_row row = claim(wf_now_us() + 2 * HOUR_US, &n)[0];
    ck_assert_uint_eq(n, 1);

    wf_ref_ctx mallory = as("mallory"), alice = as("alice");
    wf_ref_end end;
    wf_error err;
    ck_assert_int_eq(wf_instances_complete_and_end(&mallory, task_id, "", NULL, &end, &err),
                     WF_E_NOT_ASSIGNEE);
    wf_code rc =
        wf_instances_complete_and_end(&alice, task_id, "{\"why\":\"done\"}", NULL, &end, &err);
    ck_assert_msg(rc == WF_OK, "end: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(end.root.status, WF_INSTANCE_COMPLETED);
    ck_assert_int_eq(end.task.status, WF_TASK_DONE);
    ck_assert_str_eq(end.task.completed_by, "alice");
    ck_assert_uint_eq(end.n_cancelled, 0);
    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(agg.instances[0].variables_json, "{\"n\":1,\"why\":\"done\"}");
    ck_assert_uint_eq(agg.n_timers, 0);
    ck_assert_uint_eq(agg.n_work_items, 0);
    ck_assert_uint_eq(agg.n_tokens, 0);
    ck_assert_int_eq(agg.tasks[0].status, WF_TASK_DONE);
    /* The claimed timer row is stale: it never fires. */
    ck_assert(!fire(&row));
    ck_assert_str_eq(kit_event_types(in.id, 0), "INSTANCE_STARTED TRANSITION_ENABLED TASK_CREATED "
                                                "TRANSITION_ENABLED TIMER_SCHEDULED TASK_COMPLETED "
                                                "WORKITEM_WITHDRAWN INSTANCE_COMPLETED");
    ck_assert_int_eq(wf_instances_complete_and_end(&alice, task_id, "", NULL, &end, &err),
                     WF_E_TASK_NOT_OPEN);
}
END_TEST

WF_TEST(test_timer_withdrawn_by_the_user_never_fires)
{
    deploy(race_net("race", 60 * 60 * 1000, NULL, NULL));
    wf_instance_row in = start("race", "{}");
    size_t n;
    wf_timer_row *rows = claim(wf_now_us() + 2 * HOUR_US, &n);
    ck_assert_uint_eq(n, 1);
    wf_timer_row row = rows[0];

    /* Alice completes her task first: the timer is withdrawn with it. */
    wf_aggregate agg = kit_aggregate(in.id);
    wf_ref_ctx alice = as("alice");
    wf_ref_completion done;
    wf_error err;
    wf_code rc =
        wf_instances_complete_task(&alice, agg.tasks[0].id, "{\"ok\":true}", NULL, &done, &err);
    ck_assert_msg(rc == WF_OK, "complete: %s", err.msg);
    ck_assert_int_eq(done.task.status, WF_TASK_DONE);
    ck_assert(done.counts.all_completed);
    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(agg.instances[0].variables_json, "{\"ok\":true}");
    ck_assert_uint_eq(agg.n_timers, 0);

    /* The claimed row is stale: firing it does nothing. */
    ck_assert(!fire(&row));
    ck_assert_uint_eq((claim(wf_now_us() + 3 * HOUR_US, &n), n), 0);
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 0);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
    ck_assert_int_eq(wf_store_get_instance(st, &(wf_store_ctx){"default", 0, arena}, in.id,
                                           &agg.instances[0], &err),
                     WF_OK);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
}
END_TEST

/* The work-item history (wf_runtime_list_work_items): a user's completion
 * and the timer it withdrew; then a timer's firing and the task it
 * withdrew; states, times, deadline, assignee and finished_by. */
static wf_runtime_item *
history(const char *id, const int *states, size_t n_states, size_t *n)
{
    wf_ref_ctx c = as(NULL);
    wf_runtime_list_items_in q = {.instance_id = id, .states = states, .n_states = n_states};
    wf_runtime_item *items;
    char *next;
    wf_error err;
    wf_code rc = wf_runtime_list_work_items(&c, &q, &items, n, &next, &err);
    ck_assert_msg(rc == WF_OK, "list: %s", err.msg);
    ck_assert_ptr_null(next);
    return items;
}

WF_TEST(test_work_item_history)
{
    deploy(race_net("race", 60 * 60 * 1000, NULL, NULL));
    /* Alice completes: review FINISHED by alice, the timeout CANCELLED. */
    wf_instance_row in = start("race", "{}");
    wf_aggregate agg = kit_aggregate(in.id);
    int64_t due = agg.timers[0].due_at;
    size_t n;
    wf_runtime_item *h = history(in.id, NULL, 0, &n);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(h[i].state, WF_RUNTIME_ITEM_ENABLED);
        ck_assert_int_eq(h[i].row.deadline, due);
    }
    wf_ref_ctx alice = as("alice");
    wf_ref_completion done;
    wf_error err;
    ck_assert_int_eq(wf_instances_complete_task(&alice, agg.tasks[0].id, NULL, NULL, &done, &err),
                     WF_OK);
    h = history(in.id, NULL, 0, &n);
    ck_assert_uint_eq(n, 2);
    const wf_runtime_item *rv = strcmp(h[0].row.transition_id, "review") == 0 ? &h[0] : &h[1];
    const wf_runtime_item *to = rv == &h[0] ? &h[1] : &h[0];
    ck_assert_int_eq(rv->state, WF_RUNTIME_ITEM_FINISHED);
    ck_assert_str_eq(rv->transition_name, "Review");
    ck_assert_str_eq(rv->row.finished_by, "alice");
    ck_assert_int_eq(rv->row.assignee_kind, WF_NET_ASSIGNEE_USER);
    ck_assert_str_eq(rv->row.assignee_id, "alice");
    ck_assert(rv->finished_at >= rv->row.enabled_at && rv->cancelled_at == 0);
    ck_assert_int_eq(to->state, WF_RUNTIME_ITEM_CANCELLED);
    ck_assert_int_eq(to->cancelled_at, rv->finished_at);
    ck_assert_int_eq(to->finished_at, 0);
    ck_assert_ptr_null(to->row.finished_by);
    ck_assert_int_eq(to->row.deadline, due);
    int fin[] = {WF_RUNTIME_ITEM_FINISHED}, open[] = {WF_RUNTIME_ITEM_ENABLED};
    ck_assert_uint_eq((history(in.id, fin, 1, &n), n), 1);
    ck_assert_uint_eq((history(in.id, open, 1, &n), n), 0);
    /* The live rows left the aggregate. */
    ck_assert_uint_eq(kit_aggregate(in.id).n_work_items, 0);

    /* The timer fires: timeout FINISHED by nobody, review CANCELLED. */
    wf_instance_row in2 = start("race", "{}");
    wf_timer_row *rows = claim(wf_now_us() + 2 * HOUR_US, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(fire(&rows[0]));
    h = history(in2.id, NULL, 0, &n);
    ck_assert_uint_eq(n, 2);
    rv = strcmp(h[0].row.transition_id, "review") == 0 ? &h[0] : &h[1];
    to = rv == &h[0] ? &h[1] : &h[0];
    ck_assert_int_eq(to->state, WF_RUNTIME_ITEM_FINISHED);
    ck_assert_ptr_null(to->row.finished_by);
    ck_assert_int_eq(rv->state, WF_RUNTIME_ITEM_CANCELLED);
    ck_assert_ptr_null(rv->row.finished_by);
    ck_assert_int_eq(rv->cancelled_at, to->finished_at);

    /* Bad requests. */
    wf_ref_ctx c = as(NULL);
    wf_runtime_item *items;
    char *next;
    int bad[] = {9};
    wf_runtime_list_items_in q = {.instance_id = in.id, .states = bad, .n_states = 1};
    ck_assert_int_eq(wf_runtime_list_work_items(&c, &q, &items, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    q = (wf_runtime_list_items_in){.instance_id = in.id, .page_size = -1};
    ck_assert_int_eq(wf_runtime_list_work_items(&c, &q, &items, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    q = (wf_runtime_list_items_in){.instance_id = "0190a0a0-0000-7000-8000-000000000000"};
    ck_assert_int_eq(wf_runtime_list_work_items(&c, &q, &items, &n, &next, &err),
                     WF_E_INSTANCE_NOT_FOUND);
}
END_TEST

/* The scheduler's batch: one call fires the due timers of many roots (in
 * batch units of work over several roots), each once and with its events;
 * a claimed timer whose token was consumed meanwhile does not fire; and a
 * root that fails (here a row naming no instance) is taken out of the
 * batch without costing the others their firings. */
WF_TEST(test_timers_fire_in_batches)
{
    deploy(race_net("race", 60 * 60 * 1000, NULL, NULL));
    enum { N = 12, STALE = 3 };
    wf_instance_row in[N];
    for (int i = 0; i < N; i++)
        in[i] = start("race", "{}");
    size_t n;
    wf_timer_row *claimed = claim(wf_now_us() + 2 * HOUR_US, &n);
    ck_assert_uint_eq(n, N);
    wf_timer_row rows[N + 1];
    memcpy(rows, claimed, N * sizeof rows[0]);
    /* A row whose root does not exist sorts first and fails first. */
    rows[N] = rows[0];
    rows[N].id = "ghost";
    rows[N].instance_id = rows[N].root_id = "00000000-0000-7000-8000-000000000000";

    /* Alice completes the first STALE instances' tasks: their claimed
     * timers are stale. */
    wf_ref_ctx alice = as("alice");
    for (int i = 0; i < STALE; i++) {
        wf_aggregate agg = kit_aggregate(in[i].id);
        wf_ref_completion done;
        wf_error err;
        ck_assert_int_eq(
            wf_instances_complete_task(&alice, agg.tasks[0].id, "{\"ok\":true}", NULL, &done, &err),
            WF_OK);
    }

    wf_runtime_host rt = {.store = st, .wake = count_wake};
    bool fired[N + 1];
    wf_code codes[N + 1];
    wf_error errs[N + 1];
    wf_runtime_fire_timers(&rt, rows, N + 1, wf_mono_ms() + 5000, fired, codes, errs);
    ck_assert(!fired[N]);
    ck_assert_int_ne(codes[N], WF_OK);
    ck_assert_int_ge(wakes_events, 1);
    for (int r = 0; r < N; r++) {
        int i = -1;
        for (int k = 0; k < N; k++)
            if (strcmp(rows[r].instance_id, in[k].id) == 0)
                i = k;
        ck_assert_int_ge(i, 0);
        ck_assert_msg(codes[r] == WF_OK, "timer %d: %s", r, errs[r].msg);
        ck_assert_int_eq(fired[r], i >= STALE);
        const char *ev = kit_event_types(in[i].id, 0);
        ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), i >= STALE ? 1 : 0);
        ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
        wf_aggregate agg = kit_aggregate(in[i].id);
        ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
        ck_assert_uint_eq(agg.n_timers, 0);
        ck_assert_int_eq(agg.tasks[0].status, i >= STALE ? WF_TASK_CANCELLED : WF_TASK_DONE);
    }

    /* The same rows again (another replica, a retry): nothing fires. */
    wf_runtime_fire_timers(&rt, rows, N, wf_mono_ms() + 5000, fired, codes, errs);
    for (int r = 0; r < N; r++) {
        ck_assert_int_eq(codes[r], WF_OK);
        ck_assert(!fired[r]);
    }
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(count_of(kit_event_types(in[i].id, 0), "TIMER_FIRED"), i >= STALE ? 1 : 0);
}
END_TEST

/* The deferred choice under a real race: alice completes her task at the
 * very moment the competing timer (due now) is fired by the scheduler, on
 * two threads released together, 1,000 times. Exactly one side wins every
 * time: either the task is DONE and the timer never fires, or the timer
 * fires and the completion is refused while the task is CANCELLED. */
struct racer {
    pthread_barrier_t *gate;
    const char *task_id;
    wf_timer_row timer;
    wf_code complete_rc;
    bool fired;
};

static void *
race_complete(void *arg)
{
    struct racer *r = arg;
    wf_arena *a = wf_arena_new();
    wf_ref_ctx alice = {.store = st, .tenant = "default", .actor = "alice", .arena = a};
    wf_ref_completion done;
    wf_error err;
    pthread_barrier_wait(r->gate);
    r->complete_rc = wf_instances_complete_task(&alice, r->task_id, "{}", NULL, &done, &err);
    wf_arena_free(a);
    return NULL;
}

static void *
race_timer(void *arg)
{
    struct racer *r = arg;
    wf_runtime_host rt = {.store = st};
    wf_error err;
    pthread_barrier_wait(r->gate);
    wf_code rc = wf_runtime_fire_timer(&rt, &r->timer, wf_mono_ms() + 5000, &r->fired, &err);
    if (rc != WF_OK)
        r->fired = false;
    return NULL;
}

WF_TEST(test_user_racing_time_1000_times)
{
    /* The timer is due at once: its due time is in the past. */
    deploy(race_net("race1k", 0, "\"2000-01-01T00:00:00Z\"", NULL));
    int user_won = 0, timer_won = 0;
    for (int i = 0; i < 1000; i++) {
        wf_instance_row in = start("race1k", "{}");
        wf_aggregate agg = kit_aggregate(in.id);
        ck_assert_uint_eq(agg.n_tasks, 1);
        size_t n;
        wf_timer_row *rows = claim(wf_now_us() + HOUR_US, &n);
        ck_assert_uint_eq(n, 1);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        struct racer r = {.gate = &gate, .task_id = agg.tasks[0].id, .timer = rows[0]};
        pthread_t a, b;
        pthread_create(&a, NULL, race_complete, &r);
        pthread_create(&b, NULL, race_timer, &r);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&gate);

        agg = kit_aggregate(in.id);
        ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
        ck_assert_uint_eq(agg.n_timers, 0);
        const char *ev = kit_event_types(in.id, 0);
        ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1);
        if (r.complete_rc == WF_OK) {
            ck_assert_msg(!r.fired, "round %d: both the task and the timer won", i);
            ck_assert_int_eq(agg.tasks[0].status, WF_TASK_DONE);
            ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 0);
            user_won++;
        } else {
            ck_assert_msg(r.fired, "round %d: neither side won (%s)", i,
                          wf_code_reason(r.complete_rc));
            ck_assert_msg(r.complete_rc == WF_E_TASK_NOT_OPEN ||
                              r.complete_rc == WF_E_INSTANCE_NOT_RUNNING,
                          "round %d: %s", i, wf_code_reason(r.complete_rc));
            ck_assert_int_eq(agg.tasks[0].status, WF_TASK_CANCELLED);
            ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
            timer_won++;
        }
    }
    printf("user-vs-timer race: the task won %d times, the timer %d times\n", user_won, timer_won);
    ck_assert_int_eq(user_won + timer_won, 1000);
}
END_TEST

WF_TEST(test_due_expression_and_refused_firing_is_an_incident)
{
    /* The timeout's only output arc needs .go: false makes its firing
     * match no arc, which for a TIME transition is an incident. */
    deploy(race_net("due", 0, ".due", ".go == true"));
    wf_instance_row in = start("due", "{\"due\":\"2001-02-03T04:05:06Z\",\"go\":false}");
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_timers, 1);
    int64_t want;
    ck_assert(wf_expr_parse_rfc3339("2001-02-03T04:05:06Z", &want));
    ck_assert(agg.timers[0].due_at == want);
    size_t n;
    wf_timer_row *rows = claim(wf_now_us(), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(fire(&rows[0]));
    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_FAILED);
    ck_assert_ptr_nonnull(agg.instances[0].last_error);
    ck_assert_ptr_nonnull(strstr(agg.instances[0].last_error, "timeout"));
    ck_assert_ptr_nonnull(strstr(agg.instances[0].last_error, "no output arc"));
    ck_assert_uint_eq(agg.n_timers, 0);
    /* Nothing else moved: the work items and the task wait for a retry. */
    ck_assert_uint_eq(agg.n_work_items, 2);
    ck_assert_int_eq(agg.tasks[0].status, WF_TASK_OPEN);
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 0);
    ck_assert(!fire(&rows[0]));

    /* A task of a FAILED instance cannot be completed. */
    wf_ref_ctx alice = as("alice");
    wf_ref_completion done;
    wf_error err;
    ck_assert_int_eq(wf_instances_complete_task(&alice, agg.tasks[0].id, "{}", NULL, &done, &err),
                     WF_E_INSTANCE_NOT_RUNNING);
}
END_TEST

/* The task expressions of a USER transition: evaluated at enablement
 * over the variables, the due time kept over that of the competing
 * timer; a result of the wrong type or out of range refuses the
 * StartInstance that enables it, as any expression at enablement does. */
WF_TEST(test_task_expressions_at_enablement)
{
    wf_net *n = race_net("tx", 60000, NULL, NULL);
    n->transitions[0].priority_expression = ".p";
    n->transitions[0].task_due_expression = ".due";
    n->transitions[0].task_follow_up_expression = ".follow";
    deploy(n);
    wf_instance_row in = start("tx", "{\"p\":80,\"due\":\"2031-01-01T00:00:00Z\","
                                     "\"follow\":\"2030-12-01T00:00:00+01:00\"}");
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_tasks, 1);
    ck_assert_uint_eq(agg.n_timers, 1);
    int64_t due, follow;
    ck_assert(wf_expr_parse_rfc3339("2031-01-01T00:00:00Z", &due));
    ck_assert(wf_expr_parse_rfc3339("2030-11-30T23:00:00Z", &follow));
    ck_assert_int_eq(agg.tasks[0].priority, 80);
    ck_assert(agg.tasks[0].due_at == due);
    ck_assert(agg.tasks[0].due_fixed);
    ck_assert(agg.tasks[0].follow_up_at == follow);

    static const struct {
        const char *vars, *why;
    } bad[] = {
        {"{\"p\":101,\"due\":\"2031-01-01T00:00:00Z\",\"follow\":\"2030-12-01T00:00:00Z\"}",
         "priority_expression of transition \"review\" gave 101, which is not 0 to 100"},
        {"{\"p\":-1,\"due\":\"2031-01-01T00:00:00Z\",\"follow\":\"2030-12-01T00:00:00Z\"}",
         "gave -1, which is not 0 to 100"},
        {"{\"p\":\"high\",\"due\":\"2031-01-01T00:00:00Z\"}",
         "priority_expression of transition \"review\": expression must yield an integer, got "
         "string"},
        {"{\"p\":7.5}", "expression must yield an integer, got 7.5"},
        {"{\"p\":1,\"due\":1924992000}",
         "task_due_expression of transition \"review\": expression must yield an RFC 3339 time "
         "string, got number"},
        {"{\"p\":1,\"due\":\"0000-06-01T00:00:00Z\",\"follow\":\"0000-05-01T00:00:00Z\"}",
         "task_due_expression of transition \"review\" gave a time outside "
         "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"},
        {"{\"p\":1,\"due\":\"2031-01-01T00:00:00Z\",\"follow\":\"2031-01-02T00:00:00Z\"}",
         "task_follow_up_expression of transition \"review\" gave a time after that of its "
         "task_due_expression"},
        {"{\"p\":1,\"due\":\"2031-01-01T00:00:00Z\"}",
         "task_follow_up_expression of transition \"review\": expression must yield an RFC 3339 "
         "time string, got null"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_ref_ctx c = as("boss");
        wf_start_spec spec = {.definition_key = "tx", .variables_json = bad[i].vars};
        wf_instance_row out;
        wf_error err;
        ck_assert_int_eq(wf_instances_start(&c, &spec, NULL, &out, &err), WF_E_INVALID_ARGUMENT);
        ck_assert_msg(strstr(err.msg, bad[i].why) != NULL, "%zu: %s", i, err.msg);
    }
}
END_TEST

/* Where the enablement is not the caller's own step (a timer firing), a
 * task expression that fails is an incident of the instance, as a
 * failing ids_expression or guard is. */
WF_TEST(test_task_expression_failing_after_a_timer_is_an_incident)
{
    wf_place p[] = {{.id = "start", .kind = WF_PLACE_START},
                    {.id = "mid", .kind = WF_PLACE_NORMAL},
                    {.id = "end", .kind = WF_PLACE_END}};
    wf_transition t[] = {
        {.id = "wait", .trigger = WF_TRIGGER_TIME, .due_expression = "\"2000-01-01T00:00:00Z\""},
        {.id = "review", .trigger = WF_TRIGGER_USER, .priority_expression = ".p"},
    };
    t[1].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
    wf_arc a[] = {{.source = "start", .target = "wait"},
                  {.source = "wait", .target = "mid"},
                  {.source = "mid", .target = "review"},
                  {.source = "review", .target = "end"}};
    wf_net net = {.key = "tx-late",
                  .places = p,
                  .n_places = 3,
                  .transitions = t,
                  .n_transitions = 2,
                  .arcs = a,
                  .n_arcs = 4};
    deploy(&net);
    wf_instance_row in = start("tx-late", "{\"p\":500}");
    size_t n;
    wf_timer_row *rows = claim(wf_now_us(), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(fire(&rows[0]));
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_FAILED);
    ck_assert_ptr_nonnull(agg.instances[0].last_error);
    ck_assert_msg(strstr(agg.instances[0].last_error, "gave 500, which is not 0 to 100") != NULL,
                  "%s", agg.instances[0].last_error);
    ck_assert_uint_eq(agg.n_tasks, 0);
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "TASK_CREATED"), 0);
}
END_TEST

/* The live USER work item of a net task, as ListWorkItems reads it. */
static wf_runtime_item
review_item(const char *instance_id)
{
    wf_ref_ctx c = as("boss");
    wf_runtime_list_items_in q = {.instance_id = instance_id};
    wf_runtime_item *items;
    size_t n;
    char *next;
    wf_error err;
    ck_assert_int_eq(wf_runtime_list_work_items(&c, &q, &items, &n, &next, &err), WF_OK);
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i].row.transition_id, "review") == 0)
            return items[i];
    ck_abort_msg("no review work item");
    return items[0];
}

/* Reassigned or delegated, a net task's work item names its new holder
 * (the delegate while pending, the owner again once resolved); the item
 * keeps its deadline from the competing timer. */
WF_TEST(test_work_item_follows_reassign_and_delegate)
{
    deploy(race_net("wi", 60000, NULL, NULL));
    wf_instance_row in = start("wi", "{}");
    wf_aggregate agg = kit_aggregate(in.id);
    const char *task = agg.tasks[0].id;
    wf_runtime_item it = review_item(in.id);
    ck_assert_str_eq(it.row.assignee_id, "alice");
    int64_t deadline = it.row.deadline;
    ck_assert(deadline != 0);
    wf_ref_ctx alice = as("alice"), bob = as("bob"), carl = as("carl");
    wf_task_row t;
    wf_error err;
    wf_task_reassign to_bob = {.user = "bob"};
    ck_assert_int_eq(wf_referral_reassign(&alice, task, &to_bob, NULL, &t, &err), WF_OK);
    it = review_item(in.id);
    ck_assert_str_eq(it.row.assignee_id, "bob");
    ck_assert_int_eq(it.row.assignee_kind, WF_NET_ASSIGNEE_USER);
    ck_assert(it.row.deadline == deadline);
    ck_assert_int_eq(wf_referral_delegate(&bob, task, "carl", NULL, &t, &err), WF_OK);
    ck_assert_str_eq(review_item(in.id).row.assignee_id, "carl");
    wf_ref_completion done;
    ck_assert_int_eq(wf_instances_complete_task(&carl, task, "{}", NULL, &done, &err), WF_OK);
    ck_assert_int_eq(done.task.delegation, WF_DELEGATION_RESOLVED);
    ck_assert_str_eq(review_item(in.id).row.assignee_id, "bob");
    wf_task_reassign to_group = {.group = "ops"};
    ck_assert_int_eq(wf_referral_reassign(&bob, task, &to_group, NULL, &t, &err), WF_OK);
    it = review_item(in.id);
    ck_assert_str_eq(it.row.assignee_id, "ops");
    ck_assert_int_eq(it.row.assignee_kind, WF_NET_ASSIGNEE_GROUP);
    /* Completed, the item ends naming the group; the net ends. */
    wf_ref_ctx dana = as("dana");
    ck_assert_int_eq(wf_referral_claim(&dana, task, NULL, &t, &err), WF_OK);
    ck_assert_int_eq(wf_instances_complete_task(&dana, task, "{}", NULL, &done, &err), WF_OK);
    it = review_item(in.id);
    ck_assert_int_eq(it.state, WF_RUNTIME_ITEM_FINISHED);
    ck_assert_str_eq(it.row.assignee_id, "ops");
    ck_assert_str_eq(it.row.finished_by, "dana");
}
END_TEST

static int violations;

static void
count_violation(void *arg, const char *field, const char *reason, const char *msg)
{
    (void)reason;
    (void)msg;
    ck_assert_str_eq(field, (const char *)arg);
    violations++;
}

/* Correlate or start: with no instance of the aggregate SendSignal
 * starts one and its first (AGGREGATE) wait consumes the signal in the
 * same unit of work; a second one, with that instance live but no longer
 * waiting, is only buffered; a start by instance id and a start without
 * an actor are refused, the field named under start. */
WF_TEST(test_signal_with_start)
{
    static const wf_place p[] = {{.id = "s", .kind = WF_PLACE_START},
                                 {.id = "w", .kind = WF_PLACE_NORMAL},
                                 {.id = "e", .kind = WF_PLACE_END}};
    static wf_transition t[] = {
        {.id = "paid",
         .trigger = WF_TRIGGER_MSG,
         .signal_name = "payment",
         .correlation = WF_CORRELATION_AGGREGATE},
        {.id = "ship", .trigger = WF_TRIGGER_USER},
    };
    t[1].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
    static const wf_arc a[] = {{.source = "s", .target = "paid"},
                               {.source = "paid", .target = "w"},
                               {.source = "w", .target = "ship"},
                               {.source = "ship", .target = "e"}};
    wf_net net = {.key = "sws",
                  .places = (wf_place *)p,
                  .n_places = 3,
                  .transitions = t,
                  .n_transitions = 2,
                  .arcs = (wf_arc *)a,
                  .n_arcs = 4};
    deploy(&net);
    wf_runtime_ctx c = {.ref = as("hook")};
    wf_start_spec spec = {.definition_key = "sws", .variables_json = "{\"src\":1}"};
    wf_runtime_send_signal_in in = {.name = "payment",
                                    .aggregate_type = "order",
                                    .aggregate_id = "S-1",
                                    .has_aggregate = true,
                                    .payload_json = "{\"amount\":3}",
                                    .start = &spec};
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(wf_runtime_send_signal(&c, &in, NULL, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_STARTED);
    ck_assert_uint_eq(out.n_instance_ids, 1);
    ck_assert_int_gt(out.expires_at,
                     wf_now_us() + WF_RUNTIME_SIGNAL_START_TTL_MS * 1000 - 60000000LL);
    wf_aggregate g = kit_aggregate(out.instance_ids[0]);
    ck_assert_str_eq(g.instances[0].aggregate_id, "S-1");
    ck_assert_str_eq(g.instances[0].started_by, "hook");
    ck_assert_str_eq(g.instances[0].variables_json, "{\"src\":1,\"amount\":3}");
    ck_assert_uint_eq(g.n_tasks, 1); /* past the wait: the signal was consumed */

    in.buffer_ttl_ms = 60000;
    ck_assert_int_eq(wf_runtime_send_signal(&c, &in, NULL, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_BUFFERED);
    ck_assert_uint_eq(out.n_instance_ids, 0);

    in.has_aggregate = false;
    in.instance_id = g.instances[0].id;
    c.ref.violation = count_violation;
    c.ref.violation_arg = "start";
    violations = 0;
    ck_assert_int_eq(wf_runtime_send_signal(&c, &in, NULL, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(violations, 1);
    in.has_aggregate = true;
    in.instance_id = NULL;
    in.aggregate_id = "S-2";
    spec.version = -1;
    c.ref.violation_arg = "start.version";
    ck_assert_int_eq(wf_runtime_send_signal(&c, &in, NULL, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(violations, 2);
    spec.version = 0;
    c.ref.actor = NULL;
    ck_assert_int_eq(wf_runtime_send_signal(&c, &in, NULL, &out, &err), WF_E_ACTOR_MISSING);
}
END_TEST

WF_TEST(test_msg_subscription_and_view)
{
    static const wf_place p[] = {{.id = "s", .kind = WF_PLACE_START},
                                 {.id = "e", .kind = WF_PLACE_END}};
    static wf_transition t[] = {
        {.id = "paid",
         .trigger = WF_TRIGGER_MSG,
         .signal_name = "payment",
         .correlation = WF_CORRELATION_AGGREGATE},
        {.id = "late", .trigger = WF_TRIGGER_TIME, .delay_ms = 1000},
        {.id = "note", .trigger = WF_TRIGGER_MSG, .signal_name = "note"},
    };
    static const wf_arc a[] = {
        {.source = "s", .target = "paid"}, {.source = "paid", .target = "e"},
        {.source = "s", .target = "late"}, {.source = "late", .target = "e"},
        {.source = "s", .target = "note"}, {.source = "note", .target = "e"}};
    wf_net net = {.key = "msg",
                  .places = (wf_place *)p,
                  .n_places = 2,
                  .transitions = t,
                  .n_transitions = 3,
                  .arcs = (wf_arc *)a,
                  .n_arcs = 6};
    deploy(&net);
    wf_ref_ctx c = as("boss");
    wf_start_spec spec = {
        .definition_key = "msg", .aggregate_type = "order", .aggregate_id = "A-7"};
    wf_instance_row in;
    wf_error err;
    ck_assert_int_eq(wf_instances_start(&c, &spec, NULL, &in, &err), WF_OK);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_subscriptions, 2);
    wf_store_ctx sc = {"default", 0, arena};
    wf_subscription_row *subs;
    size_t n;
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &sc, "payment", NULL, "order", "A-7", &subs, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(subs[0].transition_id, "paid");
    ck_assert_str_eq(subs[0].instance_id, in.id);
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &sc, "note", in.id, NULL, NULL, &subs, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_null(subs[0].aggregate_type); /* INSTANCE correlation */

    wf_runtime_view v;
    ck_assert_int_eq(wf_runtime_instance_view(&c, in.id, &v, &err), WF_OK);
    ck_assert(v.is_net);
    ck_assert_uint_eq(v.n_marking, 1);
    ck_assert_str_eq(v.marking[0].place_id, "s");
    ck_assert_int_eq(v.marking[0].count, 1);
    ck_assert_uint_eq(v.n_timers, 1);
    ck_assert_uint_eq(v.n_awaiting, 2);
    /* Rows made in one step have no fixed order among themselves. */
    const wf_runtime_awaiting *paid = NULL, *note = NULL;
    for (size_t i = 0; i < v.n_awaiting; i++) {
        if (strcmp(v.awaiting[i].sub.transition_id, "paid") == 0)
            paid = &v.awaiting[i];
        else if (strcmp(v.awaiting[i].sub.transition_id, "note") == 0)
            note = &v.awaiting[i];
    }
    ck_assert_ptr_nonnull(paid);
    ck_assert_ptr_nonnull(note);
    ck_assert_int_eq(paid->correlation, WF_CORRELATION_AGGREGATE);
    ck_assert_int_eq(note->correlation, WF_CORRELATION_INSTANCE);
    ck_assert(paid->times_out_at == v.timers[0].due_at);
    ck_assert(note->times_out_at == v.timers[0].due_at);

    /* The timer wins: both subscriptions go with it. */
    wf_timer_row *rows = claim(wf_now_us() + 2 * 1000000, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(fire(&rows[0]));
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_subscriptions, 0);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
    ck_assert_int_eq(count_of(kit_event_types(in.id, 0), "WORKITEM_WITHDRAWN"), 2);
}
END_TEST

WF_TEST(test_versions_and_cache)
{
    wf_net *a = race_net("ver", 1000, NULL, NULL);
    wf_runtime_deployed d1 = deploy(a);
    ck_assert(d1.created);
    ck_assert_int_eq(d1.row.version, 1);
    size_t cached = wf_defcache_size();
    wf_runtime_deployed d2 = deploy(a);
    ck_assert(!d2.created);
    ck_assert_int_eq(d2.row.version, 1);
    ck_assert_uint_eq(wf_defcache_size(), cached);
    wf_net *b = race_net("ver", 2000, NULL, NULL);
    wf_runtime_deployed d3 = deploy(b);
    ck_assert(d3.created);
    ck_assert_int_eq(d3.row.version, 2);
    ck_assert_str_ne(d3.row.content_hash, d1.row.content_hash);
    ck_assert(d3.net->transitions[1].delay_ms == 2000);
    /* An instance is pinned to the version it started with. */
    wf_instance_row in = start("ver", NULL);
    ck_assert_int_eq(in.definition_version, 2);
    deploy(race_net("ver", 3000, NULL, NULL));
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert(agg.timers[0].due_at - agg.timers[0].created_at == 2000 * 1000);
}
END_TEST

/* ---- a stale timeout never fires ------------------------------------------------------- */

/* start -> paid (MSG "paid", by instance) -> end, start -> timeout (TIME,
 * due at once) -> late -> chase (USER alice) -> end: the signal and its
 * timeout compete for the one token. Which arc the case followed shows in
 * the marking: end (and COMPLETED) after the signal, late after the
 * timeout. */
static wf_net *
signal_race_net(const char *key)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 3, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 3, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 6, sizeof *a);
    p[0] = (wf_place){.id = "start", .kind = WF_PLACE_START};
    p[1] = (wf_place){.id = "late", .kind = WF_PLACE_NORMAL};
    p[2] = (wf_place){.id = "end", .kind = WF_PLACE_END};
    t[0] = (wf_transition){.id = "paid", .trigger = WF_TRIGGER_MSG, .signal_name = "paid"};
    t[1] = (wf_transition){
        .id = "timeout", .trigger = WF_TRIGGER_TIME, .due_expression = "\"2000-01-01T00:00:00Z\""};
    t[2] = (wf_transition){.id = "chase", .name = "Chase", .trigger = WF_TRIGGER_USER};
    t[2].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
    a[0] = (wf_arc){.source = "start", .target = "paid"};
    a[1] = (wf_arc){.source = "paid", .target = "end"};
    a[2] = (wf_arc){.source = "start", .target = "timeout"};
    a[3] = (wf_arc){.source = "timeout", .target = "late"};
    a[4] = (wf_arc){.source = "late", .target = "chase"};
    a[5] = (wf_arc){.source = "chase", .target = "end"};
    *n = (wf_net){.key = key,
                  .places = p,
                  .n_places = 3,
                  .transitions = t,
                  .n_transitions = 3,
                  .arcs = a,
                  .n_arcs = 6};
    return n;
}

/* SendSignal "paid" to instance_id (not buffered), as the handler calls it. */
static wf_code
send_paid(wf_arena *a, const char *instance_id, wf_runtime_send_signal_out *out)
{
    wf_runtime_ctx c = {.ref = {.store = st, .tenant = "default", .actor = NULL, .arena = a}};
    wf_runtime_send_signal_in in = {.name = "paid", .instance_id = instance_id};
    wf_error err;
    return wf_runtime_send_signal(&c, &in, NULL, out, &err);
}

struct signal_racer {
    pthread_barrier_t *gate;
    const char *instance_id;
    wf_timer_row timer;
    wf_code send_rc;
    wf_signal_outcome outcome;
    bool fired;
};

static void *
race_signal(void *arg)
{
    struct signal_racer *r = arg;
    wf_arena *a = wf_arena_new();
    wf_runtime_send_signal_out out = {0};
    pthread_barrier_wait(r->gate);
    r->send_rc = send_paid(a, r->instance_id, &out);
    r->outcome = out.outcome;
    wf_arena_free(a);
    return NULL;
}

static void *
race_signal_timer(void *arg)
{
    struct signal_racer *r = arg;
    wf_runtime_host rt = {.store = st};
    wf_error err;
    pthread_barrier_wait(r->gate);
    wf_code rc = wf_runtime_fire_timer(&rt, &r->timer, wf_mono_ms() + 5000, &r->fired, &err);
    if (rc != WF_OK)
        r->fired = false;
    return NULL;
}

static const char *
place_of_only_token(const wf_aggregate *agg)
{
    ck_assert_uint_eq(agg->n_tokens, 1);
    return agg->tokens[0].place_id;
}

/* The awaited signal and its timeout, released together on two threads,
 * 1,000 times. Exactly one side wins every round. When the signal won,
 * the timeout is stale: firing its claimed row again reports it gone and
 * changes nothing (no TIMER_FIRED, no token moves, no new event); when the
 * timeout won, the signal finds nothing waiting and is dropped. */
WF_TEST(test_signal_racing_its_timeout_1000_times)
{
    deploy(signal_race_net("sigrace"));
    int signal_won = 0, timer_won = 0;
    for (int i = 0; i < 1000; i++) {
        wf_instance_row in = start("sigrace", "{}");
        wf_aggregate agg = kit_aggregate(in.id);
        ck_assert_uint_eq(agg.n_subscriptions, 1);
        size_t n;
        wf_timer_row *rows = claim(wf_now_us() + HOUR_US, &n);
        ck_assert_uint_eq(n, 1);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        struct signal_racer r = {.gate = &gate, .instance_id = in.id, .timer = rows[0]};
        pthread_t a, b;
        pthread_create(&a, NULL, race_signal, &r);
        pthread_create(&b, NULL, race_signal_timer, &r);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&gate);
        ck_assert_msg(r.send_rc == WF_OK, "round %d: SendSignal: %s", i, wf_code_reason(r.send_rc));

        agg = kit_aggregate(in.id);
        ck_assert_uint_eq(agg.n_timers, 0);
        ck_assert_uint_eq(agg.n_subscriptions, 0);
        const char *ev = kit_event_types(in.id, 0);
        ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1);
        if (r.outcome == WF_SIGNAL_CORRELATED) {
            ck_assert_msg(!r.fired, "round %d: both the signal and the timeout won", i);
            ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
            ck_assert_str_eq(place_of_only_token(&agg), "end");
            ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1);
            ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 0);
            ck_assert_uint_eq(agg.n_tasks, 0);

            /* The stale timeout, fired again: gone, and nothing changes. */
            char before[4096];
            snprintf(before, sizeof before, "%s", ev);
            ck_assert(!fire(&r.timer));
            agg = kit_aggregate(in.id);
            ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
            ck_assert_str_eq(place_of_only_token(&agg), "end");
            ck_assert_str_eq(kit_event_types(in.id, 0), before);
            signal_won++;
        } else {
            ck_assert_msg(r.fired, "round %d: neither side won (outcome %d)", i, (int)r.outcome);
            ck_assert_int_eq(r.outcome, WF_SIGNAL_DROPPED);
            ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_RUNNING);
            ck_assert_str_eq(place_of_only_token(&agg), "late");
            ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
            ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 0);
            ck_assert_uint_eq(agg.n_tasks, 1);
            ck_assert(!fire(&r.timer)); /* once only */
            timer_won++;
        }
    }
    printf("signal-vs-timeout race: the signal won %d times, the timeout %d times\n", signal_won,
           timer_won);
    ck_assert_int_eq(signal_won + timer_won, 1000);
}
END_TEST

/* The signal arrives first; the timeout's claimed row comes due later. It
 * was withdrawn with the subscription's token: it never fires, and a
 * signal sent after the step was left is dropped, not consumed twice. */
WF_TEST(test_signal_first_then_the_stale_timeout_is_gone)
{
    deploy(signal_race_net("sigfirst"));
    wf_instance_row in = start("sigfirst", "{}");
    size_t n;
    wf_timer_row *rows = claim(wf_now_us() + HOUR_US, &n);
    ck_assert_uint_eq(n, 1);
    wf_timer_row row = rows[0];
    wf_runtime_send_signal_out out;
    ck_assert_int_eq(send_paid(arena, in.id, &out), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ck_assert_uint_eq(out.n_instance_ids, 1);
    ck_assert_str_eq(out.instance_ids[0], in.id);
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1);
    char before[4096];
    snprintf(before, sizeof before, "%s", ev);

    ck_assert(!fire(&row));
    ck_assert_uint_eq((claim(wf_now_us() + 2 * HOUR_US, &n), n), 0);
    ck_assert_int_eq(send_paid(arena, in.id, &out), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_DROPPED);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(place_of_only_token(&agg), "end");
    ck_assert_uint_eq(agg.n_tasks, 0);
    /* Nothing changed but the dropped delivery's own event. */
    ck_assert_str_eq(kit_event_types(in.id, 0),
                     wf_arena_printf(arena, "%s SIGNAL_DROPPED", before));
    ck_assert_int_eq(count_of(before, "TIMER_FIRED"), 0);
}
END_TEST

/* RetryInstance of a refused TIME firing re-fires the timeout's work item
 * on its token with the variables as they are then. */
WF_TEST(test_retry_refires_a_refused_timer)
{
    deploy(race_net("refire", 1, NULL, ".go == true"));
    wf_instance_row in = start("refire", "{\"go\":false}");
    size_t n;
    wf_timer_row *rows = claim(wf_now_us() + 1000, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(fire(&rows[0]));
    ck_assert_int_eq(kit_aggregate(in.id).instances[0].status, WF_INSTANCE_FAILED);

    /* Still refused: the call fails, the incident stays open. */
    wf_runtime_ctx ops = {.ref = as("ops"), .wake = count_wake};
    wf_instance_row out;
    wf_error err;
    ck_assert_int_eq(wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err), WF_E_NO_ARC_MATCHED);
    ck_assert_ptr_nonnull(strstr(err.msg, "timeout"));
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_FAILED);
    ck_assert_ptr_nonnull(agg.instances[0].last_error);
    ck_assert_int_eq(count_of(kit_event_types(in.id, 0), "INCIDENT_RESOLVED"), 0);

    /* Fixed variables: the retry fires the timeout, which ends the case and
     * withdraws the competing review. */
    ck_assert_int_eq(wf_runtime_set_variables(&ops, in.id, "{\"go\":true}", NULL, &out, &err),
                     WF_OK);
    wakes_events = 0;
    wf_code rc = wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err);
    ck_assert_msg(rc == WF_OK, "retry: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.status, WF_INSTANCE_COMPLETED);
    ck_assert_ptr_null(out.last_error);
    ck_assert_int_eq(wakes_events, 1);
    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.tasks[0].status, WF_TASK_CANCELLED);
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_msg(strstr(ev, "INCIDENT_RESOLVED TRANSITION_FIRED") != NULL, "%s", ev);
    ck_assert_int_eq(count_of(ev, "INCIDENT_RESOLVED"), 1);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1);
    ck_assert_int_eq(wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err),
                     WF_E_INSTANCE_NOT_RUNNING);
}
END_TEST

/* ---- incidents ------------------------------------------------------------------------------ */

/* The open incidents of key (asserting OK). */
static wf_runtime_incident *
incidents_of(const char *key, const char *code, size_t *n)
{
    wf_ref_ctx c = as(NULL);
    wf_runtime_incident_query q = {.definition_key = key, .code = code};
    wf_runtime_incident *v = NULL;
    char *next = NULL;
    wf_error err;
    wf_code rc = wf_runtime_list_incidents(&c, &q, &v, n, &next, &err);
    ck_assert_msg(rc == WF_OK, "list: %s", err.msg);
    ck_assert_ptr_null(next);
    return v;
}

/* A refused TIME firing opens an incident with the refusal's code, the
 * transition and the instance's retries; a retry refused again keeps it as
 * it was, one that succeeds resolves it (code cleared, retries counted). */
WF_TEST(test_incident_of_a_refused_timer)
{
    deploy(race_net("inc-timer", 1, NULL, ".go == true"));
    deploy(race_net("inc-quiet", 1, NULL, NULL));
    wf_instance_row in = start("inc-timer", "{\"go\":false}");
    start("inc-quiet", NULL);
    size_t n;
    ck_assert_ptr_nonnull(incidents_of("inc-timer", NULL, &n));
    ck_assert_uint_eq(n, 0);
    int64_t before = wf_now_us();
    wf_timer_row *rows = claim(wf_now_us() + 1000, &n);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++)
        fire(&rows[i]);

    wf_runtime_incident *v = incidents_of("inc-timer", NULL, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].instance_id, in.id);
    ck_assert_str_eq(v[0].root_id, in.id);
    ck_assert_str_eq(v[0].definition_key, "inc-timer");
    ck_assert_int_eq(v[0].definition_version, 1);
    ck_assert_str_eq(v[0].transition_id, "timeout");
    ck_assert_str_eq(v[0].code, "NO_ARC_MATCHED");
    ck_assert_ptr_nonnull(strstr(v[0].message, "timeout"));
    ck_assert_int_eq(v[0].attempts, 0);
    ck_assert(v[0].since >= before);
    int64_t since = v[0].since;
    /* The quiet one completed: no incident; by code, only its own. */
    incidents_of("inc-quiet", NULL, &n);
    ck_assert_uint_eq(n, 0);
    incidents_of("inc-timer", "JOB_FAILED", &n);
    ck_assert_uint_eq(n, 0);
    incidents_of(NULL, "NO_ARC_MATCHED", &n);
    ck_assert_uint_eq(n, 1);

    /* Refused again: rolled back, the incident as it was. */
    wf_runtime_ctx ops = {.ref = as("ops")};
    wf_instance_row out;
    wf_error err;
    ck_assert_int_eq(wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err), WF_E_NO_ARC_MATCHED);
    v = incidents_of("inc-timer", NULL, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(v[0].since == since);
    ck_assert_int_eq(v[0].attempts, 0);

    /* Fixed: resolved, off the list, the row's code cleared. */
    ck_assert_int_eq(wf_runtime_set_variables(&ops, in.id, "{\"go\":true}", NULL, &out, &err),
                     WF_OK);
    ck_assert_int_eq(wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err), WF_OK);
    incidents_of("inc-timer", NULL, &n);
    ck_assert_uint_eq(n, 0);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_ptr_null(agg.instances[0].incident_code);
    ck_assert(agg.instances[0].incident_at == 0);
    ck_assert_int_eq(agg.instances[0].retries, 1);
    ck_assert_str_eq(agg.instances[0].incident_transition_id, "timeout");
}
END_TEST

WF_TEST(test_incident_codes_and_refusals)
{
    static const char *const known[] = {
        "JOB_FAILED",         "COMPENSATION_FAILED", "STEP_TIMED_OUT",   "DEADLOCKED",
        "NO_ARC_MATCHED",     "EXPRESSION_LIMIT",    "INVALID_ARGUMENT", "INVALID_JSON",
        "DEFINITION_INVALID", "TOO_LARGE",           "UNKNOWN"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        ck_assert_msg(wf_runtime_incident_code_known(known[i]), "%s", known[i]);
    ck_assert(!wf_runtime_incident_code_known("job_failed"));
    ck_assert(!wf_runtime_incident_code_known("INSTANCE_FAILED"));

    wf_ref_ctx c = as(NULL);
    wf_runtime_incident *v;
    size_t n;
    char *next;
    wf_error err;
    wf_runtime_incident_query q = {.code = "NOPE"};
    ck_assert_int_eq(wf_runtime_list_incidents(&c, &q, &v, &n, &next, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "code"));
    q = (wf_runtime_incident_query){.page_size = -1};
    ck_assert_int_eq(wf_runtime_list_incidents(&c, &q, &v, &n, &next, &err), WF_E_INVALID_ARGUMENT);
    q = (wf_runtime_incident_query){.cursor = "not a cursor"};
    ck_assert_int_eq(wf_runtime_list_incidents(&c, &q, &v, &n, &next, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "page_token"));
}
END_TEST

/* ListInstances refuses malformed variable filters and inverted ranges
 * before it reads anything. */
WF_TEST(test_list_instances_filter_refusals)
{
    wf_ref_ctx c = as(NULL);
    wf_instance_row *rows;
    size_t n;
    char *next;
    wf_error err;
    struct {
        const char *path, *value;
        wf_code code;
        const char *field;
    } bad[] = {
        {"", "1", WF_E_INVALID_ARGUMENT, "variables[0].path"},
        {"a..b", "1", WF_E_INVALID_ARGUMENT, "variables[0].path"},
        {"a.b.c.d.e.f.g.h.i", "1", WF_E_INVALID_ARGUMENT, "variables[0].path"},
        {"a", "DE", WF_E_INVALID_JSON, "variables[0].value_json"},
        {"a", "{}", WF_E_INVALID_JSON, "variables[0].value_json"},
        {"a", "[1]", WF_E_INVALID_JSON, "variables[0].value_json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_ref_var_filter f = {bad[i].path, bad[i].value};
        wf_ref_instance_query q = {.started_by = "*", .vars = &f, .n_vars = 1};
        ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err), bad[i].code);
        ck_assert_msg(strncmp(err.msg, bad[i].field, strlen(bad[i].field)) == 0, "%s", err.msg);
    }
    wf_ref_var_filter many[9];
    for (int i = 0; i < 9; i++)
        many[i] = (wf_ref_var_filter){"a", "1"};
    wf_ref_instance_query q = {.started_by = "*", .vars = many, .n_vars = 9};
    ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    q.n_vars = 8;
    ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err), WF_OK);
    q = (wf_ref_instance_query){.started_by = "*", .created = {true, true, 10, 10}};
    ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "created_before"));
    q = (wf_ref_instance_query){.started_by = "*", .ended = {true, true, 10, 5}};
    ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "ended_before"));
}
END_TEST

/* ---- a buffered signal refused when its wait is enabled -------------------------------- */

/* [start -> review (USER alice) ->] wait -> paid (MSG "payment" of the
 * order aggregate) -> approved (guard .ok == true) -> approve (USER, ids
 * from .approver) -> end. Without the review the wait is enabled by
 * StartInstance itself. */
static wf_net *
payment_net(const char *key, bool review)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 4, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 3, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 6, sizeof *a);
    size_t np = 0, nt = 0, na = 0;
    if (review) {
        p[np++] = (wf_place){.id = "start", .kind = WF_PLACE_START};
        p[np++] = (wf_place){.id = "wait", .kind = WF_PLACE_NORMAL};
        t[nt] = (wf_transition){.id = "review", .trigger = WF_TRIGGER_USER};
        t[nt++].assignee =
            (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
        a[na++] = (wf_arc){.source = "start", .target = "review"};
        a[na++] = (wf_arc){.source = "review", .target = "wait"};
    } else {
        p[np++] = (wf_place){.id = "wait", .kind = WF_PLACE_START};
    }
    p[np++] = (wf_place){.id = "approved", .kind = WF_PLACE_NORMAL};
    p[np++] = (wf_place){.id = "end", .kind = WF_PLACE_END};
    t[nt++] = (wf_transition){.id = "paid",
                              .trigger = WF_TRIGGER_MSG,
                              .signal_name = "payment",
                              .correlation = WF_CORRELATION_AGGREGATE};
    t[nt] = (wf_transition){.id = "approve", .trigger = WF_TRIGGER_USER};
    t[nt++].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids_expression = ".approver"};
    a[na++] = (wf_arc){.source = "wait", .target = "paid"};
    a[na++] = (wf_arc){.source = "paid", .target = "approved", .guard = ".ok == true"};
    a[na++] = (wf_arc){.source = "approved", .target = "approve"};
    a[na++] = (wf_arc){.source = "approve", .target = "end"};
    *n = (wf_net){.key = key,
                  .places = p,
                  .n_places = np,
                  .transitions = t,
                  .n_transitions = nt,
                  .arcs = a,
                  .n_arcs = na};
    return n;
}

/* SendSignal "payment" to order aggregate_id, buffered for a minute. */
static void
buffer_payment(const char *aggregate_id)
{
    wf_runtime_ctx c = {.ref = as("shop")};
    wf_runtime_send_signal_in in = {.name = "payment",
                                    .aggregate_type = "order",
                                    .aggregate_id = aggregate_id,
                                    .has_aggregate = true,
                                    .payload_json = "{\"paidBy\":\"card\"}",
                                    .buffer_ttl_ms = 60000};
    wf_runtime_send_signal_out out;
    wf_error err;
    wf_code rc = wf_runtime_send_signal(&c, &in, NULL, &out, &err);
    ck_assert_msg(rc == WF_OK, "send: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_BUFFERED);
}

static wf_instance_row
start_order(const char *key, const char *aggregate_id, const char *vars)
{
    wf_ref_ctx c = as("boss");
    wf_start_spec spec = {.definition_key = key,
                          .variables_json = vars,
                          .aggregate_type = "order",
                          .aggregate_id = aggregate_id};
    wf_instance_row in;
    wf_error err;
    wf_code rc = wf_instances_start(&c, &spec, NULL, &in, &err);
    ck_assert_msg(rc == WF_OK, "start: %s %s", wf_code_reason(rc), err.msg);
    return in;
}

/* The incident left by the refused firing of paid: the instance FAILED
 * naming the transition, the signal spent on it (payload merged, log row
 * consumed by it for paid), the paid work item ENABLED on the token in
 * wait with no subscription left, and nothing of the refused step kept. */
static void
assert_paid_incident(const char *instance_id, const char *aggregate_id, const char *why,
                     int tasks_created)
{
    wf_aggregate agg = kit_aggregate(instance_id);
    const wf_instance_row *in = &agg.instances[0];
    ck_assert_int_eq(in->status, WF_INSTANCE_FAILED);
    ck_assert_ptr_nonnull(in->last_error);
    ck_assert_msg(strstr(in->last_error, "transition \"paid\"") != NULL, "%s", in->last_error);
    ck_assert_msg(strstr(in->last_error, why) != NULL, "%s", in->last_error);
    ck_assert_ptr_nonnull(strstr(in->variables_json, "\"paidBy\":\"card\""));
    ck_assert_uint_eq(agg.n_subscriptions, 0);
    ck_assert_uint_eq(agg.n_work_items, 1);
    ck_assert_str_eq(agg.work_items[0].transition_id, "paid");
    ck_assert_int_eq(agg.work_items[0].state, WF_WORK_ITEM_ENABLED);
    ck_assert_str_eq(place_of_only_token(&agg), "wait");
    for (size_t i = 0; i < agg.n_tasks; i++)
        ck_assert_str_ne(agg.tasks[i].transition_id, "approve");

    wf_runtime_ctx c = {.ref = as("ops")};
    wf_runtime_list_signals_in q = {
        .aggregate_type = "order", .aggregate_id = aggregate_id, .has_aggregate = true};
    wf_signal_row *rows;
    size_t n;
    char *next;
    wf_error err;
    ck_assert_int_eq(wf_runtime_list_signals(&c, &q, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert(!rows[0].buffered);
    ck_assert(rows[0].consumed_at > 0);
    ck_assert_str_eq(rows[0].consumed_by_instance, instance_id);
    ck_assert_str_eq(rows[0].transition_id, "paid");

    const char *ev = kit_event_types(instance_id, 0);
    ck_assert_msg(strstr(ev, "SIGNAL_CONSUMED INSTANCE_FAILED") != NULL, "%s", ev);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "TASK_CREATED"), tasks_created);
}

/* RetryInstance once the variables are fixed: paid fires with them and
 * approve waits for bob. */
static void
fix_and_retry(const char *instance_id, const char *vars)
{
    wf_runtime_ctx ops = {.ref = as("ops")};
    wf_instance_row out;
    wf_error err;
    ck_assert_int_eq(wf_runtime_set_variables(&ops, instance_id, vars, NULL, &out, &err), WF_OK);
    wf_code rc = wf_runtime_retry_instance(&ops, instance_id, NULL, &out, &err);
    ck_assert_msg(rc == WF_OK, "retry: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.status, WF_INSTANCE_RUNNING);
    wf_aggregate agg = kit_aggregate(instance_id);
    ck_assert_str_eq(place_of_only_token(&agg), "approved");
    const wf_task_row *approve = NULL;
    for (size_t i = 0; i < agg.n_tasks; i++)
        if (strcmp(agg.tasks[i].transition_id, "approve") == 0)
            approve = &agg.tasks[i];
    ck_assert_ptr_nonnull(approve);
    ck_assert_str_eq(approve->assignee_id, "bob");
    const char *ev = kit_event_types(instance_id, 0);
    ck_assert_msg(strstr(ev, "INCIDENT_RESOLVED TRANSITION_FIRED") != NULL, "%s", ev);
}

/* A buffered signal consumed when CompleteTask enables its wait, whose
 * firing is refused (no arc matches; then, with the guard passing, the
 * next step's assignee expression gives nobody): the completion succeeds
 * and the refusal is an incident of the instance. */
WF_TEST(test_buffered_signal_refused_on_enabling_is_an_incident)
{
    deploy(payment_net("pay", true));
    const struct {
        const char *order, *vars, *why;
    } cases[] = {
        {"A-1", "{\"ok\":false}", "no output arc"},
        {"A-2", "{\"ok\":true}", "approve"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        buffer_payment(cases[k].order);
        wf_instance_row in = start_order("pay", cases[k].order, cases[k].vars);
        wf_aggregate agg = kit_aggregate(in.id);
        ck_assert_uint_eq(agg.n_tasks, 1);
        wf_ref_ctx alice = as("alice");
        wf_ref_completion done;
        wf_error err;
        wf_code rc = wf_instances_complete_task(&alice, agg.tasks[0].id, "{\"reviewed\":true}",
                                                NULL, &done, &err);
        ck_assert_msg(rc == WF_OK, "complete: %s %s", wf_code_reason(rc), err.msg);
        agg = kit_aggregate(in.id);
        ck_assert_int_eq(agg.tasks[0].status, WF_TASK_DONE);
        ck_assert_ptr_nonnull(strstr(agg.instances[0].variables_json, "\"reviewed\":true"));
        ck_assert_int_eq(count_of(kit_event_types(in.id, 0), "TRANSITION_FIRED"), 1); /* review */
        /* One task created: the review's. */
        assert_paid_incident(in.id, cases[k].order, cases[k].why, 1);
        fix_and_retry(in.id, "{\"ok\":true,\"approver\":\"bob\"}");
    }
}
END_TEST

/* The same refusal when StartInstance itself enables the wait: the
 * instance is created, FAILED. */
WF_TEST(test_buffered_signal_refused_at_start_is_an_incident)
{
    deploy(payment_net("paystart", false));
    buffer_payment("B-1");
    wf_instance_row in = start_order("paystart", "B-1", "{\"ok\":false}");
    ck_assert_int_eq(in.status, WF_INSTANCE_FAILED);
    assert_paid_incident(in.id, "B-1", "no output arc", 0);
    ck_assert_int_eq(count_of(kit_event_types(in.id, 0), "INSTANCE_STARTED"), 1);
    fix_and_retry(in.id, "{\"ok\":true,\"approver\":\"bob\"}");
}
END_TEST

/* start -> review (USER alice) -> w1, w2; w1 -> paid (MSG "payment" of the
 * order aggregate) -> x (guard .ok == true); w2 -> shipped (MSG "shipped",
 * by instance) -> y; x, y -> join (silent AUTO) -> end. Completing the
 * review enables paid and then shipped in one step. */
static wf_net *
two_waits_net(const char *key)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 6, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 4, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 10, sizeof *a);
    p[0] = (wf_place){.id = "start", .kind = WF_PLACE_START};
    p[1] = (wf_place){.id = "w1", .kind = WF_PLACE_NORMAL};
    p[2] = (wf_place){.id = "w2", .kind = WF_PLACE_NORMAL};
    p[3] = (wf_place){.id = "x", .kind = WF_PLACE_NORMAL};
    p[4] = (wf_place){.id = "y", .kind = WF_PLACE_NORMAL};
    p[5] = (wf_place){.id = "end", .kind = WF_PLACE_END};
    t[0] = (wf_transition){.id = "review", .trigger = WF_TRIGGER_USER};
    t[0].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice_ids, .n_ids = 1};
    t[1] = (wf_transition){.id = "paid",
                           .trigger = WF_TRIGGER_MSG,
                           .signal_name = "payment",
                           .correlation = WF_CORRELATION_AGGREGATE};
    t[2] = (wf_transition){.id = "shipped", .trigger = WF_TRIGGER_MSG, .signal_name = "shipped"};
    t[3] = (wf_transition){.id = "join", .trigger = WF_TRIGGER_AUTO};
    a[0] = (wf_arc){.source = "start", .target = "review"};
    a[1] = (wf_arc){.source = "review", .target = "w1"};
    a[2] = (wf_arc){.source = "review", .target = "w2"};
    a[3] = (wf_arc){.source = "w1", .target = "paid"};
    a[4] = (wf_arc){.source = "paid", .target = "x", .guard = ".ok == true"};
    a[5] = (wf_arc){.source = "w2", .target = "shipped"};
    a[6] = (wf_arc){.source = "shipped", .target = "y"};
    a[7] = (wf_arc){.source = "x", .target = "join"};
    a[8] = (wf_arc){.source = "y", .target = "join"};
    a[9] = (wf_arc){.source = "join", .target = "end"};
    *n = (wf_net){.key = key,
                  .places = p,
                  .n_places = 6,
                  .transitions = t,
                  .n_transitions = 4,
                  .arcs = a,
                  .n_arcs = 10};
    return n;
}

/* The delivery-log row of "shipped", addressed to instance_id. */
static wf_signal_row
shipped_row(const char *instance_id)
{
    wf_runtime_ctx c = {.ref = as("ops")};
    wf_runtime_list_signals_in q = {.instance_id = instance_id, .name = "shipped"};
    wf_signal_row *rows;
    size_t n;
    char *next;
    wf_error err;
    ck_assert_int_eq(wf_runtime_list_signals(&c, &q, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    return rows[0];
}

/* Both waits consume a buffered signal when the review enables them; the
 * refused firing of paid fails the instance before shipped fires, so that
 * signal goes back to the buffer. The retry fires paid, then shipped
 * consumes its signal in the same unit of work. */
WF_TEST(test_retry_consumes_a_signal_put_back_by_a_refused_firing)
{
    deploy(two_waits_net("twowaits"));
    buffer_payment("C-1");
    wf_instance_row in = start_order("twowaits", "C-1", "{\"ok\":false}");
    wf_runtime_ctx shop = {.ref = as("shop")};
    wf_runtime_send_signal_in sh = {.name = "shipped",
                                    .instance_id = in.id,
                                    .payload_json = "{\"carrier\":\"ups\"}",
                                    .buffer_ttl_ms = 60000};
    wf_runtime_send_signal_out so;
    wf_error err;
    ck_assert_int_eq(wf_runtime_send_signal(&shop, &sh, NULL, &so, &err), WF_OK);
    ck_assert_int_eq(so.outcome, WF_SIGNAL_BUFFERED);
    wf_ref_ctx alice = as("alice");
    wf_ref_completion done;
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(wf_instances_complete_task(&alice, agg.tasks[0].id, NULL, NULL, &done, &err),
                     WF_OK);

    agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_FAILED);
    ck_assert_uint_eq(agg.n_subscriptions, 1);
    ck_assert_str_eq(agg.subscriptions[0].transition_id, "shipped");
    wf_signal_row s = shipped_row(in.id);
    ck_assert(s.buffered);
    ck_assert_int_eq(s.consumed_at, 0);

    wf_runtime_ctx ops = {.ref = as("ops")};
    wf_instance_row out;
    ck_assert_int_eq(wf_runtime_set_variables(&ops, in.id, "{\"ok\":true}", NULL, &out, &err),
                     WF_OK);
    wf_code rc = wf_runtime_retry_instance(&ops, in.id, NULL, &out, &err);
    ck_assert_msg(rc == WF_OK, "retry: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.status, WF_INSTANCE_COMPLETED);
    ck_assert_ptr_nonnull(strstr(out.variables_json, "\"carrier\":\"ups\""));
    s = shipped_row(in.id);
    ck_assert(!s.buffered);
    ck_assert(s.consumed_at > 0);
    ck_assert_str_eq(s.consumed_by_instance, in.id);
    ck_assert_str_eq(s.transition_id, "shipped");
    const char *ev = kit_event_types(in.id, 0);
    ck_assert_int_eq(count_of(ev, "SIGNAL_CONSUMED"), 2);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("net_runtime", "memory", setup, kit_teardown, 30));
}
