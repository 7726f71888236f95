/*
 * End-to-end tests of MigrateInstance over gRPC, on the memory store and on
 * Postgres (WF_TEST_STORE=pg):
 *   - a claimed task kept with its id, claim and assignee while its places
 *     are renamed; the instance then runs the target version; the
 *     INSTANCE_MIGRATED event (type 38) through WatchEvents;
 *   - a dry run answering the problems and the plan, a real run refused
 *     with MIGRATION_INVALID and every problem in google.rpc.BadRequest,
 *     then the mapped run, its request_id replay and reuse;
 *   - a mapping that withdraws a task and creates the target's one;
 *   - a STEPS definition: the leased job kept (its worker completes it),
 *     the next step taken from the target, a changed job type refused;
 *   - every other refusal with its code and reason, changing nothing;
 *   - MigrateInstance racing CompleteTask on the same token.
 *
 * Postgres keeps rows between runs: every definition key is made unique
 * with a per-test suffix.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "workflow/v1/workflow.pb-c.h"

#define STEPS_KIND WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define TS_CLAIMED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED

/* ---- requests ---------------------------------------------------------------------------- */

static Workflow__V1__MigrateInstanceRequest *
req_new(const char *id, int32_t version, const char *const *map, size_t n_pairs, bool dry)
{
    Workflow__V1__MigrateInstanceRequest *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__migrate_instance_request__init(r);
    r->instance_id = (char *)id;
    r->target_version = version;
    r->dry_run = dry;
    r->place_mapping = wf_arena_calloc(ta, n_pairs + 1, sizeof *r->place_mapping);
    for (size_t i = 0; i < n_pairs; i++) {
        Workflow__V1__PlaceMapping *m = wf_arena_calloc(ta, 1, sizeof *m);
        workflow__v1__place_mapping__init(m);
        m->from_place = (char *)map[2 * i];
        m->to_place = (char *)map[2 * i + 1];
        r->place_mapping[r->n_place_mapping++] = m;
    }
    return r;
}

static Workflow__V1__MigrateInstanceResponse *
migrate_c(wf_client *c, const Workflow__V1__MigrateInstanceRequest *r, wf_client_status *st)
{
    return call(c, "MigrateInstance", r, &workflow__v1__migrate_instance_response__descriptor, st);
}

static Workflow__V1__MigrateInstanceResponse *
migrate(const char *id, int32_t version, const char *const *map, size_t n_pairs, bool dry,
        wf_client_status *st)
{
    return migrate_c(as("ops"), req_new(id, version, map, n_pairs, dry), st);
}

static const char *
types_after(const char *root, const char *before)
{
    const char *all = event_types(root);
    size_t l = strlen(before);
    ck_assert_msg(strncmp(all, before, l) == 0, "%s does not start with %s", all, before);
    return all + l + (all[l] == ' ');
}

static void
to_alice(Workflow__V1__Transition *t)
{
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 1, sizeof(char *));
    a->ids[0] = "alice";
    a->n_ids = 1;
    t->assignee = a;
}

/* One transition: id, trigger, job type (AUTO), input place, output place. */
typedef struct tdef {
    const char *id;
    Workflow__V1__Trigger trigger;
    const char *job_type;
    const char *in, *out;
} tdef;

/* Deploys key: places (the first START, the last END) and transitions;
 * USER transitions go to alice. */
static void
deploy_net(const char *key, const char *const *places, size_t np, const tdef *t, size_t nt)
{
    nb *n = net_new(key);
    for (size_t i = 0; i < np; i++)
        place(n, places[i], i == 0 ? START : i == np - 1 ? END : NORMAL);
    for (size_t i = 0; i < nt; i++) {
        Workflow__V1__Transition *tr = trans(n, t[i].id, t[i].trigger);
        if (t[i].trigger == T_USER)
            to_alice(tr);
        else if (t[i].job_type != NULL)
            with_job(tr, t[i].job_type, 3, 0);
    }
    for (size_t i = 0; i < nt; i++) {
        arc(n, t[i].in, t[i].id);
        arc(n, t[i].id, t[i].out);
    }
    deploy(n);
}

