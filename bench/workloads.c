/*
 * The workloads of wfbench. Each has an optional setup (deploy a small net,
 * pre-build a pool of instances or jobs, or insert rows), and an operation
 * run in a loop by every load thread. An RPC answering UNIMPLEMENTED turns
 * the workload into "n/a (not implemented)"; setups probe the RPCs they
 * depend on first, so that a missing feature costs no pool building.
 *
 * Names made here carry the run id (b->run_id), so runs against the same
 * database never collide.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "bench.h"
#include "grpc/health/v1/health.pb-c.h"
#include "workflow/v1/workflow.pb-c.h"

#define SIGNAL_NAME "bench-paid"
#define INBOX_KEY "bench-inbox"
#define FLEET_KEY "bench-fleet"

static int
opres(int code)
{
    if (code == 0)
        return OP_OK;
    return code == GRPC_STATUS_UNIMPLEMENTED ? OP_NA : OP_FAIL;
}

static unsigned
rnd(worker *w)
{
    w->rng = w->rng * 1103515245u + 12345u;
    return (w->rng >> 8) & 0xffffff;
}

/* ---- RPC helpers ------------------------------------------------------- */

static int
rpc_health(worker *w)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_HEALTH, &req.base, &grpc__health__v1__health_check_response__descriptor,
                     &resp, 0);
    if (code != 0)
        return opres(code);
    Grpc__Health__V1__HealthCheckResponse *r = (Grpc__Health__V1__HealthCheckResponse *)resp;
    int ok = r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    protobuf_c_message_free_unpacked(resp, NULL);
    if (!ok)
        w->mismatches++;
    return ok ? OP_OK : OP_FAIL;
}

static int
rpc_start(worker *w, const char *key, const char *vars, const char *agg_type, const char *agg_id,
          char *id, size_t idlen)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    char rid[96];
    req.definition_key = (char *)key;
    req.variables_json = (char *)vars;
    if (agg_type != NULL) {
        agg.type = (char *)agg_type;
        agg.id = (char *)agg_id;
        req.aggregate = &agg;
    }
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_START, &req.base, &workflow__v1__start_instance_response__descriptor, &resp, 0);
    if (code != 0)
        return opres(code);
    Workflow__V1__StartInstanceResponse *r = (Workflow__V1__StartInstanceResponse *)resp;
    if (id != NULL)
        snprintf(id, idlen, "%s", r->instance != NULL ? r->instance->id : "");
    protobuf_c_message_free_unpacked(resp, NULL);
    return OP_OK;
}

/* AssignTo one personal task for the bench actor; the task id in task. */
static int
rpc_assign(worker *w, const char *parent, char *task, size_t tlen)
{
    Workflow__V1__AssignToRequest req = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee asg = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {(char *)w->run->b->actor};
    char rid[96];
    asg.kind = WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER;
    asg.n_ids = 1;
    asg.ids = ids;
    req.parent_instance_id = (char *)parent;
    req.title = "review the order";
    req.assignee = &asg;
    req.variables_json = "{\"step\":\"review\"}";
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_ASSIGN_TO, &req.base, &workflow__v1__assign_to_response__descriptor, &resp, 0);
    if (code != 0)
        return opres(code);
    Workflow__V1__AssignToResponse *r = (Workflow__V1__AssignToResponse *)resp;
    snprintf(task, tlen, "%s", r->task != NULL ? r->task->id : "");
    protobuf_c_message_free_unpacked(resp, NULL);
    if (task[0] == '\0') {
        w->mismatches++;
        return OP_FAIL;
    }
    return OP_OK;
}

static int
rpc_get_task(worker *w, const char *task)
{
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    req.task_id = (char *)task;
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_GET_TASK, &req.base, &workflow__v1__get_task_response__descriptor, &resp, 0);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return opres(code);
}

/* ListTasks of user ("" = the actor); *ntasks gets the page length. */
static int
rpc_list_tasks(worker *w, const char *user, int page_size, size_t *ntasks)
{
    Workflow__V1__ListTasksRequest req = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    req.user = (char *)user;
    req.page_size = page_size;
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_LIST_TASKS, &req.base, &workflow__v1__list_tasks_response__descriptor, &resp, 0);
    if (code != 0)
        return opres(code);
    *ntasks = ((Workflow__V1__ListTasksResponse *)resp)->n_tasks;
    protobuf_c_message_free_unpacked(resp, NULL);
    return OP_OK;
}

static int
rpc_claim(worker *w, const char *task)
{
    Workflow__V1__ClaimTaskRequest req = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    char rid[96];
    req.task_id = (char *)task;
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_CLAIM_TASK, &req.base, &workflow__v1__claim_task_response__descriptor, &resp, 0);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return opres(code);
}

static int
rpc_complete_task(worker *w, const char *task)
{
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    char rid[96];
    req.task_id = (char *)task;
    req.variables_json = "{\"approved\":true}";
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_COMPLETE_TASK, &req.base,
                     &workflow__v1__complete_task_response__descriptor, &resp, 0);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return opres(code);
}

/* ActivateJobs; *resp (caller frees) holds the jobs on OP_OK. */
static int
rpc_activate(worker *w, const char *job_type, int max_jobs, int wait_s,
             Workflow__V1__ActivateJobsResponse **out)
{
    Workflow__V1__ActivateJobsRequest req = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    Google__Protobuf__Duration lease = GOOGLE__PROTOBUF__DURATION__INIT;
    Google__Protobuf__Duration wait = GOOGLE__PROTOBUF__DURATION__INIT;
    char worker_name[32], rid[96];
    snprintf(worker_name, sizeof worker_name, "wfbench-%d", w->idx);
    req.job_type = (char *)job_type;
    req.worker = worker_name;
    req.max_jobs = max_jobs;
    lease.seconds = 300;
    req.lease = &lease;
    if (wait_s > 0) {
        wait.seconds = wait_s;
        req.wait = &wait;
    }
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code =
        bcall(w, M_ACTIVATE_JOBS, &req.base, &workflow__v1__activate_jobs_response__descriptor,
              &resp, wait_s > 0 ? (wait_s + 10) * 1000 : 0);
    if (code != 0)
        return opres(code);
    *out = (Workflow__V1__ActivateJobsResponse *)resp;
    return OP_OK;
}

static int
rpc_complete_job(worker *w, const char *key)
{
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    char rid[96];
    req.job_key = (char *)key;
    req.variables_json = "{\"charged\":true}";
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_COMPLETE_JOB, &req.base, &workflow__v1__complete_job_response__descriptor,
                     &resp, 0);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return opres(code);
}

/* SendSignal by aggregate (or, when agg_type is NULL, to instance_id). */
static int
rpc_signal(worker *w, const char *name, const char *agg_type, const char *agg_id,
           const char *instance_id, Workflow__V1__SignalOutcome *outcome)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    char rid[96];
    req.name = (char *)name;
    if (agg_type != NULL) {
        agg.type = (char *)agg_type;
        agg.id = (char *)agg_id;
        req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
        req.aggregate = &agg;
    } else {
        req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
        req.instance_id = (char *)instance_id;
    }
    req.payload_json = "{\"paid\":true}";
    req.request_id = (char *)bench_request_id(w, rid, sizeof rid);
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_SEND_SIGNAL, &req.base, &workflow__v1__send_signal_response__descriptor,
                     &resp, 0);
    if (code != 0)
        return opres(code);
    *outcome = ((Workflow__V1__SendSignalResponse *)resp)->outcome;
    protobuf_c_message_free_unpacked(resp, NULL);
    return OP_OK;
}

/* ---- net definitions --------------------------------------------------- */

/* A linear net START -> t1 -> (p1 -> t2 ->) END, built in place. */
typedef struct net {
    Workflow__V1__Definition def;
    Workflow__V1__Place pl[3];
    Workflow__V1__Place *plp[3];
    Workflow__V1__Transition tr[2];
    Workflow__V1__Transition *trp[2];
    Workflow__V1__Arc arc[4];
    Workflow__V1__Arc *arcp[4];
    Workflow__V1__Assignee asg;
    char *asg_ids[1];
    Google__Protobuf__Duration delay;
} net;

