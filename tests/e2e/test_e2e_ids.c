/*
 * test_e2e_ids.c: one rule for the ids a caller sends. Every id field of
 * every unary RPC gets "" (INVALID_ARGUMENT INVALID_ARGUMENT, with a field
 * violation naming the field), a malformed id "x" and a well-formed UUID
 * no row has (both NOT_FOUND <KIND>_NOT_FOUND: ids are opaque, so a
 * malformed one is simply one that does not exist). Job keys
 * (<instance id>.<uuid>) also get a key of an unknown instance. Filters
 * (an id that narrows a list and may be empty) answer an empty page for a
 * malformed or unknown id. The table is the whole contract: one row per
 * (RPC, field), run on the store WF_TEST_STORE names.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "net_kit.h"
#include "wf_id.h"

/* What an id field is. */
typedef enum { ID_REQUIRED, ID_FILTER } id_use;

typedef struct id_case {
    const char *method;
    const ProtobufCMessageDescriptor *desc; /* of the request */
    const ProtobufCMessageDescriptor *resp; /* of the response */
    const char *field;                      /* the id field */
    const char *reason;                     /* NOT_FOUND reason of a missing one */
    id_use use;
    const char *count; /* ID_FILTER: the repeated field that must come back empty */
} id_case;

/* The field a violation of an empty id names: the field itself, or for a
 * member of a oneof the oneof ("target"), since an empty member is an
 * unset choice. */
static const char *
violation_field(const id_case *c)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(c->desc, c->field);
    return f != NULL && (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ? "target" : c->field;
}

#define D(m) &workflow__v1__##m##_request__descriptor, &workflow__v1__##m##_response__descriptor

static const id_case cases[] = {
    {"GetInstance", D(get_instance), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"AwaitInstance", D(await_instance), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"CancelInstance", D(cancel_instance), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"SetVariables", D(set_variables), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"RetryInstance", D(retry_instance), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"ListWorkItems", D(list_work_items), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"AssignTo", D(assign_to), "parent_instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"GetCompletion", D(get_completion), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"CompleteAndEnd", D(complete_and_end), "task_id", "TASK_NOT_FOUND", ID_REQUIRED, NULL},
    {"GetTask", D(get_task), "task_id", "TASK_NOT_FOUND", ID_REQUIRED, NULL},
    {"ClaimTask", D(claim_task), "task_id", "TASK_NOT_FOUND", ID_REQUIRED, NULL},
    {"ReleaseTask", D(release_task), "task_id", "TASK_NOT_FOUND", ID_REQUIRED, NULL},
    {"CompleteTask", D(complete_task), "task_id", "TASK_NOT_FOUND", ID_REQUIRED, NULL},
    {"CompleteJob", D(complete_job), "job_key", "JOB_NOT_FOUND", ID_REQUIRED, NULL},
    {"FailJob", D(fail_job), "job_key", "JOB_NOT_FOUND", ID_REQUIRED, NULL},
    {"ExtendJobLease", D(extend_job_lease), "job_key", "JOB_NOT_FOUND", ID_REQUIRED, NULL},
    {"SendSignal", D(send_signal), "instance_id", "INSTANCE_NOT_FOUND", ID_REQUIRED, NULL},
    {"ListSignals", D(list_signals), "instance_id", "INSTANCE_NOT_FOUND", ID_FILTER, "signals"},
};

/* Sets the string field name of msg (and its oneof case). */
static void
set_str(ProtobufCMessage *msg, const char *name, const char *value)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
    ck_assert_msg(f != NULL && f->type == PROTOBUF_C_TYPE_STRING, "%s.%s", msg->descriptor->name,
                  name);
    *(const char **)((char *)msg + f->offset) = value;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        *(uint32_t *)((char *)msg + f->quantifier_offset) = f->id;
}

/* A request of c with field = id and the other required fields filled in
 * validly, so that the id is the only thing wrong with it. */
static ProtobufCMessage *
request(const id_case *c, const char *id)
{
    ProtobufCMessage *m = wf_arena_alloc(ta, c->desc->sizeof_message);
    ck_assert_ptr_nonnull(m);
    c->desc->message_init(m);
    set_str(m, c->field, id);
    if (strcmp(c->method, "SendSignal") == 0)
        set_str(m, "name", "ping");
    if (strcmp(c->method, "FailJob") == 0)
        set_str(m, "error_message", "boom");
    if (strcmp(c->method, "SetVariables") == 0)
        set_str(m, "variables_json", "{\"a\": 1}");
    if (strcmp(c->method, "ExtendJobLease") == 0)
        ((Workflow__V1__ExtendJobLeaseRequest *)m)->lease = dur(60000);
    if (strcmp(c->method, "AssignTo") == 0) {
        Workflow__V1__AssignToRequest *a = (void *)m;
        static char *user = "u1";
        static Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
        who.kind = A_USER;
        who.n_ids = 1;
        who.ids = &user;
        a->definition_key = "ids-review";
        a->title = "Review";
        a->assignee = &who;
    }
    return m;
}

