/*
 * fuzz_seeds: the seed messages and documents (see fuzz_seeds.h).
 */
#include "fuzz_seeds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_app.h"

static void *
alloc(wf_arena *a, size_t n)
{
    void *p = wf_arena_calloc(a, 1, n);
    if (p == NULL)
        fuzz_fail("out of memory building the seeds");
    return p;
}

static char **
strs(wf_arena *a, size_t n, const char *const *v)
{
    char **out = alloc(a, (n ? n : 1) * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = wf_arena_strdup(a, v[i]);
    return out;
}

static Google__Protobuf__Duration *
duration(wf_arena *a, int64_t seconds)
{
    Google__Protobuf__Duration *d = alloc(a, sizeof *d);
    google__protobuf__duration__init(d);
    d->seconds = seconds;
    return d;
}

static Workflow__V1__Place *
place(wf_arena *a, const char *id, Workflow__V1__PlaceKind kind)
{
    Workflow__V1__Place *p = alloc(a, sizeof *p);
    workflow__v1__place__init(p);
    p->id = (char *)id;
    p->kind = kind;
    return p;
}

static Workflow__V1__Transition *
transition(wf_arena *a, const char *id, Workflow__V1__Trigger trigger)
{
    Workflow__V1__Transition *t = alloc(a, sizeof *t);
    workflow__v1__transition__init(t);
    t->id = (char *)id;
    t->name = (char *)id;
    t->trigger = trigger;
    return t;
}

static Workflow__V1__Arc *
arc(wf_arena *a, const char *source, const char *target, const char *guard, int is_default)
{
    Workflow__V1__Arc *r = alloc(a, sizeof *r);
    workflow__v1__arc__init(r);
    r->source = (char *)source;
    r->target = (char *)target;
    if (guard != NULL)
        r->guard = (char *)guard;
    r->is_default = is_default;
    return r;
}

static Workflow__V1__Assignee *
assignee(wf_arena *a, Workflow__V1__AssigneeKind kind, size_t n, const char *const *ids)
{
    Workflow__V1__Assignee *as = alloc(a, sizeof *as);
    workflow__v1__assignee__init(as);
    as->kind = kind;
    as->ids = strs(a, n, ids);
    as->n_ids = n;
    return as;
}

Workflow__V1__Definition *
fuzz_seed_definition(wf_arena *a)
{
    Workflow__V1__Definition *d = alloc(a, sizeof *d);
    workflow__v1__definition__init(d);
    d->key = FUZZ_NET_KEY;
    d->name = "fuzz seed net";
    d->description = "start -> review (USER) -> route (silent) -> ship | timeout | paid -> end";
    d->kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET;
    d->termination = WORKFLOW__V1__TERMINATION__TERMINATION_EXPLICIT;

    d->n_places = 4;
    d->places = alloc(a, d->n_places * sizeof *d->places);
    d->places[0] = place(a, "start", WORKFLOW__V1__PLACE_KIND__PLACE_KIND_START);
    d->places[1] = place(a, "reviewed", WORKFLOW__V1__PLACE_KIND__PLACE_KIND_NORMAL);
    d->places[2] = place(a, "ready", WORKFLOW__V1__PLACE_KIND__PLACE_KIND_NORMAL);
    d->places[3] = place(a, "end", WORKFLOW__V1__PLACE_KIND__PLACE_KIND_END);

    static const char *const reviewer[] = {FUZZ_ACTOR};
    Workflow__V1__Transition *review = transition(a, "review", WORKFLOW__V1__TRIGGER__TRIGGER_USER);
    review->assignee = assignee(a, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER, 1, reviewer);
    Workflow__V1__Transition *route = transition(a, "route", WORKFLOW__V1__TRIGGER__TRIGGER_AUTO);
    Workflow__V1__Transition *ship = transition(a, "ship", WORKFLOW__V1__TRIGGER__TRIGGER_AUTO);
    ship->job_type = "ship";
    ship->lease = duration(a, 60);
    ship->retry = alloc(a, sizeof *ship->retry);
    workflow__v1__retry_policy__init(ship->retry);
    ship->retry->max_attempts = 2;
    ship->retry->initial_backoff = duration(a, 1);
    ship->retry->multiplier = 2.0;
    ship->retry->max_backoff = duration(a, 10);
    Workflow__V1__Transition *timeout =
        transition(a, "timeout", WORKFLOW__V1__TRIGGER__TRIGGER_TIME);
    timeout->delay = duration(a, 3600);
    Workflow__V1__Transition *paid = transition(a, "paid", WORKFLOW__V1__TRIGGER__TRIGGER_MSG);
    paid->signal_name = "paid";
    paid->correlation = WORKFLOW__V1__CORRELATION__CORRELATION_INSTANCE;

    d->n_transitions = 5;
    d->transitions = alloc(a, d->n_transitions * sizeof *d->transitions);
    d->transitions[0] = review;
    d->transitions[1] = route;
    d->transitions[2] = ship;
    d->transitions[3] = timeout;
    d->transitions[4] = paid;

    d->n_arcs = 11;
    d->arcs = alloc(a, d->n_arcs * sizeof *d->arcs);
    d->arcs[0] = arc(a, "start", "review", NULL, 0);
    d->arcs[1] = arc(a, "review", "reviewed", NULL, 0);
    d->arcs[2] = arc(a, "reviewed", "route", NULL, 0);
    d->arcs[3] = arc(a, "route", "ready", ".amount > 100", 0);
    d->arcs[4] = arc(a, "route", "end", NULL, 1);
    d->arcs[5] = arc(a, "ready", "ship", NULL, 0);
    d->arcs[6] = arc(a, "ship", "end", NULL, 0);
    d->arcs[7] = arc(a, "ready", "timeout", NULL, 0);
    d->arcs[8] = arc(a, "timeout", "end", NULL, 0);
    d->arcs[9] = arc(a, "ready", "paid", NULL, 0);
    d->arcs[10] = arc(a, "paid", "end", NULL, 0);
    return d;
}

/* ---- seed requests ------------------------------------------------------------ */

static const char *const EXAMPLE_ID = "01890a5d-ac96-774b-bcce-b302099a8057";

const fuzz_seed *
fuzz_seed_requests(wf_arena *a, size_t *n)
{
    static const char *const users[] = {FUZZ_ACTOR, "alice", "bob"};
    fuzz_seed *s = alloc(a, 48 * sizeof *s);
    size_t k = 0;

    Workflow__V1__DeployDefinitionRequest *deploy = alloc(a, sizeof *deploy);
    workflow__v1__deploy_definition_request__init(deploy);
    deploy->definition = fuzz_seed_definition(a);
    deploy->request_id = "deploy-1";
    s[k++] = (fuzz_seed){"DeployDefinition", "deploy_net", &deploy->base};

    Workflow__V1__DeployDefinitionRequest *check = alloc(a, sizeof *check);
    workflow__v1__deploy_definition_request__init(check);
    check->definition = fuzz_seed_definition(a);
    check->validate_only = 1;
    s[k++] = (fuzz_seed){"DeployDefinition", "deploy_validate_only", &check->base};

    Workflow__V1__DeployDefinitionRequest *adhoc = alloc(a, sizeof *adhoc);
    workflow__v1__deploy_definition_request__init(adhoc);
    adhoc->definition = alloc(a, sizeof *adhoc->definition);
    workflow__v1__definition__init(adhoc->definition);
    adhoc->definition->key = FUZZ_ADHOC_KEY;
    adhoc->definition->name = "ad hoc";
    adhoc->definition->kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_AD_HOC;
    s[k++] = (fuzz_seed){"DeployDefinition", "deploy_adhoc", &adhoc->base};

    Workflow__V1__GetDefinitionRequest *getdef = alloc(a, sizeof *getdef);
    workflow__v1__get_definition_request__init(getdef);
    getdef->key = FUZZ_NET_KEY;
    s[k++] = (fuzz_seed){"GetDefinition", "get_definition", &getdef->base};

    Workflow__V1__ListDefinitionsRequest *listdef = alloc(a, sizeof *listdef);
    workflow__v1__list_definitions_request__init(listdef);
    listdef->page_size = 2;
    s[k++] = (fuzz_seed){"ListDefinitions", "list_definitions", &listdef->base};

    Workflow__V1__GetDiagramRequest *diag = alloc(a, sizeof *diag);
    workflow__v1__get_diagram_request__init(diag);
    diag->definition_key = "order";
    diag->format = WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT;
    s[k++] = (fuzz_seed){"GetDiagram", "get_diagram", &diag->base};

    Workflow__V1__StartInstanceRequest *start = alloc(a, sizeof *start);
    workflow__v1__start_instance_request__init(start);
    start->definition_key = FUZZ_NET_KEY;
    start->variables_json = "{\"amount\":150,\"region\":\"eu\"}";
    start->request_id = "start-1";
    s[k++] = (fuzz_seed){"StartInstance", "start_net", &start->base};

    Workflow__V1__StartInstanceRequest *start2 = alloc(a, sizeof *start2);
    workflow__v1__start_instance_request__init(start2);
    start2->definition_key = FUZZ_ADHOC_KEY;
    start2->variables_json = "{\"case\":\"adhoc\"}";
    start2->aggregate = alloc(a, sizeof *start2->aggregate);
    workflow__v1__aggregate__init(start2->aggregate);
    start2->aggregate->type = "order";
    start2->aggregate->id = "o-1";
    s[k++] = (fuzz_seed){"StartInstance", "start_adhoc", &start2->base};

    Workflow__V1__ListInstancesRequest *listinst = alloc(a, sizeof *listinst);
    workflow__v1__list_instances_request__init(listinst);
    listinst->definition_key = FUZZ_NET_KEY;
    listinst->status = WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING;
    listinst->page_size = 3;
    s[k++] = (fuzz_seed){"ListInstances", "list_instances", &listinst->base};

    Workflow__V1__GetInstanceRequest *getinst = alloc(a, sizeof *getinst);
    workflow__v1__get_instance_request__init(getinst);
    getinst->instance_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"GetInstance", "get_instance", &getinst->base};

    Workflow__V1__CancelInstanceRequest *cancel = alloc(a, sizeof *cancel);
    workflow__v1__cancel_instance_request__init(cancel);
    cancel->instance_id = (char *)EXAMPLE_ID;
    cancel->reason = "fuzz";
    s[k++] = (fuzz_seed){"CancelInstance", "cancel_instance", &cancel->base};

    Workflow__V1__AssignToRequest *assign = alloc(a, sizeof *assign);
    workflow__v1__assign_to_request__init(assign);
    assign->parent_instance_id = (char *)EXAMPLE_ID;
    assign->definition_key = FUZZ_ADHOC_KEY;
    assign->title = "review the order";
    assign->assignee = assignee(a, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USERS, 3, users);
    assign->variables_json = "{\"order\":\"o-1\"}";
    assign->join = alloc(a, sizeof *assign->join);
    workflow__v1__join_policy__init(assign->join);
    assign->join->mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    assign->join->quorum = 2;
    assign->on_all_completed = alloc(a, sizeof *assign->on_all_completed);
    workflow__v1__assign_to_request__init(assign->on_all_completed);
    assign->on_all_completed->title = "approve";
    assign->on_all_completed->assignee =
        assignee(a, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER, 1, users);
    assign->request_id = "assign-1";
    s[k++] = (fuzz_seed){"AssignTo", "assign_users_quorum", &assign->base};

    Workflow__V1__AssignToRequest *assign_group = alloc(a, sizeof *assign_group);
    workflow__v1__assign_to_request__init(assign_group);
    assign_group->parent_instance_id = (char *)EXAMPLE_ID;
    assign_group->definition_key = FUZZ_ADHOC_KEY;
    assign_group->title = "triage";
    static const char *const ops[] = {"ops"};
    assign_group->assignee = assignee(a, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP, 1, ops);
    s[k++] = (fuzz_seed){"AssignTo", "assign_group", &assign_group->base};

    Workflow__V1__GetCompletionRequest *completion = alloc(a, sizeof *completion);
    workflow__v1__get_completion_request__init(completion);
    completion->instance_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"GetCompletion", "get_completion", &completion->base};

    Workflow__V1__CompleteAndEndRequest *complete_end = alloc(a, sizeof *complete_end);
    workflow__v1__complete_and_end_request__init(complete_end);
    complete_end->task_id = (char *)EXAMPLE_ID;
    complete_end->variables_json = "{\"done\":true}";
    s[k++] = (fuzz_seed){"CompleteAndEnd", "complete_and_end", &complete_end->base};

    Workflow__V1__ListTasksRequest *tasks = alloc(a, sizeof *tasks);
    workflow__v1__list_tasks_request__init(tasks);
    tasks->user = FUZZ_ACTOR;
    tasks->n_states = 2;
    tasks->states = alloc(a, 2 * sizeof *tasks->states);
    tasks->states[0] = WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN;
    tasks->states[1] = WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED;
    tasks->page_size = 5;
    s[k++] = (fuzz_seed){"ListTasks", "list_tasks", &tasks->base};

    Workflow__V1__GetTaskRequest *gettask = alloc(a, sizeof *gettask);
    workflow__v1__get_task_request__init(gettask);
    gettask->task_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"GetTask", "get_task", &gettask->base};

    Workflow__V1__ClaimTaskRequest *claim = alloc(a, sizeof *claim);
    workflow__v1__claim_task_request__init(claim);
    claim->task_id = (char *)EXAMPLE_ID;
    claim->request_id = "claim-1";
    s[k++] = (fuzz_seed){"ClaimTask", "claim_task", &claim->base};

    Workflow__V1__ReleaseTaskRequest *release = alloc(a, sizeof *release);
    workflow__v1__release_task_request__init(release);
    release->task_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"ReleaseTask", "release_task", &release->base};

    Workflow__V1__CompleteTaskRequest *complete = alloc(a, sizeof *complete);
    workflow__v1__complete_task_request__init(complete);
    complete->task_id = (char *)EXAMPLE_ID;
    complete->variables_json = "{\"approved\":true}";
    s[k++] = (fuzz_seed){"CompleteTask", "complete_task", &complete->base};

    Workflow__V1__ActivateJobsRequest *activate = alloc(a, sizeof *activate);
    workflow__v1__activate_jobs_request__init(activate);
    activate->job_type = "ship";
    activate->worker = "w1";
    activate->max_jobs = 5;
    activate->lease = duration(a, 30);
    activate->request_id = "activate-1";
    s[k++] = (fuzz_seed){"ActivateJobs", "activate_jobs", &activate->base};

    Workflow__V1__CompleteJobRequest *cjob = alloc(a, sizeof *cjob);
    workflow__v1__complete_job_request__init(cjob);
    cjob->job_key = (char *)EXAMPLE_ID;
    cjob->variables_json = "{\"shipped\":true}";
    s[k++] = (fuzz_seed){"CompleteJob", "complete_job", &cjob->base};

    Workflow__V1__FailJobRequest *fjob = alloc(a, sizeof *fjob);
    workflow__v1__fail_job_request__init(fjob);
    fjob->job_key = (char *)EXAMPLE_ID;
    fjob->error_message = "carrier down";
    fjob->backoff_override = duration(a, 5);
    fjob->retryable_presence_case = WORKFLOW__V1__FAIL_JOB_REQUEST__RETRYABLE_PRESENCE_RETRYABLE;
    fjob->retryable = 1;
    s[k++] = (fuzz_seed){"FailJob", "fail_job", &fjob->base};

    Workflow__V1__ExtendJobLeaseRequest *extend = alloc(a, sizeof *extend);
    workflow__v1__extend_job_lease_request__init(extend);
    extend->job_key = (char *)EXAMPLE_ID;
    extend->lease = duration(a, 120);
    s[k++] = (fuzz_seed){"ExtendJobLease", "extend_job_lease", &extend->base};

    Workflow__V1__WatchEventsRequest *watch = alloc(a, sizeof *watch);
    workflow__v1__watch_events_request__init(watch);
    watch->definition_key = FUZZ_NET_KEY;
    watch->n_types = 2;
    watch->types = alloc(a, 2 * sizeof *watch->types);
    watch->types[0] = WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_STARTED;
    watch->types[1] = WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TASK_CREATED;
    s[k++] = (fuzz_seed){"WatchEvents", "watch_events", &watch->base};

    Workflow__V1__SendSignalRequest *sig = alloc(a, sizeof *sig);
    workflow__v1__send_signal_request__init(sig);
    sig->name = "carrier-picked-up";
    sig->target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    sig->aggregate = start2->aggregate;
    sig->payload_json = "{\"tracking\":\"T-1\"}";
    sig->signal_id = "sig-1";
    sig->buffer_ttl = duration(a, 60);
    s[k++] = (fuzz_seed){"SendSignal", "send_signal_aggregate", &sig->base};

    Workflow__V1__ListSignalsRequest *lsig = alloc(a, sizeof *lsig);
    workflow__v1__list_signals_request__init(lsig);
    lsig->target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    lsig->aggregate = start2->aggregate;
    lsig->page_size = 5;
    s[k++] = (fuzz_seed){"ListSignals", "list_signals", &lsig->base};

    Workflow__V1__SetVariablesRequest *setv = alloc(a, sizeof *setv);
    workflow__v1__set_variables_request__init(setv);
    setv->instance_id = (char *)EXAMPLE_ID;
    setv->variables_json = "{\"amount\":50}";
    s[k++] = (fuzz_seed){"SetVariables", "set_variables", &setv->base};

    /* 6 KiB of variables: a few of these on one tree reach the bound on
     * variables (VARIABLES_TOO_LARGE), and pages and activations of such
     * instances the bound on answers. */
    static char big[6 * 1024 + 16];
    memcpy(big, "{\"blob\":\"", 9);
    memset(big + 9, 'x', 6 * 1024);
    memcpy(big + 9 + 6 * 1024, "\"}", 3);
    Workflow__V1__SetVariablesRequest *setbig = alloc(a, sizeof *setbig);
    workflow__v1__set_variables_request__init(setbig);
    setbig->instance_id = (char *)EXAMPLE_ID;
    setbig->variables_json = big;
    s[k++] = (fuzz_seed){"SetVariables", "set_variables_large", &setbig->base};

    /* A move and an add on the example net's places. */
    Workflow__V1__ModifyInstanceRequest *mod = alloc(a, sizeof *mod);
    workflow__v1__modify_instance_request__init(mod);
    mod->instance_id = (char *)EXAMPLE_ID;
    mod->operations = alloc(a, 2 * sizeof *mod->operations);
    for (int i = 0; i < 2; i++) {
        Workflow__V1__TokenOperation *o = alloc(a, sizeof *o);
        workflow__v1__token_operation__init(o);
        mod->operations[mod->n_operations++] = o;
    }
    mod->operations[0]->kind = WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_MOVE;
    mod->operations[0]->place_id = "start";
    mod->operations[0]->to_place_id = "reviewed";
    mod->operations[1]->kind = WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_ADD;
    mod->operations[1]->place_id = "start";
    mod->operations[1]->count = 2;
    mod->variables_json = "{\"fixed\":true}";
    mod->reason = "repair";
    s[k++] = (fuzz_seed){"ModifyInstance", "modify_instance", &mod->base};

    /* A dry run to version 2 with one place mapping. */
    Workflow__V1__MigrateInstanceRequest *mig = alloc(a, sizeof *mig);
    workflow__v1__migrate_instance_request__init(mig);
    mig->instance_id = (char *)EXAMPLE_ID;
    mig->target_version = 2;
    mig->place_mapping = alloc(a, sizeof *mig->place_mapping);
    Workflow__V1__PlaceMapping *pm = alloc(a, sizeof *pm);
    workflow__v1__place_mapping__init(pm);
    pm->from_place = "start";
    pm->to_place = "reviewed";
    mig->place_mapping[mig->n_place_mapping++] = pm;
    mig->dry_run = true;
    s[k++] = (fuzz_seed){"MigrateInstance", "migrate_instance", &mig->base};

    Workflow__V1__RetryInstanceRequest *retry = alloc(a, sizeof *retry);
    workflow__v1__retry_instance_request__init(retry);
    retry->instance_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"RetryInstance", "retry_instance", &retry->base};

    Workflow__V1__SuspendInstanceRequest *susp = alloc(a, sizeof *susp);
    workflow__v1__suspend_instance_request__init(susp);
    susp->instance_id = (char *)EXAMPLE_ID;
    susp->reason = "audit";
    s[k++] = (fuzz_seed){"SuspendInstance", "suspend_instance", &susp->base};

    Workflow__V1__ResumeInstanceRequest *resume = alloc(a, sizeof *resume);
    workflow__v1__resume_instance_request__init(resume);
    resume->instance_id = (char *)EXAMPLE_ID;
    s[k++] = (fuzz_seed){"ResumeInstance", "resume_instance", &resume->base};

    Workflow__V1__ListWorkItemsRequest *items = alloc(a, sizeof *items);
    workflow__v1__list_work_items_request__init(items);
    items->instance_id = (char *)EXAMPLE_ID;
    items->states = alloc(a, 2 * sizeof *items->states);
    items->states[items->n_states++] = WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_FINISHED;
    items->states[items->n_states++] = WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_CANCELLED;
    items->page_size = 5;
    s[k++] = (fuzz_seed){"ListWorkItems", "list_work_items", &items->base};

    /* A batch SUSPEND of one definition's running instances. */
    Workflow__V1__StartBatchOperationRequest *batch = alloc(a, sizeof *batch);
    workflow__v1__start_batch_operation_request__init(batch);
    batch->filter = alloc(a, sizeof *batch->filter);
    workflow__v1__instance_filter__init(batch->filter);
    batch->filter->started_by = "*";
    batch->filter->definition_key = "order";
    batch->filter->status = WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING;
    batch->action = WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_SUSPEND;
    batch->reason = "audit";
    s[k++] = (fuzz_seed){"StartBatchOperation", "start_batch_operation", &batch->base};

    Workflow__V1__RunSchedulerPassRequest *tick = alloc(a, sizeof *tick);
    workflow__v1__run_scheduler_pass_request__init(tick);
    s[k++] = (fuzz_seed){"RunSchedulerPass", "run_scheduler_pass", &tick->base};

    *n = k;
    return s;
}

