/*
 * Unit tests of SuspendInstance and ResumeInstance over the memory store,
 * without a server: the status and the events, the store's activation and
 * timer claims skipping a suspended tree, a signal buffered then consumed
 * by the resume, a leased job's completion while suspended, task
 * operations and AssignTo refused with INSTANCE_SUSPENDED, and the
 * refusals of the two calls.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "engine_kit.h"
#include "expr.h"
#include "defcache.h"
#include "instances.h"
#include "net_runtime.h"
#include "referral.h"
#include "signals.h"
#include "store.h"
#include "test_support.h"
#include "wf_id.h"
#include "wf_time.h"

static wf_store *st;
static wf_arena *arena;
static int wakes_jobs, wakes_timers;

static void
setup(void)
{
    kit_setup();
    wakes_jobs = wakes_timers = 0;
}

static void
count_wake(void *arg, const char *topic)
{
    (void)arg;
    if (strcmp(topic, WF_RUNTIME_TOPIC_TIMERS) == 0)
        wakes_timers++;
    else if (strncmp(topic, WF_RUNTIME_TOPIC_JOBS_PREFIX, strlen(WF_RUNTIME_TOPIC_JOBS_PREFIX)) ==
             0)
        wakes_jobs++;
}

static wf_runtime_ctx
as(const char *actor)
{
    wf_runtime_ctx c = kit_ctx(actor);
    c.wake = count_wake;
    return c;
}

static wf_code
suspend(const char *id, const char *reason, wf_instance_row *out, wf_error *err)
{
    wf_runtime_ctx c = as("ops");
    return wf_runtime_suspend_instance(&c, id, reason, NULL, out, err);
}

static wf_code
resume(const char *id, wf_instance_row *out, wf_error *err)
{
    wf_runtime_ctx c = as("ops");
    return wf_runtime_resume_instance(&c, id, "done", NULL, out, err);
}

#define ck_code(rc, want, err)                                                                     \
    ck_assert_msg((rc) == (want), "%s, want %s: %s", wf_code_reason(rc), wf_code_reason(want),     \
                  (err).msg)

static wf_instance_row
job_root(const char *key, const char *type)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    *t = (wf_transition){.id = "work", .trigger = WF_TRIGGER_AUTO, .job_type = type};
    kit_deploy_line(as("dev"), key, t);
    return kit_start_order(as("boss"), key, NULL);
}

static size_t
activate(const char *type)
{
    wf_runtime_ctx c = as(NULL);
    wf_runtime_activation a = {.job_type = type, .worker = "w1", .max_jobs = 5, .lease_ms = 60000};
    wf_job_row *rows = NULL;
    size_t n = 0;
    wf_error err;
    wf_code rc = wf_runtime_activate_jobs(&c, &a, &rows, &n, &err);
    ck_code(rc, WF_OK, err);
    return n;
}

/* The last event of type in root's tree; NULL when none. */
static const wf_event_row *
last_event(const char *root, const char *type, size_t *count)
{
    wf_store_ctx sc = {"default", 0, arena};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(st, &sc, 0, &f, 1000, &ev, &n, &err), WF_OK);
    const wf_event_row *last = NULL;
    *count = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].type, type) == 0) {
            last = &ev[i];
            (*count)++;
        }
    return last;
}