static Workflow__V1__Transition *
net_init(net *n, const char *key, int two_steps)
{
    static const Workflow__V1__Definition def0 = WORKFLOW__V1__DEFINITION__INIT;
    static const Workflow__V1__Place pl0 = WORKFLOW__V1__PLACE__INIT;
    static const Workflow__V1__Transition tr0 = WORKFLOW__V1__TRANSITION__INIT;
    static const Workflow__V1__Arc arc0 = WORKFLOW__V1__ARC__INIT;
    static const Workflow__V1__Assignee asg0 = WORKFLOW__V1__ASSIGNEE__INIT;
    static const Google__Protobuf__Duration dur0 = GOOGLE__PROTOBUF__DURATION__INIT;
    memset(n, 0, sizeof *n);
    n->def = def0;
    n->asg = asg0;
    n->delay = dur0;
    n->def.key = (char *)key;
    n->def.name = "wfbench";
    n->def.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET;
    const char *pids[3] = {"start", "end", "p1"};
    Workflow__V1__PlaceKind kinds[3] = {WORKFLOW__V1__PLACE_KIND__PLACE_KIND_START,
                                        WORKFLOW__V1__PLACE_KIND__PLACE_KIND_END,
                                        WORKFLOW__V1__PLACE_KIND__PLACE_KIND_NORMAL};
    int np = two_steps ? 3 : 2;
    for (int i = 0; i < np; i++) {
        n->pl[i] = pl0;
        n->pl[i].id = (char *)pids[i];
        n->pl[i].kind = kinds[i];
        n->plp[i] = &n->pl[i];
    }
    n->def.n_places = (size_t)np;
    n->def.places = n->plp;
    int nt = two_steps ? 2 : 1;
    const char *tids[2] = {"t1", "t2"};
    for (int i = 0; i < nt; i++) {
        n->tr[i] = tr0;
        n->tr[i].id = (char *)tids[i];
        n->tr[i].name = (char *)tids[i];
        n->trp[i] = &n->tr[i];
    }
    n->def.n_transitions = (size_t)nt;
    n->def.transitions = n->trp;
    const char *src2[4] = {"start", "t1", "p1", "t2"};
    const char *dst2[4] = {"t1", "p1", "t2", "end"};
    const char *src1[2] = {"start", "t1"};
    const char *dst1[2] = {"t1", "end"};
    int na = two_steps ? 4 : 2;
    for (int i = 0; i < na; i++) {
        n->arc[i] = arc0;
        n->arc[i].source = (char *)(two_steps ? src2[i] : src1[i]);
        n->arc[i].target = (char *)(two_steps ? dst2[i] : dst1[i]);
        n->arcp[i] = &n->arc[i];
    }
    n->def.n_arcs = (size_t)na;
    n->def.arcs = n->arcp;
    return n->tr;
}

/* Deploys n on the setup client: 0, OP_NA, or -1 with the error in r. */
static int
deploy(run *r, net *n)
{
    worker w;
    setup_worker_init(&w, r);
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = &n->def;
    ProtobufCMessage *resp = NULL;
    int code = bcall(&w, M_DEPLOY, &req.base, &workflow__v1__deploy_definition_response__descriptor,
                     &resp, 0);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    if (code != 0 && code != GRPC_STATUS_UNIMPLEMENTED)
        snprintf(r->last_err, sizeof r->last_err, "%s", w.last_err);
    setup_worker_free(&w);
    return code == 0 ? 0 : code == GRPC_STATUS_UNIMPLEMENTED ? OP_NA : -1;
}

/* Runs one probe operation on the setup client: 0, OP_NA or -1. */
static int
probe(run *r, int (*fn)(worker *w))
{
    worker w;
    setup_worker_init(&w, r);
    int rc = fn(&w);
    if (rc == OP_FAIL)
        snprintf(r->last_err, sizeof r->last_err, "%s",
                 w.last_err[0] ? w.last_err : "unexpected answer");
    setup_worker_free(&w);
    return rc == OP_OK ? 0 : rc == OP_NA ? OP_NA : -1;
}

/* Fills a pool by running op on every thread for b->pool_s seconds or
 * until max units; returns the units made, or -1 (r->last_err / n/a set). */
static long long
fill_pool(run *r, int (*op)(worker *w), uint64_t max_units, double budget_s)
{
    run *p = calloc(1, sizeof *p);
    if (p == NULL)
        return -1;
    p->wl = r->wl;
    p->b = r->b;
    p->nthreads = r->nthreads;
    p->duration_s = budget_s;
    p->max_units = max_units;
    p->op = op;
    p->shared = r->shared;
    run_phase(p);
    long long n = (long long)p->units_done;
    if (atomic_load(&p->na)) {
        atomic_store(&r->na, 1);
        snprintf(r->na_method, sizeof r->na_method, "%s", p->na_method);
        snprintf(r->na_message, sizeof r->na_message, "%s", p->na_message);
        n = -1;
    } else if (n == 0) {
        snprintf(r->last_err, sizeof r->last_err, "setup made nothing: %.170s", p->last_err);
        n = -1;
    }
    free(p);
    return n;
}

/* ---- health: the floor cost of an RPC --------------------------------- */

static int
op_health(worker *w)
{
    int rc = rpc_health(w);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_health = {"health", "call", NULL, op_health, NULL, 0};

/* ---- read: GetTask through the whole interceptor chain ----------------- */

typedef struct shared_ids {
    char key[96];
    char job_type[96];
    char task[96];
    char instance[96];
    char agg_type[96];
    int max_jobs;
    uint64_t pool;
    long users;
} shared_ids;

static int
setup_read(run *r)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-read-%s", r->b->run_id);
    worker w;
    setup_worker_init(&w, r);
    int rc = rpc_start(&w, s->key, "{}", NULL, NULL, s->instance, sizeof s->instance);
    if (rc == OP_OK)
        rc = rpc_assign(&w, s->instance, s->task, sizeof s->task);
    if (rc == OP_FAIL)
        snprintf(r->last_err, sizeof r->last_err, "%s", w.last_err);
    if (rc == OP_NA) {
        atomic_store(&r->na, 1);
        snprintf(r->na_method, sizeof r->na_method, "%s", w.run->na_method);
    }
    setup_worker_free(&w);
    return rc == OP_OK ? 0 : rc == OP_NA ? OP_NA : -1;
}

static void
cleanup_shared(run *r)
{
    free(r->shared);
    r->shared = NULL;
}

static int
op_read(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_get_task(w, s->task);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_read = {"read", "call", setup_read, op_read, cleanup_shared, 0};

/* ---- start: StartInstance of an AD_HOC key ----------------------------- */

static int
setup_adhoc(run *r)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-%s-%s", r->wl->name, r->b->run_id);
    /* The first start creates the AD_HOC definition; do it before the
     * threads race for it. */
    worker w;
    setup_worker_init(&w, r);
    int rc = rpc_start(&w, s->key, "{}", NULL, NULL, NULL, 0);
    if (rc == OP_FAIL)
        snprintf(r->last_err, sizeof r->last_err, "%s", w.last_err);
    setup_worker_free(&w);
    return rc == OP_OK ? 0 : rc == OP_NA ? OP_NA : -1;
}

