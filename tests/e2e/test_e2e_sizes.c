/*
 * End-to-end tests of sizes, on both stores: no answer outgrows the send
 * limit and no instance becomes unreadable. The server runs with
 * WF_MAX_ANSWER_BYTES = 128 KiB (its send limit), WF_MAX_MESSAGE_BYTES and
 * WF_MAX_VARIABLES_BYTES = 64 KiB. Variables of 40-48 KiB then stand for
 * the 2-3 MiB ones of a default server (4 MiB answers); tests/python and
 * tests/grpc-node check those with clients of default settings.
 *
 * ActivateJobs leases no more jobs than its answer holds (the others stay
 * activatable), and refuses, without leasing it, a job that alone does
 * not fit; StreamActivatedJobs likewise. JOB_ACTIVATED keeps its payload.
 * SetVariables, AssignTo and CompleteJob refuse to grow a tree past the
 * bound (VARIABLES_TOO_LARGE) and change nothing; GetInstance of a tree
 * whose jobs and buffered signals repeat large variables leaves them out
 * with a flag; ListInstances and ListSignals pages stop by bytes.
 */
#include <jansson.h>
#include <string.h>

#include "net_kit.h"
#include "wf_arena.h"

#define VARS_BOUND 65536
#define SEND_LIMIT 131072

static void
setup_sizes(void)
{
    static const char *const env[] = {"WF_MAX_MESSAGE_BYTES=65536", "WF_MAX_ANSWER_BYTES=131072",
                                      "WF_MAX_VARIABLES_BYTES=65536", NULL};
    setup_with(env);
}

/* {"<name>":"xxx…"} of about bytes bytes (test-owned). */
static char *
blob(const char *name, size_t bytes)
{
    char *s = wf_arena_alloc(ta, bytes + 64);
    ck_assert_ptr_nonnull(s);
    int n = snprintf(s, bytes + 64, "{\"%s\":\"", name);
    memset(s + n, 'x', bytes);
    strcpy(s + n + bytes, "\"}");
    return s;
}

/* The data of the JOB_ACTIVATED events of root, read from the store
 * (test-owned), in order; returns how many. */
static size_t
activated_data(const char *root, const char **out, size_t cap)
{
    wf_store_ctx sc = {"default", 0, ta};
    const char *types[] = {"JOB_ACTIVATED"};
    wf_event_filter f = {.instance_id = root, .types = types, .n_types = 1};
    wf_event_row *ev;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 100, &ev, &n, &err), WF_OK);
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = ev[i].data_json;
    return n;
}

/* Four jobs of 40 KiB each: one answer holds two (less than 128 KiB), so
 * ActivateJobs with max_jobs = 4 leases two, and the next call the other
 * two. Before, it leased four, and the 160 KiB answer failed with the four
 * jobs leased until their lease ran out. */
WF_CASE_TEST("sizes", test_activate_leases_what_the_answer_holds)
{
    char *key = u("big-jobs"), *type = u("big");
    deploy(job_net(key, type, 0, 0));
    Workflow__V1__Instance *ins[4];
    for (int i = 0; i < 4; i++)
        ins[i] = start_boss(key, blob("doc", 40000));
    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *r = activate_c(as(NULL), type, 4, 0, 0, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_jobs, 2);
    ck_assert_str_eq(r->jobs[0]->instance_id, ins[0]->id);
    ck_assert_str_eq(r->jobs[1]->instance_id, ins[1]->id);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&r->base), SEND_LIMIT);
    Workflow__V1__ActivateJobsResponse *r2 = activate_c(as(NULL), type, 4, 0, 0, &st);
    ck_ok(st);
    ck_assert_uint_eq(r2->n_jobs, 2);
    ck_assert_str_eq(r2->jobs[0]->instance_id, ins[2]->id);
    ck_assert_uint_eq(activate(type, 4, 0, 0)->n_jobs, 0);

    /* JOB_ACTIVATED, now built by the engine, keeps its fields. */
    const char *data[2];
    ck_assert_uint_eq(activated_data(ins[0]->id, data, 2), 1);
    json_t *o = json_loads(data[0], 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(json_object_size(o), 4);
    ck_assert_str_eq(json_string_value(json_object_get(o, "jobId")), r->jobs[0]->id);
    ck_assert_str_eq(json_string_value(json_object_get(o, "jobKey")), r->jobs[0]->key);
    ck_assert_str_eq(json_string_value(json_object_get(o, "worker")), "w1");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "attempt")), 0);
    json_decref(o);
    ck_assert_int_eq(complete_job_c(as(NULL), r->jobs[0]->key, NULL, &st), GRPC_STATUS_OK);
}
END_TEST