/* ---- net JSON ------------------------------------------------------------------- */

const char *const fuzz_seed_net_json[] = {
    /* The seed net, as wf_net_to_json writes it (sorted keys, defaults explicit). */
    "{\"arcs\":[{\"source\":\"start\",\"target\":\"review\",\"weight\":1},"
    "{\"source\":\"review\",\"target\":\"reviewed\",\"weight\":1},"
    "{\"source\":\"reviewed\",\"target\":\"route\",\"weight\":1},"
    "{\"guard\":\".amount > 100\",\"source\":\"route\",\"target\":\"ready\",\"weight\":1},"
    "{\"is_default\":true,\"source\":\"route\",\"target\":\"end\",\"weight\":1},"
    "{\"source\":\"ready\",\"target\":\"ship\",\"weight\":1},"
    "{\"source\":\"ship\",\"target\":\"end\",\"weight\":1},"
    "{\"source\":\"ready\",\"target\":\"timeout\",\"weight\":1},"
    "{\"source\":\"timeout\",\"target\":\"end\",\"weight\":1},"
    "{\"source\":\"ready\",\"target\":\"paid\",\"weight\":1},"
    "{\"source\":\"paid\",\"target\":\"end\",\"weight\":1}],"
    "\"description\":\"seed\",\"key\":\"fuzz-net\",\"name\":\"fuzz seed net\","
    "\"places\":[{\"id\":\"start\",\"kind\":\"START\"},{\"id\":\"reviewed\",\"kind\":\"NORMAL\"},"
    "{\"id\":\"ready\",\"kind\":\"NORMAL\"},{\"id\":\"end\",\"kind\":\"END\"}],"
    "\"termination\":\"EXPLICIT\","
    "\"transitions\":[{\"assignee\":{\"ids\":[\"fuzz\"],\"kind\":\"USER\"},\"id\":\"review\","
    "\"trigger\":\"USER\"},{\"id\":\"route\",\"trigger\":\"AUTO\"},"
    "{\"id\":\"ship\",\"job_type\":\"ship\",\"lease_ms\":60000,\"retry\":{\"initial_backoff_ms\":"
    "1000,\"max_attempts\":2,\"max_backoff_ms\":10000,\"multiplier\":2.0},\"trigger\":\"AUTO\"},"
    "{\"delay_ms\":3600000,\"id\":\"timeout\",\"trigger\":\"TIME\"},"
    "{\"correlation\":\"INSTANCE\",\"id\":\"paid\",\"signal_name\":\"paid\",\"trigger\":\"MSG\"}]}",

    /* Parallel split into a USERS quorum join with ids_expression, a
     * due_expression timer that cancels, implicit termination and weights. */
    "{\"key\":\"fuzz-split\",\"termination\":\"IMPLICIT\",\"valid_from\":1700000000000000,"
    "\"places\":[{\"id\":\"s\",\"kind\":\"START\"},{\"id\":\"a\"},{\"id\":\"b\"},"
    "{\"id\":\"e\",\"kind\":\"END\"}],"
    "\"transitions\":[{\"id\":\"split\",\"trigger\":\"AUTO\"},"
    "{\"id\":\"vote\",\"trigger\":\"USER\",\"assignee\":{\"kind\":\"USERS\","
    "\"ids_expression\":\".reviewers\"},\"completion\":{\"mode\":\"QUORUM\",\"quorum\":1}},"
    "{\"id\":\"late\",\"trigger\":\"TIME\",\"due_expression\":\".due\",\"cancels\":[\"a\"]},"
    "{\"id\":\"join\",\"trigger\":\"AUTO\",\"job_type\":\"merge\","
    "\"compensation_job_type\":\"unmerge\"}],"
    "\"arcs\":[{\"source\":\"s\",\"target\":\"split\"},{\"source\":\"split\",\"target\":\"a\"},"
    "{\"source\":\"split\",\"target\":\"b\",\"weight\":2},{\"source\":\"a\",\"target\":\"vote\"},"
    "{\"source\":\"vote\",\"target\":\"e\",\"guard\":\".approved\"},"
    "{\"source\":\"vote\",\"target\":\"b\",\"is_default\":true},"
    "{\"source\":\"b\",\"target\":\"late\",\"weight\":2},{\"source\":\"late\",\"target\":\"e\"},"
    "{\"source\":\"b\",\"target\":\"join\"},{\"source\":\"join\",\"target\":\"e\"}]}",

    /* Invalid on purpose: findings of several kinds. */
    "{\"key\":\"bad key\",\"places\":[{\"id\":\"p\",\"kind\":\"START\"},{\"id\":\"p\"}],"
    "\"transitions\":[{\"id\":\"t\",\"trigger\":\"USER\",\"job_type\":\"x\"}],"
    "\"arcs\":[{\"source\":\"t\",\"target\":\"p\",\"guard\":\"range(1)\"},"
    "{\"source\":\"p\",\"target\":\"q\",\"weight\":1000}]}",

    /* An ad-hoc shape: no net elements. */
    "{\"key\":\"fuzz-adhoc\",\"name\":\"ad hoc\",\"valid_until\":4102444800000000}",
    NULL,
};