static int
op_start(worker *w)
{
    shared_ids *s = w->run->shared;
    char vars[96];
    snprintf(vars, sizeof vars, "{\"amount\":%u,\"customer\":\"c-%u\"}", rnd(w) % 5000,
             rnd(w) % 1000);
    int rc = rpc_start(w, s->key, vars, NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_start = {"start", "instance", setup_adhoc, op_start, cleanup_shared, 0};

/* ---- referral: start -> AssignTo user -> CompleteTask ------------------ */

static int
op_referral(worker *w)
{
    shared_ids *s = w->run->shared;
    char id[96], task[96];
    int rc = rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, id, sizeof id);
    if (rc == OP_OK)
        rc = rpc_assign(w, id, task, sizeof task);
    if (rc == OP_OK)
        rc = rpc_complete_task(w, task);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_referral = {"referral", "instance", setup_adhoc, op_referral, cleanup_shared, 0};

/* ---- flow: start -> AUTO job -> USER task claim/complete -> end -------- */

static int
setup_flow(run *r)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-flow-%s", r->b->run_id);
    snprintf(s->job_type, sizeof s->job_type, "bench-charge-%s", r->b->run_id);
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->key, 1);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[0].job_type = s->job_type;
    t[1].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_USER;
    t[1].name = "approve the order";
    n.asg.kind = WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP;
    n.asg_ids[0] = (char *)(r->b->actor_groups != NULL ? r->b->actor_groups : "benchers");
    n.asg.n_ids = 1;
    n.asg.ids = n.asg_ids;
    t[1].assignee = &n.asg;
    return deploy(r, &n);
}

static int
op_flow(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, NULL, 0);
    if (rc != OP_OK)
        return rc;
    Workflow__V1__ActivateJobsResponse *jobs = NULL;
    rc = rpc_activate(w, s->job_type, 1, 5, &jobs);
    if (rc != OP_OK)
        return rc;
    if (jobs->n_jobs == 0) {
        protobuf_c_message_free_unpacked(&jobs->base, NULL);
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "ActivateJobs returned no job within 5 s");
        return OP_FAIL;
    }
    char key[128], inst[96];
    snprintf(key, sizeof key, "%s", jobs->jobs[0]->key);
    snprintf(inst, sizeof inst, "%s", jobs->jobs[0]->instance_id);
    protobuf_c_message_free_unpacked(&jobs->base, NULL);
    rc = rpc_complete_job(w, key);
    if (rc != OP_OK)
        return rc;
    /* The USER task of the instance whose job this was. */
    Workflow__V1__GetInstanceRequest gi = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    gi.instance_id = inst;
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_GET_INSTANCE, &gi.base, &workflow__v1__get_instance_response__descriptor,
                     &resp, 0);
    if (code != 0)
        return opres(code);
    Workflow__V1__GetInstanceResponse *g = (Workflow__V1__GetInstanceResponse *)resp;
    char task[96] = "";
    for (size_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i]->status == WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN) {
            snprintf(task, sizeof task, "%s", g->tasks[i]->id);
            break;
        }
    protobuf_c_message_free_unpacked(resp, NULL);
    if (task[0] == '\0') {
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "no open task after CompleteJob");
        return OP_FAIL;
    }
    rc = rpc_claim(w, task);
    if (rc == OP_OK)
        rc = rpc_complete_task(w, task);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_flow = {"flow", "instance", setup_flow, op_flow, cleanup_shared, 0};

/* ---- jobs / jobs32: ActivateJobs + CompleteJob on a pre-built pool ----- */

static int
probe_activate(worker *w)
{
    Workflow__V1__ActivateJobsResponse *jobs = NULL;
    int rc = rpc_activate(w, "bench-no-such-job-type", 1, 0, &jobs);
    if (jobs != NULL)
        protobuf_c_message_free_unpacked(&jobs->base, NULL);
    return rc;
}

static int
op_start_pool(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

static int
setup_jobs(run *r, int max_jobs)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    s->max_jobs = max_jobs;
    snprintf(s->key, sizeof s->key, "bench-%s-%s", r->wl->name, r->b->run_id);
    snprintf(s->job_type, sizeof s->job_type, "bench-%s-%s", r->wl->name, r->b->run_id);
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->key, 0);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[0].job_type = s->job_type;
    int rc = deploy(r, &n);
    if (rc == 0)
        rc = probe(r, probe_activate);
    if (rc != 0)
        return rc;
    long long made = fill_pool(r, op_start_pool, r->b->pool_max, r->b->pool_s);
    if (made < 0)
        return atomic_load(&r->na) ? OP_NA : -1;
    s->pool = (uint64_t)made;
    return 0;
}

static int
setup_jobs1(run *r)
{
    return setup_jobs(r, 1);
}

static int
setup_jobs32(run *r)
{
    return setup_jobs(r, 32);
}

static int
op_jobs(worker *w)
{
    shared_ids *s = w->run->shared;
    Workflow__V1__ActivateJobsResponse *jobs = NULL;
    int rc = rpc_activate(w, s->job_type, s->max_jobs, 0, &jobs);
    if (rc != OP_OK)
        return rc;
    if (jobs->n_jobs == 0) {
        protobuf_c_message_free_unpacked(&jobs->base, NULL);
        return OP_DONE; /* the pool is used up */
    }
    int failed = 0;
    for (size_t i = 0; i < jobs->n_jobs; i++) {
        int c = rpc_complete_job(w, jobs->jobs[i]->key);
        if (c == OP_NA) {
            failed = OP_NA;
            break;
        }
        if (c == OP_OK)
            w->units++;
        else
            failed = OP_FAIL;
    }
    protobuf_c_message_free_unpacked(&jobs->base, NULL);
    return failed ? failed : OP_OK;
}

const workload wl_jobs = {"jobs", "job", setup_jobs1, op_jobs, cleanup_shared, 1};
const workload wl_jobs32 = {"jobs32", "job", setup_jobs32, op_jobs, cleanup_shared, 1};

/* ---- jobs-stream: StreamActivatedJobs + CompleteJobs on a pre-built pool -
 *
 * Each load thread holds one job stream (credit STREAM_CREDIT). An
 * operation waits for the next pushed job, takes whatever else has already
 * arrived (up to the credit), and completes them all with one CompleteJobs;
 * the completions give the credit back, so the server pushes the next jobs
 * while the batch is in flight. jobs-stream1: credit 1, each job completed
 * with CompleteJob (one job in flight per worker, as jobs). */

#define STREAM_CREDIT 32

static wf_client_stream **job_streams; /* one per load thread */
static int njob_streams;

static int
setup_jobs_stream_n(run *r, int credit)
{
    int rc = setup_jobs(r, credit);
    if (rc != 0)
        return rc;
    job_streams = calloc((size_t)r->nthreads + 1, sizeof *job_streams);
    njob_streams = r->nthreads;
    return job_streams != NULL ? 0 : -1;
}

static int
setup_jobs_stream(run *r)
{
    return setup_jobs_stream_n(r, STREAM_CREDIT);
}

static int
setup_jobs_stream1(run *r)
{
    return setup_jobs_stream_n(r, 1);
}

static void
cleanup_jobs_stream(run *r)
{
    for (int i = 0; i < njob_streams && job_streams != NULL; i++)
        wf_client_stream_close(job_streams[i]);
    free(job_streams);
    job_streams = NULL;
    njob_streams = 0;
    cleanup_shared(r);
}