/* A job that alone does not fit in an answer (its variables were written
 * before the bound, here straight into the store): ActivateJobs fails
 * with VARIABLES_TOO_LARGE naming it and leases nothing; once SetVariables
 * shrinks the instance, the job is activated. */
WF_CASE_TEST("sizes", test_a_job_too_large_alone_is_refused_not_leased)
{
    char *key = u("huge-job"), *type = u("huge");
    deploy(job_net(key, type, 0, 0));
    Workflow__V1__Instance *in = start_boss(key, "{\"doc\":1}");

    wf_store_ctx sc = {"default", 0, ta};
    wf_error err;
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(ts.app.store, &sc, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, in->id, &g, &err), WF_OK);
    ck_assert_uint_eq(g.n_jobs, 1);
    wf_job_row job = g.jobs[0];
    job.variables_json = blob("doc", 200000);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.jobs = &job, .n_jobs = 1}, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    wf_client_status st;
    ck_assert_ptr_null(activate_c(as(NULL), type, 4, 0, 0, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "VARIABLES_TOO_LARGE");
    ck_assert_ptr_nonnull(strstr(st.message, job.id));
    const char *data[1];
    ck_assert_uint_eq(activated_data(in->id, data, 1), 0);
    Workflow__V1__GetInstanceResponse *gi = get_instance(in->id);
    ck_assert_uint_eq(gi->n_jobs, 1);
    ck_assert_str_eq(gi->jobs[0]->key, ""); /* not leased */

    ck_assert_ptr_nonnull(set_vars(in->id, "{\"doc\":2}", &st));
    Workflow__V1__ActivateJobsResponse *r = activate_c(as(NULL), type, 4, 0, 0, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_str_eq(r->jobs[0]->variables_json, "{\"doc\":2}");
}
END_TEST

/* StreamActivatedJobs sends each job in a message of its own, and leases
 * per pass no more than an answer holds: all four jobs of 40 KiB come. */
WF_CASE_TEST("sizes", test_stream_delivers_large_jobs)
{
    char *key = u("stream-jobs"), *type = u("streamed");
    deploy(job_net(key, type, 0, 0));
    for (int i = 0; i < 4; i++)
        start_boss(key, blob("doc", 40000));
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = type;
    req.worker = "w1";
    req.credit = 4;
    wf_client_call_opts o = {.no_deadline = 1};
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), &req, &o);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < 4; i++) {
        Workflow__V1__Job *j = NULL;
        wf_client_status st;
        ck_assert_msg(wf_client_next_job(s, 5000, &j, &st) == 1, "job %d: %s %s", i, st.reason,
                      st.message);
        ck_assert_uint_gt(strlen(j->variables_json), 40000);
        protobuf_c_message_free_unpacked(&j->base, NULL);
    }
    wf_client_stream_close(s);
}
END_TEST

/* 48 KiB of variables, then 48 KiB more: the second SetVariables would
 * take the tree past 64 KiB and is refused, with nothing written. Before,
 * it was accepted, and a third one committed though its 144 KiB answer
 * failed; GetInstance then failed for good. */