WF_TEST(test_suspend_and_resume_set_the_status_and_write_the_events)
{
    wf_instance_row in = job_root("s-events", "charge"), out;
    wf_error err;
    ck_code(suspend(in.id, "audit", &out, &err), WF_OK, err);
    ck_assert_int_eq(out.status, WF_INSTANCE_SUSPENDED);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_SUSPENDED);
    size_t n;
    const wf_event_row *e = last_event(in.id, "INSTANCE_SUSPENDED", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(e->actor, "ops");
    ck_assert_str_eq(e->data_json, "{\"reason\":\"audit\"}");

    /* Again: unchanged, no second event. */
    ck_code(suspend(in.id, "audit", &out, &err), WF_OK, err);
    ck_assert_int_eq(out.status, WF_INSTANCE_SUSPENDED);
    last_event(in.id, "INSTANCE_SUSPENDED", &n);
    ck_assert_uint_eq(n, 1);

    ck_code(resume(in.id, &out, &err), WF_OK, err);
    ck_assert_int_eq(out.status, WF_INSTANCE_RUNNING);
    e = last_event(in.id, "INSTANCE_RESUMED", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(e->data_json, "{\"reason\":\"done\"}");
    ck_assert_int_ge(wakes_jobs, 1);
    ck_assert_int_ge(wakes_timers, 1);
    ck_code(resume(in.id, &out, &err), WF_OK, err); /* not suspended: unchanged */
    last_event(in.id, "INSTANCE_RESUMED", &n);
    ck_assert_uint_eq(n, 1);
}
END_TEST

WF_TEST(test_no_job_of_a_suspended_tree_is_activated)
{
    wf_instance_row in = job_root("s-jobs", "pack"), out;
    wf_error err;
    ck_code(suspend(in.id, NULL, &out, &err), WF_OK, err);
    ck_assert_uint_eq(activate("pack"), 0);
    ck_code(resume(in.id, &out, &err), WF_OK, err);
    ck_assert_uint_eq(activate("pack"), 1);
}
END_TEST

/* A lease taken before the suspension completes, the token moves to the
 * end: the instance completes even while suspended. */
WF_TEST(test_a_leased_job_completes_while_suspended)
{
    wf_instance_row in = job_root("s-leased", "ship"), out;
    wf_runtime_ctx c = as(NULL);
    wf_runtime_activation a = {
        .job_type = "ship", .worker = "w1", .max_jobs = 1, .lease_ms = 60000};
    wf_job_row *rows = NULL;
    size_t n = 0;
    wf_error err;
    ck_code(wf_runtime_activate_jobs(&c, &a, &rows, &n, &err), WF_OK, err);
    ck_assert_uint_eq(n, 1);
    ck_code(suspend(in.id, NULL, &out, &err), WF_OK, err);
    ck_code(wf_runtime_complete_job(&c, rows[0].key, "{\"ok\":1}", NULL, &err), WF_OK, err);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_COMPLETED);
    /* An ended instance is refused both ways. */
    ck_code(suspend(in.id, NULL, &out, &err), WF_E_INSTANCE_NOT_RUNNING, err);
    ck_code(resume(in.id, &out, &err), WF_E_INSTANCE_NOT_RUNNING, err);
}
END_TEST

WF_TEST(test_due_timers_of_a_suspended_tree_are_not_claimed)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    *t = (wf_transition){.id = "wait", .trigger = WF_TRIGGER_TIME, .delay_ms = 1};
    kit_deploy_line(as("dev"), "s-timer", t);
    wf_instance_row in = kit_start_order(as("boss"), "s-timer", NULL), out;
    wf_error err;
    ck_code(suspend(in.id, NULL, &out, &err), WF_OK, err);
    wf_store_ctx sc = {"default", 0, arena};
    wf_timer_row *rows = NULL;
    size_t n = 0;
    int64_t later = wf_now_us() + 10 * 1000 * 1000;
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sc, later, 10, 1000, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_code(resume(in.id, &out, &err), WF_OK, err);
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sc, later, 10, 1000, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    wf_runtime_host rt = {.store = st};
    bool fired = false;
    ck_code(wf_runtime_fire_timer(&rt, &rows[0], wf_mono_ms() + 5000, &fired, &err), WF_OK, err);
    ck_assert(fired);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_COMPLETED);
}
END_TEST