static int
op_jobs_stream(worker *w)
{
    shared_ids *s = w->run->shared;
    if (w->idx >= njob_streams)
        return OP_FAIL;
    wf_client_stream **js = &job_streams[w->idx];
    if (*js == NULL) {
        Workflow__V1__StreamActivatedJobsRequest req =
            WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
        req.job_type = s->job_type;
        req.worker = "wfbench";
        req.credit = s->max_jobs;
        Google__Protobuf__Duration lease = GOOGLE__PROTOBUF__DURATION__INIT;
        lease.seconds = 300; /* as the jobs workload's ActivateJobs */
        req.lease = &lease;
        wf_client_call_opts o;
        memset(&o, 0, sizeof o);
        o.no_deadline = 1;
        *js = wf_client_stream_jobs(w->c, &req, &o);
        if (*js == NULL)
            return OP_FAIL;
    }
    Workflow__V1__Job *jobs[STREAM_CREDIT];
    size_t n = 0;
    wf_client_status st;
    /* The first job: a pool used up pushes nothing more. */
    int got = wf_client_next_job(*js, 2000, &jobs[0], &st);
    if (got < 0)
        return OP_DONE;
    if (got == 0) {
        wf_client_stream_close(*js);
        *js = NULL;
        if (st.code > 0 && st.code < 17)
            w->codes[st.code]++;
        snprintf(w->last_err, sizeof w->last_err, "StreamActivatedJobs: %s %.40s %.90s",
                 wf_client_code_name(st.code), st.reason, st.message);
        return st.code == GRPC_STATUS_UNIMPLEMENTED ? OP_NA : OP_FAIL;
    }
    n = 1;
    while (n < (size_t)s->max_jobs && wf_client_next_job(*js, 0, &jobs[n], &st) == 1)
        n++;
    if (s->max_jobs == 1) {
        int c = rpc_complete_job(w, jobs[0]->key);
        if (c == OP_OK)
            w->units++;
        protobuf_c_message_free_unpacked(&jobs[0]->base, NULL);
        return c;
    }
    Workflow__V1__CompleteJobRequest items[STREAM_CREDIT], *ptrs[STREAM_CREDIT];
    char rids[STREAM_CREDIT][96];
    for (size_t i = 0; i < n; i++) {
        workflow__v1__complete_job_request__init(&items[i]);
        items[i].job_key = jobs[i]->key;
        items[i].variables_json = "{\"charged\":true}";
        items[i].request_id = (char *)bench_request_id(w, rids[i], sizeof rids[i]);
        ptrs[i] = &items[i];
    }
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    req.completions = ptrs;
    req.n_completions = n;
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_COMPLETE_JOBS, &req.base,
                     &workflow__v1__complete_jobs_response__descriptor, &resp, 0);
    int rc = opres(code);
    if (code == 0) {
        Workflow__V1__CompleteJobsResponse *r = (void *)resp;
        for (size_t i = 0; i < r->n_results; i++) {
            if (r->results[i]->code == 0) {
                w->units++;
            } else {
                w->mismatches++;
                snprintf(w->last_err, sizeof w->last_err, "CompleteJobs item: %.40s %.120s",
                         r->results[i]->reason, r->results[i]->message);
            }
        }
    }
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&jobs[i]->base, NULL);
    return rc;
}

const workload wl_jobs_stream = {"jobs-stream",       "job", setup_jobs_stream, op_jobs_stream,
                                 cleanup_jobs_stream, 1};
const workload wl_jobs_stream1 = {"jobs-stream1",      "job", setup_jobs_stream1, op_jobs_stream,
                                  cleanup_jobs_stream, 1};

/* ---- signal: SendSignal by aggregate to instances waiting on MSG ------ */

static int
probe_signal(worker *w)
{
    Workflow__V1__SignalOutcome out = 0;
    int rc = rpc_signal(w, "bench-probe", "bench-probe", "none", NULL, &out);
    return rc;
}

static int
op_signal_pool(worker *w)
{
    shared_ids *s = w->run->shared;
    uint64_t k = atomic_fetch_add(&w->run->cursor, 1);
    char agg_id[32];
    snprintf(agg_id, sizeof agg_id, "o-%llu", (unsigned long long)k);
    int rc = rpc_start(w, s->key, "{\"amount\":42}", s->agg_type, agg_id, NULL, 0);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

static int
setup_signal(run *r)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-signal-%s", r->b->run_id);
    /* A new aggregate type per setup: instances left waiting by an earlier
     * run must not share aggregates with this pool. */
    static atomic_int setups;
    snprintf(s->agg_type, sizeof s->agg_type, "order-%s-%d", r->b->run_id,
             atomic_fetch_add(&setups, 1));
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->key, 0);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_MSG;
    t[0].signal_name = SIGNAL_NAME;
    t[0].correlation = WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE;
    int rc = deploy(r, &n);
    if (rc == 0)
        rc = probe(r, probe_signal);
    if (rc != 0)
        return rc;
    /* The pool's run numbers its aggregates o-0, o-1, ... with its cursor. */
    run *p = calloc(1, sizeof *p);
    if (p == NULL)
        return -1;
    p->wl = r->wl;
    p->b = r->b;
    p->nthreads = r->nthreads;
    p->duration_s = r->b->pool_s;
    p->max_units = r->b->pool_max;
    p->op = op_signal_pool;
    p->shared = s;
    run_phase(p);
    rc = 0;
    if (atomic_load(&p->na)) {
        atomic_store(&r->na, 1);
        snprintf(r->na_method, sizeof r->na_method, "%s", p->na_method);
        rc = OP_NA;
    } else if (p->units_done == 0) {
        snprintf(r->last_err, sizeof r->last_err, "setup made nothing: %.170s", p->last_err);
        rc = -1;
    }
    s->pool = atomic_load(&p->cursor); /* ids handed out, failed starts included */
    free(p);
    return rc;
}

static int
op_signal(worker *w)
{
    shared_ids *s = w->run->shared;
    uint64_t k = atomic_fetch_add(&w->run->cursor, 1);
    if (k >= s->pool)
        return OP_DONE;
    char agg_id[32];
    snprintf(agg_id, sizeof agg_id, "o-%llu", (unsigned long long)k);
    Workflow__V1__SignalOutcome out = 0;
    int rc = rpc_signal(w, SIGNAL_NAME, s->agg_type, agg_id, NULL, &out);
    if (rc != OP_OK)
        return rc;
    if (out != WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED) {
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "SendSignal outcome %d, not CORRELATED",
                 (int)out);
        return OP_FAIL;
    }
    w->units++;
    return OP_OK;
}

const workload wl_signal = {"signal", "signal", setup_signal, op_signal, cleanup_shared, 1};

/* ---- steps2: start -> job A -> job B -> end; the unit: COMPLETED --------- */

/* Counts instances of key in status (1 RUNNING, 2 COMPLETED); -1 on error. */
static long long
count_instances(const bench *b, const char *key, int status, char *err, size_t errlen)
{
    char sql[512], out[64];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM instances WHERE tenant_id = 'default' AND definition_key = "
             "'%s' AND status = %d",
             key, status);
    if (pg_exec(b, sql, out, sizeof out, err, errlen) != 0)
        return -1;
    return atoll(out);
}

/* The steps2 closed-loop run, for the SQL check after it. */
static struct {
    char key[96];
    long long completed0; /* COMPLETED instances of key before the run; -1 unknown */
} steps2_state;

static int
setup_steps2(run *r)
{
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-steps2-%s", r->b->run_id);
    /* job_type names step A; step B is job_type with "-b" (op_steps2). */
    snprintf(s->job_type, sizeof s->job_type, "bench-steps2-%s", r->b->run_id);
    snprintf(s->agg_type, sizeof s->agg_type, "bench-steps2-%s-b", r->b->run_id);
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->key, 1);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[0].job_type = s->job_type;
    t[1].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[1].job_type = s->agg_type;
    int rc = deploy(r, &n);
    if (rc == 0)
        rc = probe(r, probe_activate);
    if (rc != 0)
        return rc;
    char err[256];
    snprintf(steps2_state.key, sizeof steps2_state.key, "%s", s->key);
    steps2_state.completed0 =
        r->b->dsn != NULL ? count_instances(r->b, s->key, 2, err, sizeof err) : -1;
    return 0;
}

/* Activates one job of type (long poll 5 s) and completes it. */
static int
step_one(worker *w, const char *type)
{
    Workflow__V1__ActivateJobsResponse *jobs = NULL;
    int rc = rpc_activate(w, type, 1, 5, &jobs);
    if (rc != OP_OK)
        return rc;
    if (jobs->n_jobs == 0) {
        protobuf_c_message_free_unpacked(&jobs->base, NULL);
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "ActivateJobs of %.40s: no job within 5 s", type);
        return OP_FAIL;
    }
    char key[128];
    snprintf(key, sizeof key, "%s", jobs->jobs[0]->key);
    protobuf_c_message_free_unpacked(&jobs->base, NULL);
    return rpc_complete_job(w, key);
}

/* One instance through both steps. The threads share the job types, so
 * the jobs one thread completes may belong to another thread's instance;
 * every thread starts one instance and completes one job of each step, so
 * the instances finish at the rate of the operations. The units are then
 * taken from the database (bench_steps2_check). */
