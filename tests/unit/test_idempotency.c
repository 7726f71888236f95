/*
 * Unit tests of request records over the memory store, without a server:
 * the record of a mutating call commits in the transaction of its effect.
 * A store whose request-record writes fail stands for a crash between the
 * effect and its record: the effect must not stay without its record
 * (else a retry with the same request id would lease or deliver again).
 * Covered: ActivateJobs, SendSignal to an instance, to an aggregate that
 * buffers it, and to an aggregate fired on two roots (one unit of work
 * each), whose record follows every root fired.
 */
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
#include "store_int.h"
#include "test_support.h"
#include "uow.h"

static wf_store *st;
static wf_arena *arena;

/* ---- a store whose request records fail ------------------------------------------------ */

static const wf_store_ops *real_ops;
static wf_store_ops faulty_ops;
static int pass_records; /* the next n record writes succeed, then */
static int fail_records; /* the next n fail; -1: all */
static int records_written;

static bool
record_fails(void)
{
    if (pass_records > 0) {
        pass_records--;
        return false;
    }
    if (fail_records == 0)
        return false;
    if (fail_records > 0)
        fail_records--;
    return true;
}

static wf_code
faulty_put(wf_tx *tx, const wf_idempotency_row *in, wf_error *err)
{
    if (record_fails())
        return wf_error_set(err, WF_E_STORE_UNAVAILABLE, "lost before the record");
    records_written++;
    return real_ops->idem_put(tx, in, err);
}

static wf_code
faulty_amend(wf_tx *tx, const wf_idempotency_row *in, wf_error *err)
{
    if (record_fails())
        return wf_error_set(err, WF_E_STORE_UNAVAILABLE, "lost before the record");
    records_written++;
    return real_ops->idem_amend(tx, in, err);
}

static void
setup(void)
{
    kit_setup();
    real_ops = st->ops;
    faulty_ops = *real_ops;
    faulty_ops.idem_put = faulty_put;
    faulty_ops.idem_amend = faulty_amend;
    faulty_ops.commit_recorded = NULL; /* the two calls, so the put can fail */
    st->ops = &faulty_ops;
    pass_records = fail_records = 0;
    records_written = 0;
}

static void
teardown(void)
{
    st->ops = real_ops;
    kit_teardown();
}

static wf_runtime_ctx
ctx(void)
{
    return kit_ctx("t");
}

/* ---- encoders: the response as text ----------------------------------------------------- */

static wf_code
encode_text(const char *text, wf_arena *a, unsigned char **bytes, size_t *len, wf_error *err)
{
    size_t n = strlen(text);
    *bytes = wf_arena_alloc(a, n + 1);
    if (*bytes == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "out of memory");
    memcpy(*bytes, text, n + 1);
    *len = n;
    return WF_OK;
}