/* v1: s -review-> a -approve-> b -ship(job)-> e */
static void
deploy_v1(const char *key, const char *job)
{
    static const char *const p[] = {"s", "a", "b", "e"};
    const tdef t[] = {{"review", T_USER, NULL, "s", "a"},
                      {"approve", T_USER, NULL, "a", "b"},
                      {"ship", T_AUTO, job, "b", "e"}};
    deploy_net(key, p, 4, t, 3);
}

/* v1 with place a renamed a2. */
static void
deploy_renamed(const char *key, const char *job)
{
    static const char *const p[] = {"s", "a2", "b", "e"};
    const tdef t[] = {{"review", T_USER, NULL, "s", "a2"},
                      {"approve", T_USER, NULL, "a2", "b"},
                      {"ship", T_AUTO, job, "b", "e"}};
    deploy_net(key, p, 4, t, 3);
}

/* v1 plus a -flag-> x -escalate-> b. */
static void
deploy_escalate(const char *key, const char *job)
{
    static const char *const p[] = {"s", "a", "x", "b", "e"};
    const tdef t[] = {{"review", T_USER, NULL, "s", "a"},
                      {"approve", T_USER, NULL, "a", "b"},
                      {"flag", T_USER, NULL, "a", "x"},
                      {"escalate", T_USER, NULL, "x", "b"},
                      {"ship", T_AUTO, job, "b", "e"}};
    deploy_net(key, p, 5, t, 5);
}

/* A v1 instance of a fresh key whose review is done: token in a. */
static Workflow__V1__Instance *
start_at_a(const char *key, const char *job)
{
    deploy_v1(key, job);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    complete_task_as("alice", task_of(get_instance(in->id), "review", TS_OPEN)->id, NULL, &st);
    ck_ok(st);
    return in;
}

static bool
same_bytes(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
    size_t l1 = protobuf_c_message_get_packed_size(a), l2 = protobuf_c_message_get_packed_size(b);
    if (l1 != l2)
        return false;
    uint8_t *b1 = wf_arena_alloc(ta, l1 + 1), *b2 = wf_arena_alloc(ta, l2 + 1);
    protobuf_c_message_pack(a, b1);
    protobuf_c_message_pack(b, b2);
    return memcmp(b1, b2, l1) == 0;
}

/* ---- tests -------------------------------------------------------------------------------- */