WF_TEST(test_a_signal_is_buffered_while_suspended_and_consumed_by_the_resume)
{
    kit_deploy_msg_net(as("dev"), "s-msg", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(as("boss"), "s-msg", NULL), out;
    wf_error err;
    ck_code(suspend(in.id, NULL, &out, &err), WF_OK, err);
    wf_runtime_ctx c = as("shop");
    wf_runtime_send_signal_in s = {.name = "payment", .instance_id = in.id, .buffer_ttl_ms = 60000};
    wf_runtime_send_signal_out so;
    ck_code(wf_runtime_send_signal(&c, &s, NULL, &so, &err), WF_OK, err);
    ck_assert_int_eq(so.outcome, WF_SIGNAL_BUFFERED);
    s.buffer_ttl_ms = 0;
    ck_code(wf_runtime_send_signal(&c, &s, NULL, &so, &err), WF_OK, err);
    ck_assert_int_eq(so.outcome, WF_SIGNAL_DROPPED);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_SUSPENDED);
    ck_code(resume(in.id, &out, &err), WF_OK, err);
    ck_assert_int_eq(out.status, WF_INSTANCE_COMPLETED);
    size_t n;
    last_event(in.id, "SIGNAL_CONSUMED", &n);
    ck_assert_uint_eq(n, 1);
}
END_TEST

WF_TEST(test_task_operations_and_assign_are_refused_in_a_suspended_tree)
{
    wf_runtime_ctx boss = as("boss");
    wf_start_spec spec = {.definition_key = "s-adhoc"};
    wf_instance_row root = kit_start(&boss.ref, &spec, NULL), out;
    static const char *const ann[] = {"ann"};
    wf_assign_spec a = {.parent_id = root.id,
                        .title = "Review",
                        .kind = WF_REF_ASSIGNEE_USER,
                        .ids = ann,
                        .n_ids = 1};
    wf_ref_assignment asg;
    wf_error err;
    ck_code(wf_referral_assign(&boss.ref, &a, NULL, &asg, &err), WF_OK, err);
    ck_code(suspend(asg.instance.id, NULL, &out, &err), WF_E_INSTANCE_NOT_ROOT, err);
    ck_assert_ptr_nonnull(strstr(err.msg, root.id));
    ck_code(resume(asg.instance.id, &out, &err), WF_E_INSTANCE_NOT_ROOT, err);
    ck_code(suspend(root.id, NULL, &out, &err), WF_OK, err);

    wf_runtime_ctx annc = as("ann");
    wf_task_row task;
    ck_code(wf_referral_claim(&annc.ref, asg.tasks[0].id, NULL, &task, &err),
            WF_E_INSTANCE_SUSPENDED, err);
    ck_assert_ptr_nonnull(strstr(err.msg, root.id));
    wf_ref_assignment again;
    ck_code(wf_referral_assign(&boss.ref, &a, NULL, &again, &err), WF_E_INSTANCE_SUSPENDED, err);
    ck_code(resume(root.id, &out, &err), WF_OK, err);
    ck_code(wf_referral_claim(&annc.ref, asg.tasks[0].id, NULL, &task, &err), WF_OK, err);
}
END_TEST

WF_TEST(test_refusals_of_suspend)
{
    wf_instance_row out;
    wf_error err;
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    ck_code(suspend(id, NULL, &out, &err), WF_E_INSTANCE_NOT_FOUND, err);
    ck_code(resume(id, &out, &err), WF_E_INSTANCE_NOT_FOUND, err);
    ck_code(suspend("", NULL, &out, &err), WF_E_INVALID_ARGUMENT, err);
    wf_instance_row in = job_root("s-refuse", "x");
    char big[1100];
    memset(big, 'r', 1025);
    big[1025] = '\0';
    ck_code(suspend(in.id, big, &out, &err), WF_E_INVALID_ARGUMENT, err);
    /* Another tenant's id is unknown. */
    wf_runtime_ctx other = as("ops");
    other.ref.tenant = "elsewhere";
    ck_code(wf_runtime_suspend_instance(&other, in.id, NULL, NULL, &out, &err),
            WF_E_INSTANCE_NOT_FOUND, err);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_RUNNING);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("suspend", "suspend", setup, kit_teardown, 0));
}