WF_CASE_TEST("sizes", test_set_variables_is_bounded)
{
    char *key = u("vars");
    deploy(job_net(key, u("unused"), 0, 0));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    ck_assert_ptr_nonnull(set_vars(in->id, blob("a", 48000), &st));
    ck_ok(st);
    ck_assert_ptr_null(set_vars(in->id, blob("b", 48000), &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "VARIABLES_TOO_LARGE");
    ck_assert_ptr_nonnull(strstr(st.message, in->id));
    ck_assert_int_eq(count_of(event_types(in->id), "VARIABLES_SET"), 1);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_ptr_null(strstr(g->instance->variables_json, "\"b\""));
    /* Replacing a key keeps the size: allowed. */
    ck_assert_ptr_nonnull(set_vars(in->id, blob("a", 47000), &st));
    ck_ok(st);
    /* A job output merged into the variables is bound alike. */
    Workflow__V1__ActivateJobsResponse *r = activate(g->jobs[0]->job_type, 1, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as(NULL), r->jobs[0]->key, blob("c", 30000), &st),
                     GRPC_STATUS_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(st.reason, "VARIABLES_TOO_LARGE");
    ck_assert_int_eq(count_of(event_types(in->id), "JOB_COMPLETED"), 0);
    ck_assert_int_eq(complete_job_c(as(NULL), r->jobs[0]->key, "{\"c\":1}", &st), GRPC_STATUS_OK);
}
END_TEST

static Workflow__V1__AssignToResponse *
assign(const char *parent, const char *vars, wf_client_status *st)
{
    Workflow__V1__AssignToRequest req = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {"alice"};
    who.kind = A_USER;
    who.n_ids = 1;
    who.ids = ids;
    req.parent_instance_id = (char *)parent;
    req.assignee = &who;
    req.title = "check";
    req.variables_json = (char *)vars;
    return call(as("boss"), "AssignTo", &req, &workflow__v1__assign_to_response__descriptor, st);
}

/* Children count with their root: a second child of 48 KiB is refused. */
WF_CASE_TEST("sizes", test_children_count_in_the_bound)
{
    Workflow__V1__Instance *root = start_boss(u("adhoc"), NULL);
    wf_client_status st;
    Workflow__V1__AssignToResponse *a = assign(root->id, blob("a", 48000), &st);
    ck_ok(st);
    ck_assert_ptr_null(assign(root->id, blob("b", 48000), &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "VARIABLES_TOO_LARGE");
    /* A task's output merged into its referral is bound alike. */
    Workflow__V1__CompleteTaskRequest ct = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    ct.task_id = a->task->id;
    ct.variables_json = blob("c", 20000);
    ck_assert_ptr_null(call(as("alice"), "CompleteTask", &ct,
                            &workflow__v1__complete_task_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "VARIABLES_TOO_LARGE");
    ct.variables_json = "{\"c\":1}";
    call(as("alice"), "CompleteTask", &ct, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(root->id);
    ck_assert_uint_eq(g->n_children, 1);
    ck_assert(!g->children[0]->variables_omitted);
}
END_TEST

static void
buffer_signal(const char *instance_id, const char *payload)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    req.name = "later";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = (char *)instance_id;
    req.payload_json = (char *)payload;
    req.buffer_ttl = dur(3600 * 1000);
    wf_client_status st;
    call(as(NULL), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
}

/* Two children of 30 KiB and two buffered signals of 48 KiB: GetInstance
 * of the root leaves out the children's variables first, the last child
 * first, until the answer fits; the children answer their own. */
WF_CASE_TEST("sizes", test_get_instance_leaves_out_children_variables)
{
    Workflow__V1__Instance *root = start_boss(u("adhoc"), NULL);
    wf_client_status st;
    Workflow__V1__AssignToResponse *a1 = assign(root->id, blob("a", 30000), &st);
    ck_ok(st);
    assign(root->id, blob("b", 30000), &st);
    ck_ok(st);
    buffer_signal(root->id, blob("p", 48000));
    buffer_signal(root->id, blob("q", 48000));
    Workflow__V1__GetInstanceResponse *g = get_instance(root->id);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&g->base), SEND_LIMIT);
    ck_assert_uint_eq(g->n_children, 2);
    ck_assert(g->children[1]->variables_omitted);
    ck_assert_str_eq(g->children[1]->variables_json, "");
    ck_assert(g->children[0]->variables_omitted);
    ck_assert_uint_eq(g->n_buffered_signals, 2);
    ck_assert(!g->buffered_signals[0]->payload_omitted);
    ck_assert(!g->buffered_signals[1]->payload_omitted);
    Workflow__V1__GetInstanceResponse *child = get_instance(a1->instance_id);
    ck_assert(!child->instance->variables_omitted);
    ck_assert_uint_gt(strlen(child->instance->variables_json), 30000);
}
END_TEST

/* Three parallel jobs repeat the root's 40 KiB of variables, and three
 * buffered signals carry 48 KiB each: GetInstance leaves out the jobs'
 * variables and then signal payloads until the answer fits (before, it
 * failed with the send limit). */
WF_CASE_TEST("sizes", test_get_instance_leaves_out_what_does_not_fit)
{
    char *key = u("fan"), *type = u("part");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p1", NORMAL);
    place(n, "p2", NORMAL);
    place(n, "p3", NORMAL);
    place(n, "e", END);
    trans(n, "split", T_AUTO);
    with_job(trans(n, "w1", T_AUTO), type, 0, 0);
    with_job(trans(n, "w2", T_AUTO), type, 0, 0);
    with_job(trans(n, "w3", T_AUTO), type, 0, 0);
    arc(n, "s", "split");
    arc(n, "split", "p1");
    arc(n, "split", "p2");
    arc(n, "split", "p3");
    arc(n, "p1", "w1");
    arc(n, "p2", "w2");
    arc(n, "p3", "w3");
    arc(n, "w1", "e");
    arc(n, "w2", "e");
    arc(n, "w3", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, blob("doc", 40000));
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_jobs, 3);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&g->base), SEND_LIMIT);
    ck_assert_str_eq(g->instance->variables_json, in->variables_json);
    ck_assert(!g->jobs[0]->variables_omitted);
    ck_assert(g->jobs[2]->variables_omitted);
    ck_assert_str_eq(g->jobs[2]->variables_json, "");

    for (int i = 0; i < 3; i++)
        buffer_signal(in->id, blob("p", 48000));
    g = get_instance(in->id);
    ck_assert_uint_eq(g->n_buffered_signals, 3);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&g->base), SEND_LIMIT);
    ck_assert(g->jobs[0]->variables_omitted);
    ck_assert(g->buffered_signals[2]->payload_omitted);
    ck_assert(!g->buffered_signals[0]->payload_omitted);

    /* ListSignals pages by bytes: two of the three fit a page. */
    Workflow__V1__ListSignalsRequest lr = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    lr.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    lr.instance_id = in->id;
    lr.page_size = 100;
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *ls =
        call(as(NULL), "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(ls->n_signals, 2);
    ck_assert_str_ne(ls->next_page_token, "");
    lr.page_token = ls->next_page_token;
    ls = call(as(NULL), "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(ls->n_signals, 1);
    ck_assert_str_eq(ls->next_page_token, "");
}
END_TEST

/* Four roots of 48 KiB: a page of 500 stops after two (before, the 192
 * KiB page failed with the send limit), and its token leads to the rest. */
WF_CASE_TEST("sizes", test_list_instances_pages_by_bytes)
{
    char *key = u("listed");
    deploy(job_net(key, u("unused"), 0, 0));
    wf_client *c = as(u("lister"));
    wf_client_status st;
    for (int i = 0; i < 4; i++) {
        start_v(c, key, 0, blob("doc", 48000), &st);
        ck_ok(st);
    }
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.definition_key = key;
    req.started_by = "*";
    req.page_size = 500;
    size_t total = 0;
    for (int page = 0; page < 2; page++) {
        Workflow__V1__ListInstancesResponse *r =
            call(c, "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
        ck_ok(st);
        ck_assert_uint_eq(r->n_instances, 2);
        ck_assert_uint_lt(protobuf_c_message_get_packed_size(&r->base), SEND_LIMIT);
        total += r->n_instances;
        if (page == 0)
            ck_assert_str_ne(r->next_page_token, "");
        else
            ck_assert_str_eq(r->next_page_token, "");
        req.page_token = r->next_page_token;
    }
    ck_assert_uint_eq(total, 4);
}
END_TEST

/* A step list "a" -> "b" -> "c" of jobs, each step named by name_bytes
 * bytes (test-owned). */
static Workflow__V1__Definition *
named_steps(const char *key, size_t name_bytes)
{
    Workflow__V1__Definition *d = wf_arena_calloc(ta, 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    workflow__v1__definition__init(d);
    d->key = (char *)key;
    d->kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS;
    d->n_steps = 3;
    d->steps = wf_arena_calloc(ta, 3, sizeof *d->steps);
    static const char *const ids[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++) {
        Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
        workflow__v1__step__init(s);
        s->id = (char *)ids[i];
        s->name = wf_arena_alloc(ta, name_bytes + 1);
        memset(s->name, 'n', name_bytes);
        s->name[name_bytes] = '\0';
        s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
        workflow__v1__job_step__init(s->job);
        s->job->job_type = u("step");
        d->steps[i] = s;
    }
    return d;
}

/* A step list is stored, and answered, with its compiled net: its names
 * twice. Three names of 21,000 bytes (a request within
 * WF_MAX_MESSAGE_BYTES) would be stored as more than an answer holds:
 * refused before it is stored, nothing to read back. Names of 5,000 bytes
 * are stored and read back. */
WF_CASE_TEST("sizes", test_a_definition_that_could_not_be_read_is_refused)
{
    char *key = u("steps");
    wf_client_status st;
    Workflow__V1__Definition *big = named_steps(key, 21000);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&big->base), 65536);
    ck_assert_ptr_null(deploy_d(as("dev"), big, false, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "TOO_LARGE");
    ck_assert_ptr_nonnull(strstr(st.message, "its steps with their compiled net"));
    Workflow__V1__GetDefinitionRequest g = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    g.key = key;
    ck_assert_ptr_null(call(as("dev"), "GetDefinition", &g,
                            &workflow__v1__get_definition_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");

    ck_assert_ptr_nonnull(deploy_d(as("dev"), named_steps(key, 5000), false, &st));
    ck_ok(st);
    Workflow__V1__GetDefinitionResponse *r = call(
        as("dev"), "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_gt(protobuf_c_message_get_packed_size(&r->base), 30000);
    ck_assert_uint_lt(protobuf_c_message_get_packed_size(&r->base), SEND_LIMIT);
}
END_TEST

/* Requests as large as answers (WF_MAX_MESSAGE_BYTES = WF_MAX_ANSWER_BYTES
 * = 64 KiB): a buffered signal's payload of 65,448 bytes is accepted, and
 * a ListSignals page holds at least one row, so its answer would pass the
 * send limit: the server answers TOO_LARGE instead of a message the client
 * would refuse, and the channel serves on (GetInstance leaves the payload
 * out). */
static void
setup_equal_limits(void)
{
    static const char *const env[] = {"WF_MAX_MESSAGE_BYTES=65536", "WF_MAX_ANSWER_BYTES=65536",
                                      NULL};
    setup_with(env);
}

WF_CASE_TEST("equal_limits", test_an_answer_past_the_send_limit_is_refused)
{
    Workflow__V1__Instance *in = start_boss(u("adhoc"), NULL);
    /* The request takes about 65,500 bytes, the page's answer about 65,570. */
    buffer_signal(in->id, blob("p", 65440));
    Workflow__V1__ListSignalsRequest lr = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    lr.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    lr.instance_id = in->id;
    wf_client_status st;
    ck_assert_ptr_null(
        call(as(NULL), "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "TOO_LARGE");
    ck_assert_ptr_nonnull(strstr(st.message, "more than WF_MAX_ANSWER_BYTES (65536)"));
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    ck_assert(g->buffered_signals[0]->payload_omitted);
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {{"sizes", setup_sizes, teardown, 30},
                                  {"equal_limits", setup_equal_limits, teardown, 30},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_sizes", cases));
}