WF_TEST(test_claimed_task_kept_across_renamed_places)
{
    char *key = u("migkeep"), *job = u("ship");
    deploy_v1(key, job);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Task *review = task_of(get_instance(in->id), "review", TS_OPEN);
    Workflow__V1__ClaimTaskRequest cr = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    cr.task_id = review->id;
    wf_client_status st;
    call(as("alice"), "ClaimTask", &cr, &workflow__v1__claim_task_response__descriptor, &st);
    ck_ok(st);
    deploy_renamed(key, job);
    char *before = wf_arena_strdup(ta, event_types(in->id));

    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 2, NULL, 0, false, &st);
    ck_ok(st);
    ck_assert(m->applied);
    ck_assert_uint_eq(m->n_problems, 0);
    ck_assert_int_eq(m->instance->definition_version, 2);
    ck_assert_int_eq(m->plan->source_version, 1);
    ck_assert_int_eq(m->plan->target_version, 2);
    ck_assert_uint_eq(m->plan->n_tokens, 1);
    ck_assert_str_eq(m->plan->tokens[0]->from_place, "s");
    ck_assert_str_eq(m->plan->tokens[0]->to_place, "s");
    ck_assert_uint_eq(m->plan->n_kept, 1);
    ck_assert_str_eq(m->plan->kept[0]->transition_id, "review");
    ck_assert_int_eq(m->plan->kept[0]->trigger, T_USER);
    ck_assert_uint_eq(m->plan->n_withdrawn + m->plan->n_created, 0);
    ck_assert_str_eq(types_after(in->id, before), "INSTANCE_MIGRATED");

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->definition_version, 2);
    Workflow__V1__Task *t = task_of(g, "review", TS_CLAIMED);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->id, review->id);
    ck_assert_str_eq(t->claimed_by, "alice");
    ck_assert_str_eq(t->assignee_id, "alice");

    /* The instance runs version 2: review leads to a2, approve to the job. */
    complete_task_as("alice", review->id, NULL, &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "a2"), 1);
    complete_task_as("alice", task_of(g, "approve", TS_OPEN)->id, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(activate(job, 1, 0, 0)->n_jobs, 1);

    /* INSTANCE_MIGRATED through WatchEvents, filtered on its type. */
    Workflow__V1__EventType only[1] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_MIGRATED};
    Workflow__V1__WatchEventsRequest wr = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    wr.instance_id = in->id;
    wr.types = only;
    wr.n_types = 1;
    wf_client_stream *s = wf_client_stream_open(
        as("reader"), "/workflow.v1.WorkflowService/WatchEvents", &wr.base, NULL);
    ck_assert_ptr_nonnull(s);
    ProtobufCMessage *msg;
    int n = 0;
    while (wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &msg, &st)) {
        Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)msg)->event;
        ck_assert_int_eq(e->type, 38);
        ck_assert_str_eq(e->actor, "ops");
        ck_assert_ptr_nonnull(strstr(e->data_json, "\"targetVersion\":2"));
        ck_assert_ptr_nonnull(strstr(e->data_json, m->plan->kept[0]->work_item_id));
        n++;
        protobuf_c_message_free_unpacked(msg, NULL);
    }
    wf_client_stream_close(s);
    ck_ok(st);
    ck_assert_int_eq(n, 1);
}
END_TEST

WF_TEST(test_dry_run_refusal_mapping_and_replay)
{
    char *key = u("migmap"), *job = u("ship");
    Workflow__V1__Instance *in = start_at_a(key, job);
    deploy_renamed(key, job);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    wf_client_status st;

    /* Dry run: OK with the problem and the plan. */
    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 2, NULL, 0, true, &st);
    ck_ok(st);
    ck_assert(!m->applied);
    ck_assert_uint_eq(m->n_problems, 1);
    ck_assert_str_eq(m->problems[0]->code, "UNMAPPED_PLACE");
    ck_assert_str_eq(m->problems[0]->path, "place_mapping");
    ck_assert_ptr_nonnull(strstr(m->problems[0]->message, "\"a\""));
    ck_assert_str_eq(m->plan->tokens[0]->to_place, "");
    ck_assert_int_eq(m->instance->definition_version, 1);

    /* Real run: refused, the problem in BadRequest, nothing changed. */
    migrate(in->id, 2, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "MIGRATION_INVALID");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert(has_violation(&st, "place_mapping:", "UNMAPPED_PLACE"));
    ck_assert_str_eq(event_types(in->id), before);
    ck_assert_int_eq(get_instance(in->id)->instance->definition_version, 1);

    /* Mapped: a dry run plans it, the run with a request id does it. */
    static const char *const map[] = {"a", "a2"};
    m = migrate(in->id, 2, map, 1, true, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->n_problems, 0);
    ck_assert_uint_eq(m->plan->n_kept, 1);
    ck_assert_str_eq(m->plan->kept[0]->transition_id, "approve");
    ck_assert_str_eq(event_types(in->id), before);

    Workflow__V1__MigrateInstanceRequest *r = req_new(in->id, 2, map, 1, false);
    r->request_id = u("migrate-once");
    Workflow__V1__MigrateInstanceResponse *first = migrate_c(as("ops"), r, &st);
    ck_ok(st);
    ck_assert(first->applied);
    ck_assert_str_eq(first->plan->tokens[0]->to_place, "a2");
    char *after = wf_arena_strdup(ta, event_types(in->id));
    ck_assert_str_eq(types_after(in->id, before), "INSTANCE_MIGRATED");
    Workflow__V1__MigrateInstanceResponse *again = migrate_c(as("ops"), r, &st);
    ck_ok(st);
    ck_assert(same_bytes(&first->base, &again->base));
    ck_assert_str_eq(event_types(in->id), after);
    r->target_version = 1;
    migrate_c(as("ops"), r, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->definition_version, 2);
    ck_assert_int_eq(marking(g, "a2"), 1);
    ck_assert_ptr_nonnull(task_of(g, "approve", TS_OPEN));
}
END_TEST