/* Keys of the jobs leased, comma-separated. */
static wf_code
encode_jobs(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len,
            wf_error *err)
{
    (void)arg;
    const wf_runtime_activated *r = result;
    char buf[1024] = "";
    for (size_t i = 0; i < r->n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", r->rows[i].key);
    return encode_text(buf, a, bytes, len, err);
}

/* "outcome:instance,instance". */
static wf_code
encode_send(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len,
            wf_error *err)
{
    (void)arg;
    const wf_runtime_send_signal_out *o = result;
    char buf[1024];
    snprintf(buf, sizeof buf, "%d:", (int)o->outcome);
    for (size_t i = 0; i < o->n_instance_ids; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "",
                 o->instance_ids[i]);
    return encode_text(buf, a, bytes, len, err);
}

static wf_uow_idem
idem(const char *method, const char *request_id, wf_uow_encode_fn encode)
{
    return (wf_uow_idem){
        .method = method, .request_id = request_id, .request_hash = "h", .encode = encode};
}

static const char *
response_text(const wf_uow_idem *i)
{
    return wf_arena_strndup(arena, (const char *)i->response, i->response_len);
}

/* ---- nets ------------------------------------------------------------------------------ */

/* s -> step (AUTO job "ship") -> e */
static void
deploy_job_net(void)
{
    static wf_transition t[] = {{.id = "step", .trigger = WF_TRIGGER_AUTO, .job_type = "ship"}};
    kit_deploy_line(ctx(), "jobs", t);
}

static size_t
jobs_in_state(const char *root, wf_job_state state)
{
    wf_store_ctx sc = {"default", 0, arena};
    wf_aggregate agg;
    wf_error err;
    ck_assert_int_eq(wf_uow_read_aggregate(st, &sc, root, &agg, &err), WF_OK);
    size_t k = 0;
    for (size_t i = 0; i < agg.n_jobs; i++)
        k += agg.jobs[i].state == state;
    return k;
}

/* ---- tests ----------------------------------------------------------------------------- */

WF_TEST(test_activation_lost_with_its_record_leases_nothing)
{
    deploy_job_net();
    wf_instance_row in = kit_start_order(ctx(), "jobs", NULL);
    wf_runtime_ctx c = ctx();
    wf_runtime_activation a = {.job_type = "ship", .worker = "w", .max_jobs = 1, .lease_ms = 60000};
    wf_runtime_activated got;
    wf_error err;

    /* The record cannot be written: the lease must go with it. */
    fail_records = -1;
    wf_uow_idem i1 = idem("ActivateJobs", "act-1", encode_jobs);
    ck_assert_int_ne(wf_runtime_activate_recorded(&c, &a, &i1, true, &got, &err), WF_OK);
    ck_assert_uint_eq(jobs_in_state(in.id, WF_JOB_ACTIVATABLE), 1);
    ck_assert_uint_eq(jobs_in_state(in.id, WF_JOB_ACTIVATED), 0);

    /* The retry leases the job; a second retry gets the first answer. */
    fail_records = 0;
    wf_uow_idem i2 = idem("ActivateJobs", "act-1", encode_jobs);
    ck_assert_int_eq(wf_runtime_activate_recorded(&c, &a, &i2, true, &got, &err), WF_OK);
    ck_assert(!i2.replayed);
    ck_assert_uint_eq(got.n, 1);
    const char *key = wf_arena_strdup(arena, got.rows[0].key);
    wf_uow_idem i3 = idem("ActivateJobs", "act-1", encode_jobs);
    ck_assert_int_eq(wf_runtime_activate_recorded(&c, &a, &i3, true, &got, &err), WF_OK);
    ck_assert(i3.replayed);
    ck_assert_str_eq(response_text(&i3), key);
    ck_assert_uint_eq(jobs_in_state(in.id, WF_JOB_ACTIVATED), 1);

    /* An empty pass of a long poll records nothing; its last pass does. */
    wf_uow_idem i4 = idem("ActivateJobs", "act-2", encode_jobs);
    ck_assert_int_eq(wf_runtime_activate_recorded(&c, &a, &i4, false, &got, &err), WF_OK);
    ck_assert_uint_eq(got.n, 0);
    ck_assert_int_eq(records_written, 1);
    ck_assert_int_eq(wf_runtime_activate_recorded(&c, &a, &i4, true, &got, &err), WF_OK);
    ck_assert_int_eq(records_written, 2);
}
END_TEST

WF_TEST(test_signal_lost_with_its_record_delivers_nothing)
{
    kit_deploy_msg_net(ctx(), "pay", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "pay", NULL);
    wf_runtime_ctx c = ctx();
    wf_runtime_send_signal_in s = {.name = "payment", .instance_id = in.id};
    wf_runtime_send_signal_out out;
    wf_error err;

    fail_records = -1;
    wf_uow_idem i1 = idem("SendSignal", "sig-1", encode_send);
    ck_assert_int_ne(wf_runtime_send_signal(&c, &s, &i1, &out, &err), WF_OK);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_RUNNING);

    fail_records = 0;
    wf_uow_idem i2 = idem("SendSignal", "sig-1", encode_send);
    ck_assert_int_eq(wf_runtime_send_signal(&c, &s, &i2, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_COMPLETED);
    wf_uow_idem i3 = idem("SendSignal", "sig-1", encode_send);
    ck_assert_int_eq(wf_runtime_send_signal(&c, &s, &i3, &out, &err), WF_OK);
    ck_assert(i3.replayed);
    char want[256];
    snprintf(want, sizeof want, "%d:%s", (int)WF_SIGNAL_CORRELATED, in.id);
    ck_assert_str_eq(response_text(&i3), want);
    ck_assert_int_eq(records_written, 1);
}
END_TEST

WF_TEST(test_buffered_signal_lost_with_its_record_is_not_buffered)
{
    wf_runtime_ctx c = ctx();
    wf_runtime_send_signal_in s = {.name = "payment",
                                   .aggregate_type = "order",
                                   .aggregate_id = "B-1",
                                   .has_aggregate = true,
                                   .buffer_ttl_ms = 60000};
    wf_runtime_send_signal_out out;
    wf_error err;

    fail_records = -1;
    wf_uow_idem i1 = idem("SendSignal", "sig-b", encode_send);
    ck_assert_int_ne(wf_runtime_send_signal(&c, &s, &i1, &out, &err), WF_OK);
    wf_store_ctx sc = {"default", 0, arena};
    wf_signal_filter f = {.aggregate_type = "order", .aggregate_id = "B-1"};
    wf_signal_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_signals(st, &sc, &f, 10, NULL, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 0);

    fail_records = 0;
    wf_uow_idem i2 = idem("SendSignal", "sig-b", encode_send);
    ck_assert_int_eq(wf_runtime_send_signal(&c, &s, &i2, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_BUFFERED);
    ck_assert_int_eq(wf_store_list_signals(st, &sc, &f, 10, NULL, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
}
END_TEST

WF_TEST(test_aggregate_signal_records_once)
{
    kit_deploy_msg_net(ctx(), "agg", WF_CORRELATION_AGGREGATE);
    wf_instance_row a = kit_start_order(ctx(), "agg", "A-1");
    wf_instance_row b = kit_start_order(ctx(), "agg", "A-1");
    wf_runtime_ctx c = ctx();
    wf_runtime_send_signal_in s = {
        .name = "payment", .aggregate_type = "order", .aggregate_id = "A-1", .has_aggregate = true};
    wf_runtime_send_signal_out out;
    wf_error err;

    /* The fan-out's record cannot be written: nothing changed, nobody is
     * fired, nothing is logged. */
    fail_records = 1;
    wf_uow_idem i1 = idem("SendSignal", "sig-a", encode_send);
    ck_assert_int_ne(wf_runtime_send_signal(&c, &s, &i1, &out, &err), WF_OK);
    ck_assert_int_eq(kit_instance(a.id).status, WF_INSTANCE_RUNNING);
    ck_assert_int_eq(kit_instance(b.id).status, WF_INSTANCE_RUNNING);

    /* A retry runs again: one record with the target set (both roots),
     * written with the delivery rows; the deliveries follow it. */
    records_written = 0;
    wf_uow_idem i2 = idem("SendSignal", "sig-a", encode_send);
    ck_assert_int_eq(wf_runtime_send_signal(&c, &s, &i2, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ck_assert_int_eq(out.instance_count, 2);
    ck_assert_int_eq(records_written, 1);
    ck_assert_int_eq(kit_instance(a.id).status, WF_INSTANCE_COMPLETED);
    ck_assert_int_eq(kit_instance(b.id).status, WF_INSTANCE_COMPLETED);

    /* A replay answers the same, though the deliveries are done. */
    wf_uow_idem i3 = idem("SendSignal", "sig-a", encode_send);
    ck_assert_int_eq(wf_runtime_send_signal(&c, &s, &i3, &out, &err), WF_OK);
    ck_assert(i3.replayed);
    char want[256];
    snprintf(want, sizeof want, "%d:%s,%s", (int)WF_SIGNAL_CORRELATED, a.id, b.id);
    ck_assert_str_eq(response_text(&i3), want);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("idempotency", "records", setup, teardown, 30));
}