/* A well-formed UUID that names nothing. */
static const char *
unknown_uuid(void)
{
    char *id = wf_arena_alloc(ta, WF_UUID_LEN + 1);
    ck_assert_ptr_nonnull(id);
    wf_uuid7(id);
    return id;
}

/* Mismatches of the table test: each is printed, the test fails at its end
 * (so that one run shows every RPC that breaks the rule). */
static int mismatches;

#define expect(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            mismatches++;                                                                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static void
ck_not_found(const id_case *c, const char *id, const wf_client_status *st, const void *resp)
{
    if (c->use == ID_FILTER) {
        expect(resp != NULL, "%s %s=\"%s\": %s %s", c->method, c->field, id,
               wf_client_code_name(st->code), st->reason);
        if (resp == NULL)
            return;
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(c->resp, c->count);
        ck_assert_ptr_nonnull(f);
        size_t n = *(const size_t *)((const char *)resp + f->quantifier_offset);
        expect(n == 0, "%s %s=\"%s\": %zu rows", c->method, c->field, id, n);
        return;
    }
    expect(resp == NULL && st->code == GRPC_STATUS_NOT_FOUND && strcmp(st->reason, c->reason) == 0,
           "%s %s=\"%s\": %s %s (%s), want NOT_FOUND %s", c->method, c->field, id,
           wf_client_code_name(st->code), st->reason, st->message, c->reason);
}

WF_TEST(test_every_id_of_every_rpc)
{
    wf_client *cl = as("dev");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const id_case *c = &cases[i];
        wf_client_status st;

        /* "": a required id is missing. */
        if (c->use == ID_REQUIRED || violation_field(c) != c->field) {
            const char *vf = violation_field(c);
            void *r = call(cl, c->method, request(c, ""), c->resp, &st);
            expect(r == NULL && st.code == GRPC_STATUS_INVALID_ARGUMENT &&
                       strcmp(st.reason, "INVALID_ARGUMENT") == 0,
                   "%s %s=\"\": %s %s (%s), want INVALID_ARGUMENT INVALID_ARGUMENT", c->method,
                   c->field, wf_client_code_name(st.code), st.reason, st.message);
            expect(st.nviolations >= 1 && strncmp(st.violations[0], vf, strlen(vf)) == 0 &&
                       st.violations[0][strlen(vf)] == ':',
                   "%s: violation \"%s\", want field %s", c->method,
                   st.nviolations > 0 ? st.violations[0] : "", vf);
        }

        const char *bad[] = {"x", "00000000-0000-0000-0000-00000000000g", unknown_uuid(), NULL,
                             NULL};
        if (strcmp(c->field, "job_key") == 0) {
            /* <instance id>.<uuid> of an unknown instance, of a malformed
             * one. (A bare UUID is a key of the older shape: one no current
             * activation has is JOB_LEASE_LOST, as before.) */
            bad[2] = wf_arena_printf(ta, "%s.%s", unknown_uuid(), unknown_uuid());
            bad[3] = wf_arena_printf(ta, "x.%s", unknown_uuid());
        }
        for (size_t b = 0; bad[b] != NULL; b++) {
            void *r = call(cl, c->method, request(c, bad[b]), c->resp, &st);
            ck_not_found(c, bad[b], &st, r);
        }
    }
    ck_assert_msg(mismatches == 0, "%d answers break the rule (printed above)", mismatches);
}
END_TEST

/* CompleteJobs answers per item, with the code and reason CompleteJob has. */
WF_TEST(test_complete_jobs_items)
{
    wf_client *cl = as("dev");
    const char *keys[] = {"x", "y.z", wf_arena_printf(ta, "%s.%s", unknown_uuid(), unknown_uuid())};
    size_t n = sizeof keys / sizeof keys[0];
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest *items[4];
    for (size_t i = 0; i <= n; i++) {
        items[i] = wf_arena_alloc(ta, sizeof *items[i]);
        workflow__v1__complete_job_request__init(items[i]);
        items[i]->job_key = i < n ? (char *)keys[i] : "";
    }
    req.n_completions = n + 1;
    req.completions = items;
    wf_client_status st;
    Workflow__V1__CompleteJobsResponse *r =
        call(cl, "CompleteJobs", &req, &workflow__v1__complete_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_results, n + 1);
    /* The empty key: INVALID_ARGUMENT in its item, the call still OK. */
    ck_assert_int_eq(r->results[n]->code, GRPC_STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(r->results[n]->reason, "INVALID_ARGUMENT");
    ck_assert_str_eq(r->results[n]->message, "job_key is required");
    for (size_t i = 0; i < n; i++) {
        expect(r->results[i]->code == GRPC_STATUS_NOT_FOUND &&
                   strcmp(r->results[i]->reason, "JOB_NOT_FOUND") == 0,
               "item %zu (%s): %d %s", i, keys[i], r->results[i]->code, r->results[i]->reason);
    }
    ck_assert_msg(mismatches == 0, "%d items break the rule (printed above)", mismatches);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_ids", wf_test_store_name(), setup, teardown, 60));
}