WF_TEST(test_every_problem_is_listed)
{
    char *key = u("migmany"), *job = u("ship");
    Workflow__V1__Instance *in = start_at_a(key, job);
    /* v2: no place a, no approve. */
    static const char *const p[] = {"s", "c", "b", "e"};
    const tdef t[] = {{"review", T_USER, NULL, "s", "c"},
                      {"check", T_USER, NULL, "c", "b"},
                      {"ship", T_AUTO, job, "b", "e"}};
    deploy_net(key, p, 4, t, 3);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    static const char *const map[] = {"a", "nowhere"};
    wf_client_status st;
    migrate(in->id, 2, map, 1, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "MIGRATION_INVALID");
    ck_assert_int_eq(st.nviolations, 3);
    ck_assert(has_violation(&st, "place_mapping[0].to_place:", "UNKNOWN_TARGET_PLACE"));
    ck_assert(has_violation(&st, "place_mapping:", "UNMAPPED_PLACE"));
    ck_assert(has_violation(&st, "target_version:", "TRANSITION_MISSING"));
    ck_assert_ptr_nonnull(strstr(st.message, "3 problems"));
    ck_assert_str_eq(event_types(in->id), before);

    /* The same three in a dry run's answer. */
    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 2, map, 1, true, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->n_problems, 3);
}
END_TEST

