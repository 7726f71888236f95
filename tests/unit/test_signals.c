/*
 * Unit tests of the signal rules (server/engine/runtime/signals.h) over the memory
 * store, without a server: a signal to an instance that waits fires its MSG
 * transition and merges the payload; one nobody waits for is buffered
 * (buffer_ttl) or dropped; a buffered signal is consumed when an instance
 * of its aggregate begins to wait; a signal_id seen before is DUPLICATE; an
 * ended instance drops signals and refuses SetVariables; bad requests fail
 * with their reasons and change nothing.
 */
#include <check.h>
#include <string.h>

#include "defcache.h"
#include "engine_kit.h"
#include "expr.h"
#include "instances.h"
#include "net_runtime.h"
#include "referral.h"
#include "signals.h"
#include "store.h"
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

static wf_runtime_ctx
ctx(void)
{
    return kit_ctx("t");
}

/* SendSignal of name to the instance id (or, id NULL, to order agg). */
static wf_code
send(const char *name, const char *id, const char *agg, const char *payload, const char *signal_id,
     int64_t ttl_ms, wf_runtime_send_signal_out *out, wf_error *err)
{
    wf_runtime_ctx c = ctx();
    wf_runtime_send_signal_in in = {.name = name,
                                    .instance_id = id,
                                    .aggregate_type = agg != NULL ? "order" : NULL,
                                    .aggregate_id = agg,
                                    .has_aggregate = agg != NULL,
                                    .payload_json = payload,
                                    .signal_id = signal_id,
                                    .buffer_ttl_ms = ttl_ms};
    memset(out, 0, sizeof *out);
    wf_error_clear(err);
    return wf_runtime_send_signal(&c, &in, NULL, out, err);
}

static size_t
buffered_for(const wf_instance_row *in)
{
    wf_ref_ctx c = ctx().ref;
    wf_signal_row *rows;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_runtime_buffered_signals(&c, in, &rows, &n, &err), WF_OK);
    return n;
}

WF_TEST(test_signal_to_a_waiting_instance_fires_and_merges)
{
    kit_deploy_msg_net(ctx(), "pay", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "pay", NULL);
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(send("payment", in.id, NULL, "{\"amount\": 5}", NULL, 0, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ck_assert_uint_eq(out.n_instance_ids, 1);
    ck_assert_str_eq(out.instance_ids[0], in.id);
    wf_instance_row after = kit_instance(in.id);
    ck_assert_int_eq(after.status, WF_INSTANCE_COMPLETED);
    ck_assert_ptr_nonnull(strstr(after.variables_json, "\"amount\""));
}
END_TEST

WF_TEST(test_unawaited_signal_is_buffered_or_dropped)
{
    kit_deploy_msg_net(ctx(), "pay2", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "pay2", NULL);
    wf_runtime_send_signal_out out;
    wf_error err;
    /* A name the instance does not wait for: no ttl drops it ... */
    ck_assert_int_eq(send("refund", in.id, NULL, NULL, NULL, 0, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_DROPPED);
    ck_assert_uint_eq(buffered_for(&in), 0);
    /* ... a ttl keeps it, and GetInstance would show it. */
    ck_assert_int_eq(send("refund", in.id, NULL, NULL, NULL, 60000, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_BUFFERED);
    ck_assert_int_gt(out.expires_at, 0);
    ck_assert_uint_eq(buffered_for(&in), 1);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_RUNNING);
}
END_TEST

WF_TEST(test_buffered_aggregate_signal_is_consumed_when_an_instance_waits)
{
    kit_deploy_msg_net(ctx(), "agg", WF_CORRELATION_AGGREGATE);
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(send("payment", NULL, "A-1", "{\"paid\": true}", NULL, 60000, &out, &err),
                     WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_BUFFERED);
    /* The instance's MSG wait consumes it as it is enabled, at start. */
    wf_instance_row in = kit_start_order(ctx(), "agg", "A-1");
    wf_instance_row after = kit_instance(in.id);
    ck_assert_int_eq(after.status, WF_INSTANCE_COMPLETED);
    ck_assert_ptr_nonnull(strstr(after.variables_json, "\"paid\""));
    ck_assert_uint_eq(buffered_for(&after), 0);
}
END_TEST

WF_TEST(test_a_signal_id_seen_before_is_duplicate)
{
    kit_deploy_msg_net(ctx(), "dup", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "dup", NULL);
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(send("payment", in.id, NULL, NULL, "sig-1", 0, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ck_assert_int_eq(send("payment", in.id, NULL, NULL, "sig-1", 0, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_DUPLICATE);
}
END_TEST

WF_TEST(test_an_ended_instance_drops_signals_and_refuses_variables)
{
    kit_deploy_msg_net(ctx(), "end", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "end", NULL);
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(send("payment", in.id, NULL, NULL, NULL, 0, &out, &err), WF_OK);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_COMPLETED);
    ck_assert_int_eq(send("payment", in.id, NULL, NULL, NULL, 60000, &out, &err), WF_OK);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_DROPPED);
    wf_runtime_ctx c = ctx();
    wf_instance_row row;
    wf_error_clear(&err);
    ck_assert_int_eq(wf_runtime_set_variables(&c, in.id, "{\"a\": 1}", NULL, &row, &err),
                     WF_E_INSTANCE_NOT_RUNNING);
}
END_TEST

WF_TEST(test_bad_requests_fail_and_change_nothing)
{
    kit_deploy_msg_net(ctx(), "bad", WF_CORRELATION_INSTANCE);
    wf_instance_row in = kit_start_order(ctx(), "bad", NULL);
    wf_runtime_send_signal_out out;
    wf_error err;
    ck_assert_int_eq(send("", in.id, NULL, NULL, NULL, 0, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(send("payment", in.id, NULL, "[1]", NULL, 0, &out, &err), WF_E_INVALID_JSON);
    ck_assert_int_eq(send("payment", NULL, NULL, NULL, NULL, 0, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(
        send("payment", "01900000-0000-7000-8000-000000000000", NULL, NULL, NULL, 0, &out, &err),
        WF_E_INSTANCE_NOT_FOUND);
    ck_assert_int_eq(send("payment", in.id, NULL, NULL, NULL, -1, &out, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(kit_instance(in.id).status, WF_INSTANCE_RUNNING);
    wf_runtime_ctx c = ctx();
    wf_instance_row row;
    wf_error_clear(&err);
    ck_assert_int_eq(wf_runtime_set_variables(&c, in.id, "\"text\"", NULL, &row, &err),
                     WF_E_INVALID_JSON);
    ck_assert_int_eq(wf_runtime_set_variables(&c, in.id, "{\"v\": 2}", NULL, &row, &err), WF_OK);
    ck_assert_ptr_nonnull(strstr(kit_instance(in.id).variables_json, "\"v\""));
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("signals", "memory", kit_setup, kit_teardown, 30));
}