static int
op_steps2(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        rc = step_one(w, s->job_type);
    if (rc == OP_OK)
        rc = step_one(w, s->agg_type);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_steps2 = {"steps2", "instance", setup_steps2, op_steps2, cleanup_shared, 0};

void
bench_steps2_check(bench *b, result *res)
{
    if (res->status != RS_OK || res->units == 0 || res->units_per_s <= 0)
        return;
    char err[256];
    long long now = steps2_state.completed0 >= 0
                        ? count_instances(b, steps2_state.key, 2, err, sizeof err)
                        : -1;
    size_t l = strlen(res->note);
    if (now < 0) {
        snprintf(res->note + l, sizeof res->note - l,
                 "%sunits are operations (no COMPLETED count: needs --dsn)", l ? "; " : "");
        return;
    }
    double el = (double)res->units / res->units_per_s;
    uint64_t done = (uint64_t)(now - steps2_state.completed0);
    if (done < res->units)
        res->mismatches += res->units - done;
    snprintf(res->note + l, sizeof res->note - l,
             "%s%llu instances COMPLETED in the database for %llu operations", l ? "; " : "",
             (unsigned long long)done, (unsigned long long)res->units);
    /* The unit is a COMPLETED instance, counted by the database. */
    if (done > 0)
        cost_scale(&res->cost, (double)res->units / (double)done);
    res->units = done;
    res->units_per_s = (double)done / el;
}

/* ---- backlog: jobs with 1k and with 100k waiting jobs of the same type ---- */

/* One job type and key for both sizes: the large run tops the small one's
 * backlog up. */
static struct {
    int deployed;
    char key[96];
    long long have; /* waiting jobs (counted with SQL when there is a --dsn) */
    int analyze_held;
} backlog_state;

double
bench_backlog_budget(const bench *b)
{
    double t = 4 * b->duration_s;
    return t < 30 ? 30 : t > 300 ? 300 : t;
}

static int
setup_backlog(run *r, long size)
{
    bench *b = r->b;
    char err[256];
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-backlog-%s", b->run_id);
    snprintf(s->job_type, sizeof s->job_type, "bench-backlog-%s", b->run_id);
    if (!backlog_state.deployed) {
        /* A backlog that builds up faster than autovacuum analyzes, as a
         * burst does: no auto-ANALYZE of jobs until the large run is over
         * (cleanup_backlog), so that the planner has not seen the backlog,
         * whatever the speed of the setup. Vacuum still runs. */
        if (b->dsn != NULL &&
            pg_exec(b, "ALTER TABLE jobs SET (autovacuum_analyze_threshold = 2000000000)", NULL, 0,
                    err, sizeof err) == 0)
            backlog_state.analyze_held = 1;
        net n;
        Workflow__V1__Transition *t = net_init(&n, s->key, 0);
        t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
        t[0].job_type = s->job_type;
        int rc = deploy(r, &n);
        if (rc == 0)
            rc = probe(r, probe_activate);
        if (rc != 0)
            return rc;
        backlog_state.deployed = 1;
        snprintf(backlog_state.key, sizeof backlog_state.key, "%s", s->key);
    }
    /* Each instance of the net waits on one job of the type until it is
     * completed, so RUNNING instances = waiting jobs. */
    long long have =
        b->dsn != NULL ? count_instances(b, s->key, 1, err, sizeof err) : backlog_state.have;
    if (have < 0) {
        snprintf(r->last_err, sizeof r->last_err, "counting the backlog: %.150s", err);
        return -1;
    }
    if (have < size) {
        double t = bench_now();
        /* At most 4 x --duration (40 s in quick mode, 120 s in the full
         * run): a slower server gets a smaller backlog, and the row says
         * how large. */
        double budget = bench_backlog_budget(b);
        /* Without request ids: the backlog is setup, and its jobs are the
         * same rows either way. */
        int rids = b->use_request_ids;
        b->use_request_ids = 0;
        long long made = fill_pool(r, op_start_pool, (uint64_t)(size - have), budget);
        b->use_request_ids = rids;
        if (made < 0)
            return atomic_load(&r->na) ? OP_NA : -1;
        have += made;
        fprintf(stderr, "wfbench: backlog: started %lld instances in %.1f s (StartInstance)\n",
                made, bench_now() - t);
    }
    backlog_state.have = have;
    s->pool = (uint64_t)have;
    return 0;
}

static int
setup_backlog_small(run *r)
{
    return setup_backlog(r, r->b->backlog / 100 > 0 ? r->b->backlog / 100 : 1);
}

static int
setup_backlog_large(run *r)
{
    return setup_backlog(r, r->b->backlog);
}

/* ActivateJobs (max_jobs 1) -> CompleteJob, then one StartInstance that
 * puts a new job at the tail, so that the backlog keeps its size (within
 * the number of threads) however long the run. */
static int
op_backlog(worker *w)
{
    shared_ids *s = w->run->shared;
    Workflow__V1__ActivateJobsResponse *jobs = NULL;
    int rc = rpc_activate(w, s->job_type, 1, 0, &jobs);
    if (rc != OP_OK)
        return rc;
    if (jobs->n_jobs == 0) {
        protobuf_c_message_free_unpacked(&jobs->base, NULL);
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "ActivateJobs: no job in a backlog of %llu",
                 (unsigned long long)s->pool);
        return OP_FAIL;
    }
    char key[128];
    snprintf(key, sizeof key, "%s", jobs->jobs[0]->key);
    protobuf_c_message_free_unpacked(&jobs->base, NULL);
    rc = rpc_complete_job(w, key);
    if (rc != OP_OK)
        return rc;
    w->units++;
    return rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, NULL, 0);
}

static void
cleanup_backlog(run *r)
{
    char err[256];
    if (backlog_state.analyze_held &&
        pg_exec(r->b, "ALTER TABLE jobs RESET (autovacuum_analyze_threshold)", NULL, 0, err,
                sizeof err) == 0)
        backlog_state.analyze_held = 0;
    cleanup_shared(r);
}

long
bench_backlog_size(void)
{
    return (long)backlog_state.have;
}

const workload wl_backlog_small = {"backlog",  "job",          setup_backlog_small,
                                   op_backlog, cleanup_shared, 0};
const workload wl_backlog_large = {"backlog",  "job",           setup_backlog_large,
                                   op_backlog, cleanup_backlog, 0};

/* ---- inbox: ListTasks of one user among many open tasks ---------------- */

static int
setup_inbox(run *r)
{
    bench *b = r->b;
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    s->users = b->inbox_rows / 100 > 0 ? b->inbox_rows / 100 : 1;
    char out[64], err[256], sql[2048];
    if (pg_exec(b,
                "SELECT count(*) FROM tasks WHERE tenant_id = 'default' AND definition_key = "
                "'" INBOX_KEY "'",
                out, sizeof out, err, sizeof err) != 0) {
        snprintf(r->last_err, sizeof r->last_err, "inbox setup: %.180s", err);
        return -1;
    }
    long have = atol(out);
    if (have < b->inbox_rows) {
        /* Bypasses the API: open personal tasks of s->users users (100 each),
         * rows shaped like the ones AssignTo writes. */
        snprintf(sql, sizeof sql,
                 "INSERT INTO tasks (tenant_id, id, root_id, instance_id, definition_key, title, "
                 "assignee_kind, assignee_id, assigned_by, status, created_at) "
                 "SELECT 'default', 'bench-inbox-' || lpad(g::text, 9, '0'), "
                 "'bench-inbox-root-' || (g %% %ld), 'bench-inbox-root-' || (g %% %ld), '" INBOX_KEY
                 "', 'inbox task ' || g, 1, 'inbox-user-' || (g %% %ld), 'wfbench', 1, "
                 "1700000000000000 + g FROM generate_series(%ld, %ld) g ON CONFLICT DO NOTHING",
                 s->users, s->users, s->users, have + 1, b->inbox_rows);
        double t = bench_now();
        if (pg_exec(b, sql, NULL, 0, err, sizeof err) != 0 ||
            /* VACUUM too: a table full of never-read rows makes the first
             * reads set hint bits and dirty every page, which long-lived
             * tables do not pay. */
            pg_exec(b, "VACUUM ANALYZE tasks", NULL, 0, err, sizeof err) != 0) {
            snprintf(r->last_err, sizeof r->last_err, "inbox setup: %.180s", err);
            return -1;
        }
        fprintf(stderr, "wfbench: inbox: inserted %ld task rows in %.1f s (SQL, not the API)\n",
                b->inbox_rows - have, bench_now() - t);
    }
    return 0;
}