WF_TEST(test_mapping_withdraws_and_creates)
{
    char *key = u("migesc"), *job = u("ship");
    Workflow__V1__Instance *in = start_at_a(key, job);
    Workflow__V1__Task *approve = task_of(get_instance(in->id), "approve", TS_OPEN);
    deploy_escalate(key, job);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    static const char *const map[] = {"a", "x"};
    wf_client_status st;
    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 2, map, 1, false, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->plan->n_withdrawn, 1);
    ck_assert_str_eq(m->plan->withdrawn[0]->transition_id, "approve");
    ck_assert_uint_eq(m->plan->n_created, 1);
    ck_assert_str_eq(m->plan->created[0]->transition_id, "escalate");
    ck_assert_str_ne(m->plan->created[0]->work_item_id, "");
    ck_assert_str_eq(types_after(in->id, before), "INSTANCE_MIGRATED WORKITEM_WITHDRAWN "
                                                  "TASK_CANCELLED TRANSITION_ENABLED TASK_CREATED");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "x"), 1);
    ck_assert_ptr_nonnull(task_of(g, "approve", TS_CANCELLED));
    Workflow__V1__Task *esc = task_of(g, "escalate", TS_OPEN);
    ck_assert_ptr_nonnull(esc);
    complete_task_as("alice", approve->id, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    complete_task_as("alice", esc->id, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(activate(job, 1, 0, 0)->n_jobs, 1);
}
END_TEST

static void
deploy_steps(const char *key, const char *const *ids, const char *const *types, size_t n)
{
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    d.key = (char *)key;
    d.kind = STEPS_KIND;
    Workflow__V1__Step **steps = wf_arena_calloc(ta, n, sizeof *steps);
    for (size_t i = 0; i < n; i++) {
        steps[i] = wf_arena_calloc(ta, 1, sizeof *steps[i]);
        workflow__v1__step__init(steps[i]);
        steps[i]->id = (char *)ids[i];
        Workflow__V1__JobStep *j = wf_arena_calloc(ta, 1, sizeof *j);
        workflow__v1__job_step__init(j);
        j->job_type = (char *)types[i];
        steps[i]->job = j;
    }
    d.steps = steps;
    d.n_steps = n;
    wf_client_status st;
    deploy_d(as("dev"), &d, false, &st);
    ck_ok(st);
}

WF_TEST(test_steps_keep_the_leased_job)
{
    char *key = u("migsteps");
    char *charge = u("charge"), *pack = u("pack"), *ship = u("ship"), *other = u("other");
    const char *ids1[] = {"charge", "ship"}, *types1[] = {charge, ship};
    deploy_steps(key, ids1, types1, 2);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__ActivateJobsResponse *a = activate(charge, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    const char *ids2[] = {"charge", "pack", "ship"}, *types2[] = {charge, pack, ship};
    deploy_steps(key, ids2, types2, 3);
    const char *ids3[] = {"charge"}, *types3[] = {other};
    deploy_steps(key, ids3, types3, 1);
    wf_client_status st;

    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 3, NULL, 0, true, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->n_problems, 1);
    ck_assert_str_eq(m->problems[0]->code, "JOB_TYPE_CHANGED");

    m = migrate(in->id, 2, NULL, 0, false, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->plan->n_kept, 1);
    ck_assert_str_eq(m->plan->kept[0]->transition_id, "charge");
    ck_assert_int_eq(m->plan->kept[0]->trigger, T_AUTO);
    /* The worker's lease survived: its completion goes on in version 2. */
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    a = activate(pack, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    a = activate(ship, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_refusals_with_code_and_reason)
{
    char *key = u("migref"), *job = u("ship");
    deploy_v1(key, job);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    wf_client_status st;

    /* The version it runs: a no-op. */
    Workflow__V1__MigrateInstanceResponse *m = migrate(in->id, 1, NULL, 0, false, &st);
    ck_ok(st);
    ck_assert(!m->applied);
    ck_assert_int_eq(m->instance->definition_version, 1);
    ck_assert_str_eq(event_types(in->id), before);

    migrate(in->id, 9, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    migrate(in->id, 0, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_str_eq(st.violations[0], "target_version: must be at least 1");
    static const char *const half[] = {"s", ""};
    migrate(in->id, 2, half, 1, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_str_eq(st.violations[0], "place_mapping[0].to_place: is required");
    migrate("no-such-instance", 2, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    migrate("", 2, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    migrate_c(as(NULL), req_new(in->id, 1, NULL, 0, false), &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");

    /* An AD_HOC root has no net; its referral is no root. */
    Workflow__V1__Instance *adhoc = start_boss(u("migadhoc"), NULL);
    migrate(adhoc->id, 1, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "NOT_A_NET_INSTANCE");
    Workflow__V1__AssignToRequest ar = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee as_ = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {"bob"};
    ar.parent_instance_id = adhoc->id;
    ar.title = "Look";
    as_.kind = A_USER;
    as_.ids = ids;
    as_.n_ids = 1;
    ar.assignee = &as_;
    Workflow__V1__AssignToResponse *child =
        call(as("boss"), "AssignTo", &ar, &workflow__v1__assign_to_response__descriptor, &st);
    ck_ok(st);
    migrate(child->instance_id, 1, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_ROOT");

    /* Suspended, then cancelled. */
    Workflow__V1__SuspendInstanceRequest sr = WORKFLOW__V1__SUSPEND_INSTANCE_REQUEST__INIT;
    sr.instance_id = in->id;
    call(as("ops"), "SuspendInstance", &sr, &workflow__v1__suspend_instance_response__descriptor,
         &st);
    ck_ok(st);
    migrate(in->id, 1, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = in->id;
    cr.reason = "stop";
    call(as("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    migrate(in->id, 1, NULL, 0, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
}
END_TEST

struct racer {
    pthread_barrier_t *gate;
    wf_client *client;
    const char *instance_id, *task_id;
    wf_client_status st;
};

static void *
race_migrate(void *arg)
{
    struct racer *r = arg;
    Workflow__V1__PlaceMapping pm = WORKFLOW__V1__PLACE_MAPPING__INIT;
    Workflow__V1__PlaceMapping *maps[1] = {&pm};
    pm.from_place = "a";
    pm.to_place = "x";
    Workflow__V1__MigrateInstanceRequest req = WORKFLOW__V1__MIGRATE_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)r->instance_id;
    req.target_version = 2;
    req.place_mapping = maps;
    req.n_place_mapping = 1;
    pthread_barrier_wait(r->gate);
    call(r->client, "MigrateInstance", &req, &workflow__v1__migrate_instance_response__descriptor,
         &r->st);
    return NULL;
}

static void *
race_complete(void *arg)
{
    struct racer *r = arg;
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)r->task_id;
    req.variables_json = "";
    pthread_barrier_wait(r->gate);
    call(r->client, "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor,
         &r->st);
    return NULL;
}

/* Both want the token in a: the migration maps it to x (approve is
 * withdrawn, escalate created), the completion of approve moves it to b
 * (then b maps to b and the ship job is kept). The root lock orders them;
 * either way the instance runs version 2 with one token. */
WF_TEST(test_migrate_racing_complete_task)
{
    char *key = u("migrace"), *job = u("ship");
    deploy_v1(key, job);
    int rounds = wf_test_store_is_pg() ? 10 : 30, migrate_won = 0, complete_won = 0;
    Workflow__V1__Instance **ins = wf_arena_calloc(ta, (size_t)rounds, sizeof *ins);
    wf_client_status st;
    for (int i = 0; i < rounds; i++) {
        ins[i] = start_boss(key, NULL);
        complete_task_as("alice", task_of(get_instance(ins[i]->id), "review", TS_OPEN)->id, NULL,
                         &st);
        ck_ok(st);
    }
    deploy_escalate(key, job);
    wf_client *ops_c = as("ops"), *alice_c = as("alice");
    for (int i = 0; i < rounds; i++) {
        Workflow__V1__Task *approve = task_of(get_instance(ins[i]->id), "approve", TS_OPEN);
        ck_assert_ptr_nonnull(approve);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        struct racer m = {.gate = &gate, .client = ops_c, .instance_id = ins[i]->id};
        struct racer c = {.gate = &gate, .client = alice_c, .task_id = approve->id};
        pthread_t a, b;
        pthread_create(&a, NULL, race_migrate, &m);
        pthread_create(&b, NULL, race_complete, &c);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&gate);
        ck_ok(m.st);
        Workflow__V1__GetInstanceResponse *g = get_instance(ins[i]->id);
        ck_assert_int_eq(g->instance->definition_version, 2);
        if (c.st.code == 0) {
            ck_assert_int_eq(marking(g, "b"), 1);
            ck_assert_uint_eq(g->n_jobs, 1);
            complete_won++;
        } else {
            ck_assert_str_eq(c.st.reason, "TASK_NOT_OPEN");
            ck_assert_int_eq(marking(g, "x"), 1);
            ck_assert_ptr_nonnull(task_of(g, "escalate", TS_OPEN));
            migrate_won++;
        }
        int tokens = 0;
        for (size_t k = 0; k < g->n_marking; k++)
            tokens += g->marking[k]->value;
        ck_assert_int_eq(tokens, 1);
    }
    printf("%s: MigrateInstance vs CompleteTask: the migration won %d times, the completion %d "
           "times\n",
           wf_test_store_name(), migrate_won, complete_won);
    ck_assert_int_eq(migrate_won + complete_won, rounds);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_migrate", wf_test_store_name(), setup, teardown, 60));
}