static int
op_inbox(worker *w)
{
    shared_ids *s = w->run->shared;
    char user[48];
    snprintf(user, sizeof user, "inbox-user-%ld", (long)(rnd(w) % (unsigned)s->users));
    size_t n = 0;
    int rc = rpc_list_tasks(w, user, 0, &n);
    if (rc != OP_OK)
        return rc;
    if (n == 0) {
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "ListTasks of %s returned no task", user);
        return OP_FAIL;
    }
    w->units++;
    return OP_OK;
}

const workload wl_inbox = {"inbox", "call", setup_inbox, op_inbox, cleanup_shared, 0};

/* ---- fleet: a definition's live totals over many running instances ---- */

/* Bypasses the API, as the inbox rows do: b->fleet_rows RUNNING roots of
 * FLEET_KEY version v (every hundredth FAILED at t1), each with one token
 * and one ENABLED work item, half before t1 and half before t2, shaped
 * like the rows a start and a first job write. */
static int
fleet_grow(run *r, int version, long have)
{
    bench *b = r->b;
    char err[256], sql[4096];
    snprintf(sql, sizeof sql,
             "INSERT INTO instances (tenant_id, id, root_id, definition_key, definition_version, "
             "status, started_by, created_at, updated_at, version, incident_code, "
             "incident_transition_id, incident_at) SELECT 'default', 'bench-fleet-' || "
             "lpad(g::text, 9, '0'), 'bench-fleet-' || lpad(g::text, 9, '0'), '" FLEET_KEY "', %d, "
             "CASE WHEN g %% 100 = 0 THEN 4 ELSE 1 END, 'wfbench', 1700000000000000 + g, "
             "1700000000000000 + g, 1, CASE WHEN g %% 100 = 0 THEN 'JOB_FAILED' END, CASE WHEN g "
             "%% 100 = 0 THEN 't1' END, CASE WHEN g %% 100 = 0 THEN 1700000000000000 + g ELSE 0 "
             "END FROM generate_series(%ld, %ld) g ON CONFLICT DO NOTHING;"
             "INSERT INTO tokens (tenant_id, id, root_id, instance_id, place_id, created_seq) "
             "SELECT 'default', 'bench-fleet-k' || g, 'bench-fleet-' || lpad(g::text, 9, '0'), "
             "'bench-fleet-' || lpad(g::text, 9, '0'), CASE WHEN g %% 2 = 0 THEN 'start' ELSE "
             "'p1' END, 1 FROM generate_series(%ld, %ld) g ON CONFLICT DO NOTHING;"
             "INSERT INTO work_items (tenant_id, id, root_id, instance_id, transition_id, trigger, "
             "token_ids, state, enabled_at) SELECT 'default', 'bench-fleet-w' || g, 'bench-fleet-' "
             "|| lpad(g::text, 9, '0'), 'bench-fleet-' || lpad(g::text, 9, '0'), CASE WHEN g %% 2 "
             "= 0 THEN 't1' ELSE 't2' END, 2, 'bench-fleet-k' || g, 1, 1700000000000000 + g FROM "
             "generate_series(%ld, %ld) g ON CONFLICT DO NOTHING",
             version, have + 1, b->fleet_rows, have + 1, b->fleet_rows, have + 1, b->fleet_rows);
    double t = bench_now();
    if (pg_exec(b, sql, NULL, 0, err, sizeof err) != 0 ||
        pg_exec(b, "VACUUM ANALYZE instances", NULL, 0, err, sizeof err) != 0 ||
        pg_exec(b, "VACUUM ANALYZE tokens", NULL, 0, err, sizeof err) != 0 ||
        pg_exec(b, "VACUUM ANALYZE work_items", NULL, 0, err, sizeof err) != 0) {
        snprintf(r->last_err, sizeof r->last_err, "fleet setup: %.180s", err);
        return -1;
    }
    fprintf(stderr, "wfbench: fleet: inserted %ld live instances in %.1f s (SQL, not the API)\n",
            b->fleet_rows - have, bench_now() - t);
    return 0;
}

static int
setup_fleet(run *r)
{
    bench *b = r->b;
    shared_ids *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    r->shared = s;
    snprintf(s->key, sizeof s->key, FLEET_KEY);
    net n;
    Workflow__V1__Transition *t = net_init(&n, FLEET_KEY, 1);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[0].job_type = "bench-fleet.first";
    t[1].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[1].job_type = "bench-fleet.second";
    int rc = deploy(r, &n);
    if (rc != 0)
        return rc;
    char out[64], err[256];
    if (pg_exec(b, "SELECT max(version) FROM definitions WHERE key = '" FLEET_KEY "'", out,
                sizeof out, err, sizeof err) != 0) {
        snprintf(r->last_err, sizeof r->last_err, "fleet setup: %.180s", err);
        return -1;
    }
    int version = atoi(out);
    if (pg_exec(b,
                "SELECT count(*) FROM instances WHERE tenant_id = 'default' AND definition_key = "
                "'" FLEET_KEY "' AND status IN (1, 4)",
                out, sizeof out, err, sizeof err) != 0) {
        snprintf(r->last_err, sizeof r->last_err, "fleet setup: %.180s", err);
        return -1;
    }
    long have = atol(out);
    s->users = b->fleet_rows;
    return have < b->fleet_rows ? fleet_grow(r, version, have) : 0;
}

static int
op_fleet(worker *w)
{
    shared_ids *s = w->run->shared;
    Workflow__V1__GetDefinitionStatisticsRequest req =
        WORKFLOW__V1__GET_DEFINITION_STATISTICS_REQUEST__INIT;
    req.definition_key = s->key;
    ProtobufCMessage *resp = NULL;
    int code = bcall(w, M_DEFINITION_STATISTICS, &req.base,
                     &workflow__v1__get_definition_statistics_response__descriptor, &resp, 0);
    if (code != 0)
        return opres(code);
    long long live = ((Workflow__V1__GetDefinitionStatisticsResponse *)resp)->live_instances;
    protobuf_c_message_free_unpacked(resp, NULL);
    if (live < s->users) {
        w->mismatches++;
        snprintf(w->last_err, sizeof w->last_err, "%lld live instances, want %ld", live, s->users);
        return OP_FAIL;
    }
    w->units++;
    return OP_OK;
}

const workload wl_fleet = {"fleet", "call", setup_fleet, op_fleet, cleanup_shared, 0};

/* ---- soak: a mix of the implemented RPCs, for RSS growth and for the
 * throughput of its first and last minute ------------------------------- */

static int
setup_soak(run *r)
{
    int rc = setup_adhoc(r);
    if (rc != 0)
        return rc;
    /* A net of one AUTO job, whose key is also its job type: the soak's
     * job step works the head of one queue for the whole soak. */
    shared_ids *s = r->shared;
    snprintf(s->job_type, sizeof s->job_type, "bench-soak-job-%s", r->b->run_id);
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->job_type, 0);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_AUTO;
    t[0].job_type = s->job_type;
    rc = deploy(r, &n);
    if (rc == 0)
        rc = probe(r, probe_activate);
    return rc;
}

static int
op_soak(worker *w)
{
    shared_ids *s = w->run->shared;
    char id[96], task[96];
    size_t n = 0;
    /* Every thread starts one job before it activates one, so there is
     * always one waiting for it. */
    int rc = rpc_start(w, s->job_type, "{\"amount\":42}", NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        rc = step_one(w, s->job_type);
    if (rc == OP_OK)
        rc = rpc_start(w, s->key, "{\"amount\":42}", NULL, NULL, id, sizeof id);
    if (rc == OP_OK)
        rc = rpc_assign(w, id, task, sizeof task);
    if (rc == OP_OK)
        rc = rpc_get_task(w, task);
    if (rc == OP_OK)
        rc = rpc_list_tasks(w, "", 10, &n);
    if (rc == OP_OK)
        rc = rpc_complete_task(w, task);
    if (rc == OP_OK)
        rc = rpc_health(w);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

const workload wl_soak = {"soak", "instance", setup_soak, op_soak, cleanup_shared, 0};

/* ---- timers: drain of due timers by the server's scheduler ------------- */

static int
op_timer_pool(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_start(w, s->key, "{}", NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

static void
fill_na(result *res, run *r, const char *what)
{
    res->status = RS_NA;
    snprintf(res->note, sizeof res->note, "n/a (not implemented: %s)",
             r->na_method[0] ? r->na_method : what);
}

/* A run of wl over a deployed "bench-<wl name>-<run>" net start -> t1
 * (TIME, a day away) -> end, whose instances park on their timer; NULL
 * with res filled when it cannot be set up. Free r->shared and r. */
static run *
timer_net_run(bench *b, const workload *wl, result *res)
{
    run *r = calloc(1, sizeof *r);
    shared_ids *s = calloc(1, sizeof *s);
    if (r == NULL || s == NULL) {
        free(r);
        free(s);
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "out of memory");
        return NULL;
    }
    r->wl = wl;
    r->b = b;
    r->nthreads = b->nthreads;
    r->shared = s;
    snprintf(s->key, sizeof s->key, "bench-%s-%s", wl->name, b->run_id);
    net n;
    Workflow__V1__Transition *t = net_init(&n, s->key, 0);
    t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_TIME;
    n.delay.seconds = 86400;
    t[0].delay = &n.delay;
    int rc = deploy(r, &n);
    if (rc == 0)
        return r;
    if (rc == OP_NA) {
        fill_na(res, r, "DeployDefinition");
    } else {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "setup: %s", r->last_err);
    }
    free(s);
    free(r);
    return NULL;
}

void
bench_timers(bench *b, result *res)
{
    memset(res, 0, sizeof *res);
    static const workload wl = {"timers", "timer", NULL, NULL, NULL, 1};
    /* The timers are made due at once below, with SQL. */
    run *r = timer_net_run(b, &wl, res);
    if (r == NULL)
        return;
    shared_ids *s = r->shared;
    char out[64], err[256], sql[1024];
    if (b->dsn == NULL) {
        res->status = RS_SKIPPED;
        snprintf(res->note, sizeof res->note, "needs --dsn");
        goto done;
    }
    double budget = (double)b->timers / 50.0;
    budget = budget < 60 ? 60 : budget > 1800 ? 1800 : budget;
    long long made = fill_pool(r, op_timer_pool, (uint64_t)b->timers, budget);
    if (made < 0) {
        if (atomic_load(&r->na))
            fill_na(res, r, "StartInstance");
        else {
            res->status = RS_ERROR;
            snprintf(res->note, sizeof res->note, "setup: %s", r->last_err);
        }
        goto done;
    }
    /* Make every timer of these instances due now, in one statement. The
     * rows were all just written: without fresh statistics the planner
     * expects one instance and nests a scan of every timer inside it. */
    snprintf(
        sql, sizeof sql,
        "ANALYZE timers, instances; "
        "UPDATE timers t SET due_at = (extract(epoch FROM clock_timestamp()) * 1000000)::bigint "
        "FROM instances i WHERE i.tenant_id = t.tenant_id AND i.id = t.instance_id "
        "AND i.definition_key = '%s'",
        s->key);
    /* The cost of the drain: from the UPDATE to the last timer fired (the
     * metrics are scraped twice before, as in a closed-loop run). */
    cost_mark m0, m1;
    cost_window cw;
    memset(&cw, 0, sizeof cw);
    cost_mark_server(b, &m0);
    cost_mark_server(b, &m0);
    struct pg_conn *pgc = cost_pg_open(b);
    if (pg_exec(b, sql, out, sizeof out, err, sizeof err) != 0) {
        cost_pg_close(pgc);
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "making timers due: %s", err);
        goto done;
    }
    cost_mark_cpu(b, &m0);
    long due = atol(out);
    if (due == 0) {
        cost_pg_close(pgc);
        res->status = RS_NA;
        snprintf(res->note, sizeof res->note,
                 "n/a (not implemented: no timer rows for %lld TIME instances)", made);
        goto done;
    }
    double t0 = bench_now(), last_progress = t0;
    long left = due, prev = due;
    double limit = (double)due / 20.0 < 120 ? 120 : (double)due / 20.0;
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM instances WHERE tenant_id = 'default' AND definition_key = "
             "'%s' AND status = 1",
             s->key);
    /* One connection for the polls (a connection per poll would cost
     * Postgres a backend each time); without it, pg_exec's. */
    while (left > 0 && bench_now() - t0 < limit && bench_now() - last_progress < 30) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        long long n = pgc != NULL ? cost_pg_value(pgc, sql) : -1;
        if (n < 0 && pg_exec(b, sql, out, sizeof out, err, sizeof err) != 0)
            break;
        left = n >= 0 ? (long)n : atol(out);
        double now = bench_now();
        if (left < prev) {
            prev = left;
            last_progress = now;
        }
        /* Commits while the drain is steady: from one second in, while
         * timers are left (two own queries per poll). */
        if (now - t0 >= 1.0 && left > 0)
            cost_commit_sample(&cw, now, (uint64_t)(due - left), cost_pg_commits(pgc), 2);
    }
    double el = (left == 0 ? bench_now() : last_progress) - t0;
    cost_mark_cpu(b, &m1);
    cost_mark_server(b, &m1);
    cost_pg_close(pgc);
    res->units = (uint64_t)(due - left);
    cost_per_unit(&m0, &m1, res->units, &cw, &res->cost);
    res->units_per_s = el > 0 ? (double)res->units / el : 0;
    res->ops_per_s = res->units_per_s;
    if (res->units == 0) {
        res->status = RS_NA;
        snprintf(res->note, sizeof res->note,
                 "n/a (not implemented? the scheduler fired none of %ld due timers in 30 s)", due);
    } else if (left > 0) {
        res->status = RS_OK;
        snprintf(res->note, sizeof res->note, "drained only %llu of %ld due timers in %.1f s",
                 (unsigned long long)res->units, due, el);
    } else {
        snprintf(res->note, sizeof res->note, "%ld due timers drained in %.1f s", due, el);
    }
done:
    free(s);
    free(r);
}

/* ---- batch operations ------------------------------------------------------ */

/* GetBatchOperation of id: 0 with *done, *failed and *state, else -1. */
static int
batch_progress(run *r, const char *id, long long *done, long long *failed, int *state)
{
    worker w;
    setup_worker_init(&w, r);
    Workflow__V1__GetBatchOperationRequest req = WORKFLOW__V1__GET_BATCH_OPERATION_REQUEST__INIT;
    req.id = (char *)id;
    ProtobufCMessage *resp = NULL;
    int code = bcall(&w, M_GET_BATCH, &req.base,
                     &workflow__v1__get_batch_operation_response__descriptor, &resp, 0);
    const Workflow__V1__GetBatchOperationResponse *g = (const void *)resp;
    if (code == 0 && g->batch_operation != NULL) {
        *done = g->batch_operation->done;
        *failed = g->batch_operation->failed;
        *state = g->batch_operation->state;
    } else {
        snprintf(r->last_err, sizeof r->last_err, "%s", w.last_err);
    }
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    setup_worker_free(&w);
    return code == 0 ? 0 : -1;
}

void
bench_batch(bench *b, result *res)
{
    memset(res, 0, sizeof *res);
    static const workload wl = {"batch", "instance", NULL, NULL, NULL, 1};
    /* Instances parked on a timer a day away: running, nothing moves them. */
    run *r = timer_net_run(b, &wl, res);
    if (r == NULL)
        return;
    shared_ids *s = r->shared;
    double budget = (double)b->timers / 50.0;
    budget = budget < 60 ? 60 : budget > 1800 ? 1800 : budget;
    long long made = fill_pool(r, op_timer_pool, (uint64_t)b->timers, budget);
    if (made <= 0) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "setup: %s", r->last_err);
        goto done;
    }
    worker w;
    setup_worker_init(&w, r);
    Workflow__V1__InstanceFilter f = WORKFLOW__V1__INSTANCE_FILTER__INIT;
    f.started_by = "*";
    f.definition_key = s->key;
    Workflow__V1__StartBatchOperationRequest req =
        WORKFLOW__V1__START_BATCH_OPERATION_REQUEST__INIT;
    req.filter = &f;
    req.action = WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_SUSPEND;
    ProtobufCMessage *resp = NULL;
    double t0 = bench_now();
    int code = bcall(&w, M_START_BATCH, &req.base,
                     &workflow__v1__start_batch_operation_response__descriptor, &resp, 60000);
    double counted = bench_now() - t0;
    char id[96] = "";
    long long total = 0;
    const Workflow__V1__StartBatchOperationResponse *sr = (const void *)resp;
    if (code == 0 && sr->batch_operation != NULL) {
        snprintf(id, sizeof id, "%s", sr->batch_operation->id);
        total = sr->batch_operation->total;
    } else {
        snprintf(r->last_err, sizeof r->last_err, "%s", w.last_err);
    }
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    setup_worker_free(&w);
    if (code != 0) {
        res->status = code == GRPC_STATUS_UNIMPLEMENTED ? RS_NA : RS_ERROR;
        snprintf(res->note, sizeof res->note, "StartBatchOperation: %s", r->last_err);
        goto done;
    }
    long long bdone = 0, bfailed = 0, prev = -1;
    int state = 1;
    double last_progress = bench_now();
    while (state == 1 && bench_now() - last_progress < 30) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (batch_progress(r, id, &bdone, &bfailed, &state) != 0)
            break;
        if (bdone + bfailed > prev) {
            prev = bdone + bfailed;
            last_progress = bench_now();
        }
    }
    double el = (state == 1 ? last_progress : bench_now()) - t0;
    res->units = (uint64_t)bdone;
    res->units_per_s = el > 0 ? (double)bdone / el : 0;
    res->ops_per_s = res->units_per_s;
    res->status = RS_OK;
    snprintf(res->note, sizeof res->note,
             "%lld of %lld instances suspended, %lld refused, in %.1f s (%.0f ms of it counting "
             "them in StartBatchOperation)%s",
             bdone, total, bfailed, el, counted * 1000.0, state == 1 ? "; not COMPLETED" : "");
done:
    free(s);
    free(r);
}

/* ---- bytes per parked instance ----------------------------------------- */

static int
op_park_adhoc(worker *w)
{
    shared_ids *s = w->run->shared;
    char id[96], task[96];
    int rc =
        rpc_start(w, s->key, "{\"amount\":42,\"customer\":\"c-1\"}", NULL, NULL, id, sizeof id);
    if (rc == OP_OK)
        rc = rpc_assign(w, id, task, sizeof task);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

static int
op_park_net(worker *w)
{
    shared_ids *s = w->run->shared;
    int rc = rpc_start(w, s->key, "{\"amount\":42,\"customer\":\"c-1\"}", NULL, NULL, NULL, 0);
    if (rc == OP_OK)
        w->units++;
    return rc;
}

void
bench_bytes(bench *b, int is_net, result *res)
{
    memset(res, 0, sizeof *res);
    static const workload wl = {"bytes", "instance", NULL, NULL, NULL, 1};
    run *r = calloc(1, sizeof *r);
    shared_ids *s = calloc(1, sizeof *s);
    if (r == NULL || s == NULL) {
        free(r);
        free(s);
        res->status = RS_ERROR;
        return;
    }
    r->wl = &wl;
    r->b = b;
    r->nthreads = b->nthreads;
    r->shared = s;
    char err[256];
    if (b->dsn == NULL) {
        res->status = RS_SKIPPED;
        snprintf(res->note, sizeof res->note, "needs --dsn");
        goto done;
    }
    snprintf(s->key, sizeof s->key, "bench-park-%s-%s", is_net ? "net" : "adhoc", b->run_id);
    if (is_net) {
        net n;
        Workflow__V1__Transition *t = net_init(&n, s->key, 0);
        t[0].trigger = WORKFLOW__V1__TRIGGER__TRIGGER_MSG;
        t[0].signal_name = SIGNAL_NAME;
        t[0].correlation = WORKFLOW__V1__CORRELATION__CORRELATION_INSTANCE;
        int rc = deploy(r, &n);
        if (rc == OP_NA) {
            fill_na(res, r, "DeployDefinition");
            goto done;
        }
        if (rc != 0) {
            res->status = RS_ERROR;
            snprintf(res->note, sizeof res->note, "setup: %s", r->last_err);
            goto done;
        }
    } else {
        worker w;
        setup_worker_init(&w, r);
        int rc = rpc_start(&w, s->key, "{}", NULL, NULL, NULL, 0);
        if (rc != OP_OK) {
            res->status = rc == OP_NA ? RS_NA : RS_ERROR;
            snprintf(res->note, sizeof res->note, "%s",
                     rc == OP_NA ? "n/a (not implemented: StartInstance)" : w.last_err);
        }
        setup_worker_free(&w);
        if (rc != OP_OK)
            goto done;
    }
    char tb_before[2048] = "", tb_after[2048] = "";
    pg_table_bytes(b, tb_before, sizeof tb_before, err, sizeof err);
    long long before = pg_service_bytes(b, err, sizeof err);
    double budget = (double)b->parked / 20.0 < 60 ? 60 : (double)b->parked / 20.0;
    long long made =
        fill_pool(r, is_net ? op_park_net : op_park_adhoc, (uint64_t)b->parked, budget);
    long long after = pg_service_bytes(b, err, sizeof err);
    pg_table_bytes(b, tb_after, sizeof tb_after, err, sizeof err);
    if (made < 0) {
        if (atomic_load(&r->na))
            fill_na(res, r, "StartInstance");
        else {
            res->status = RS_ERROR;
            snprintf(res->note, sizeof res->note, "setup: %s", r->last_err);
        }
        goto done;
    }
    if (before < 0 || after < 0) {
        res->status = RS_ERROR;
        snprintf(res->note, sizeof res->note, "relation sizes: %s", err);
        goto done;
    }
    res->units = (uint64_t)made;
    res->value = (double)(after - before) / (double)made;
    snprintf(res->note, sizeof res->note, "%lld parked instances grew the tables by %.1f MB:", made,
             (double)(after - before) / 1048576.0);
    /* Per table, largest first: "name B/inst". */
    char chosen[512] = ",";
    for (int k = 0; k < 6; k++) {
        char best[64] = "";
        long long best_d = 0;
        char *save = NULL;
        char copy[2048];
        snprintf(copy, sizeof copy, "%s", tb_after);
        for (char *tok = strtok_r(copy, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(tok, '=');
            if (eq == NULL)
                continue;
            *eq = '\0';
            long long a = atoll(eq + 1), bb = 0;
            char key[80];
            snprintf(key, sizeof key, "%s=", tok);
            const char *p = strstr(tb_before, key);
            if (p != NULL && (p == tb_before || p[-1] == ','))
                bb = atoll(p + strlen(key));
            char mark[80];
            snprintf(mark, sizeof mark, ",%s,", tok);
            if (a - bb > best_d && strstr(chosen, mark) == NULL) {
                best_d = a - bb;
                snprintf(best, sizeof best, "%s", tok);
            }
        }
        if (best_d <= 0)
            break;
        size_t cl = strlen(chosen);
        snprintf(chosen + cl, sizeof chosen - cl, "%s,", best);
        size_t l = strlen(res->note);
        snprintf(res->note + l, sizeof res->note - l, " %s %.0f", best,
                 (double)best_d / (double)made);
    }
done:
    free(s);
    free(r);
}
