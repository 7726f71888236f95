/*
 * fuzz_app: the memory-store app, the method table and the call driver
 * shared by the harnesses (see fuzz_app.h).
 */
#include "fuzz_app.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defcache.h"
#include "expr.h"
#include "fuzz_seeds.h"
#include "rpc_wire.h"
#include "wf_log.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

/* A fixed development configuration: memory store (no DATABASE_URL), no
 * API keys, a static directory so that user and group checks run. */
static char *fuzz_env[] = {
    "WF_ENV=development",
    "WF_LOG_LEVEL=error",
    "WF_THREADS=1",
    "WF_USERS=fuzz,alice,bob",
    "WF_GROUP_ops=fuzz,alice",
    /* Small sizes, so that inputs reach the bounds: requests and the
     * variables of a tree of at most 16 KiB, answers of at most 32 KiB. */
    "WF_MAX_MESSAGE_BYTES=16384",
    "WF_MAX_ANSWER_BYTES=32768",
    "WF_MAX_VARIABLES_BYTES=16384",
    NULL,
};

static wf_config *cfg;
static wf_app app = WF_APP_INIT;
static fuzz_route *routes;
static size_t nroutes;
static unsigned long inputs, recycle_every = FUZZ_RECYCLE_DEFAULT;
static int allow_internal, debug;

void
fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FUZZ CONTRACT: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

bool
fuzz_debug(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FUZZ_DEBUG");
        v = e != NULL && strcmp(e, "1") == 0;
    }
    return v;
}

/* ---- method table ---------------------------------------------------------------- */

static void
build_routes(void)
{
    const ProtobufCServiceDescriptor *svc = &workflow__v1__workflow_service__descriptor;
    while (wf_routes[nroutes].method != NULL)
        nroutes++;
    routes = calloc(nroutes, sizeof *routes);
    if (routes == NULL)
        fuzz_fail("out of memory");
    for (size_t i = 0; i < nroutes; i++) {
        routes[i].route = &wf_routes[i];
        for (unsigned m = 0; m < svc->n_methods; m++)
            if (strcmp(svc->methods[m].name, wf_routes[i].method) == 0)
                routes[i].method = &svc->methods[m];
        if (routes[i].method == NULL)
            fuzz_fail("route %s names no method of %s", wf_routes[i].method, svc->name);
    }
}

size_t
fuzz_routes(const fuzz_route **out)
{
    *out = routes;
    return nroutes;
}

const fuzz_route *
fuzz_route_named(const char *method)
{
    for (size_t i = 0; i < nroutes; i++)
        if (strcmp(routes[i].route->method, method) == 0)
            return &routes[i];
    return NULL;
}

/* ---- contract checks ------------------------------------------------------------- */

void
fuzz_check_packs(const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *desc,
                 const char *what)
{
    if (msg->descriptor != desc)
        fuzz_fail("%s: response is a %s, the method returns %s", what, msg->descriptor->name,
                  desc->name);
    if (!protobuf_c_message_check(msg))
        fuzz_fail("%s: response %s fails protobuf_c_message_check (NULL in a repeated field?)",
                  what, desc->name);
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (cfg != NULL && n > (size_t)wf_config_send_limit(cfg))
        fuzz_fail("%s: response %s takes %zu bytes, more than the send limit %d", what, desc->name,
                  n, wf_config_send_limit(cfg));
    uint8_t *buf = malloc(n ? n : 1);
    if (buf == NULL)
        fuzz_fail("out of memory");
    size_t packed = protobuf_c_message_pack(msg, buf);
    if (packed != n)
        fuzz_fail("%s: %s packed %zu bytes, get_packed_size said %zu", what, desc->name, packed, n);
    ProtobufCMessage *back = protobuf_c_message_unpack(desc, NULL, n, buf);
    if (back == NULL)
        fuzz_fail("%s: the packed %s does not unpack", what, desc->name);
    protobuf_c_message_free_unpacked(back, NULL);
    free(buf);
}

/* ---- the door and known findings --------------------------------------------------- */

bool
fuzz_wire_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
             wf_arena *arena)
{
    wf_violation bad;
    wf_error err;
    wf_code rc = wf_rpc_wire_check(desc, data, size, WF_RPC_MAX_DEPTH, arena, &bad, &err);
    if (rc != WF_OK && rc != WF_E_INVALID_ARGUMENT)
        fuzz_fail("wire check of %s: %s", desc->name, wf_code_reason(rc));
    /* A refused field (not UTF-8, a NUL, a wrong wire type, a Duration or
     * Timestamp out of range) comes with the violation naming it. */
    if (rc != WF_OK && strncmp(err.msg, "field ", 6) == 0 &&
        (bad.field == NULL || bad.description == NULL))
        fuzz_fail("wire check of %s: a refused field without its violation (%s)", desc->name,
                  err.msg);
    return rc == WF_OK;
}

void
fuzz_known(const char *id, const char *where, const char *what)
{
    static char seen[128][96];
    char key[96];
    snprintf(key, sizeof key, "%s %s", id, where);
    for (size_t i = 0; i < 128; i++) {
        if (strcmp(seen[i], key) == 0)
            return;
        if (seen[i][0] == '\0') {
            snprintf(seen[i], sizeof seen[i], "%s", key);
            fprintf(stderr, "FUZZ KNOWN %s: %s: %s (tolerated; FUZZ_STRICT=1 makes it a crash)\n",
                    id, where, what);
            return;
        }
    }
}

bool
fuzz_strict(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FUZZ_STRICT");
        v = e != NULL && strcmp(e, "1") == 0;
    }
    return v;
}

/* What the rpc layer turns into a status: the code must be a known one,
 * WF_E_INTERNAL means a bug (wf_error.h), violations must be complete. */
static void
check_outcome(const wf_call *call, wf_code rc, const wf_error *err, const char *what)
{
    if ((int)rc < 0 || rc >= WF_CODE_COUNT_)
        fuzz_fail("%s %s: unknown code %d", call->method, what, (int)rc);
    if (rc == WF_E_INTERNAL && !allow_internal)
        fuzz_fail("%s %s: INTERNAL (a bug by wf_error.h): %s", call->method, what, err->msg);
    for (size_t i = 0; i < call->nviolations; i++)
        if (call->violations == NULL || call->violations[i].field == NULL ||
            call->violations[i].description == NULL)
            fuzz_fail("%s %s: violation %zu is incomplete", call->method, what, i);
}

/* ---- one call ---------------------------------------------------------------------- */

static wf_code
dispatch(wf_app *a, wf_arena *arena, const fuzz_route *r, const ProtobufCMessage *req,
         const char *actor, ProtobufCMessage **resp_out, wf_error *err)
{
    wf_call call = {
        .app = a,
        .arena = arena,
        .method = r->route->method,
        .tenant = FUZZ_TENANT,
        .actor = actor,
        .request_id = "fuzz-request",
        .deadline_ms = wf_mono_ms() + FUZZ_DEADLINE_MS,
    };
    wf_error_clear(err);
    if (resp_out != NULL)
        *resp_out = NULL;

    /* As the rpc layer: a route with a handler runs it, and a handler may
     * park its call on the route's stream ops (an awaited result). */
    const wf_stream_ops *sops = r->route->fn == NULL ? r->route->stream : NULL;
    void *state = NULL;
    wf_code rc;
    if (sops == NULL) {
        ProtobufCMessage *resp = NULL;
        rc = r->route->fn(&call, req, &resp, err);
        check_outcome(&call, rc, err, "handler");
        if (rc != WF_OK)
            return rc;
        if (call.park_state != NULL && r->route->stream != NULL) {
            sops = r->route->stream;
            state = call.park_state;
            goto pull;
        }
        if (resp == NULL)
            fuzz_fail("%s returned OK without a response (the client gets INTERNAL)", call.method);
        fuzz_check_packs(resp, r->method->output, call.method);
        if (resp_out != NULL)
            *resp_out = resp;
        return WF_OK;
    }

    /* A stream: open, then pull like the rpc layer until it waits or ends. */
    rc = sops->open(&call, req, &state, err);
    check_outcome(&call, rc, err, "open");
    if (rc != WF_OK)
        return rc;
pull:
    for (int i = 0; i < FUZZ_STREAM_STEPS; i++) {
        wf_arena *scratch = wf_arena_new();
        if (scratch == NULL)
            fuzz_fail("out of memory");
        ProtobufCMessage *msg = NULL;
        wf_error serr;
        wf_error_clear(&serr);
        wf_stream_step step = sops->next(&call, state, scratch, &msg, &serr);
        if (step == WF_STREAM_MESSAGE) {
            if (msg == NULL)
                fuzz_fail("%s next: MESSAGE without a message", call.method);
            fuzz_check_packs(msg, r->method->output, call.method);
        } else if (step == WF_STREAM_END) {
            check_outcome(&call, serr.code, &serr, "next");
        } else if (step != WF_STREAM_WAIT) {
            fuzz_fail("%s next: unknown step %d", call.method, (int)step);
        }
        wf_arena_free(scratch);
        if (step != WF_STREAM_MESSAGE || sops->unary)
            break;
    }
    if (sops->close != NULL)
        sops->close(state);
    return WF_OK;
}

wf_code
fuzz_dispatch(wf_app *a, wf_arena *arena, const fuzz_route *r, const ProtobufCMessage *req,
              const char *actor, ProtobufCMessage **resp_out, wf_error *err)
{
    wf_code rc = dispatch(a, arena, r, req, actor, resp_out, err);
    if (debug)
        fprintf(stderr, "fuzz: %s actor=%s -> %s%s%s\n", r->route->method,
                actor != NULL ? actor : "(none)", wf_code_reason(rc), rc != WF_OK ? ": " : "",
                rc != WF_OK ? err->msg : "");
    return rc;
}

/* ---- priming ------------------------------------------------------------------------- */

static ProtobufCMessage *
prime_call(wf_arena *a, const char *method, const ProtobufCMessage *req)
{
    const fuzz_route *r = fuzz_route_named(method);
    if (r == NULL)
        fuzz_fail("no route %s", method);
    ProtobufCMessage *resp = NULL;
    wf_error err;
    wf_code rc = fuzz_dispatch(&app, a, r, req, FUZZ_ACTOR, &resp, &err);
    if (rc != WF_OK)
        fprintf(stderr, "fuzz: priming %s failed: %s: %s\n", method, wf_code_reason(rc), err.msg);
    return resp;
}

static ProtobufCMessage *
seed(const fuzz_seed *s, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0)
            return s[i].msg;
    fuzz_fail("no seed %s", name);
}

/* Fills a new store: the seed definitions, three net cases (one whose
 * review was completed: it waits on a job, a timer and a signal; one at
 * its review task; one that ended on the default arc), an ad-hoc case with
 * a USERS quorum and a group task, and an activated job. */
static void
prime(void)
{
    wf_arena *a = wf_arena_new();
    size_t n;
    const fuzz_seed *s = fuzz_seed_requests(a, &n);
    prime_call(a, "DeployDefinition", seed(s, n, "deploy_net"));
    prime_call(a, "DeployDefinition", seed(s, n, "deploy_adhoc"));
    prime_call(a, "StartInstance", seed(s, n, "start_net"));
    Workflow__V1__StartInstanceRequest low = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    low.definition_key = FUZZ_NET_KEY;
    low.variables_json = "{\"amount\":5}";
    prime_call(a, "StartInstance", &low.base);
    const Workflow__V1__StartInstanceResponse *adhoc =
        (const void *)prime_call(a, "StartInstance", seed(s, n, "start_adhoc"));
    if (adhoc != NULL && adhoc->instance != NULL) {
        Workflow__V1__AssignToRequest *users = (void *)seed(s, n, "assign_users_quorum");
        Workflow__V1__AssignToRequest *group = (void *)seed(s, n, "assign_group");
        users->parent_instance_id = group->parent_instance_id = adhoc->instance->id;
        prime_call(a, "AssignTo", &users->base);
        prime_call(a, "AssignTo", &group->base);
    }

    /* Complete the review of the first two net cases. */
    Workflow__V1__ListTasksRequest lt = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    lt.user = FUZZ_ACTOR;
    const Workflow__V1__ListTasksResponse *tasks =
        (const void *)prime_call(a, "ListTasks", &lt.base);
    int reviewed = 0;
    for (size_t i = 0; tasks != NULL && i < tasks->n_tasks && reviewed < 2; i++) {
        if (strcmp(tasks->tasks[i]->transition_id, "review") != 0)
            continue;
        Workflow__V1__CompleteTaskRequest ct = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
        ct.task_id = tasks->tasks[i]->id;
        ct.variables_json = "{\"reviewed\":true}";
        prime_call(a, "CompleteTask", &ct.base);
        reviewed++;
    }
    prime_call(a, "StartInstance", seed(s, n, "start_net")); /* replayed: same request_id */
    low.variables_json = "{\"amount\":500}";
    prime_call(a, "StartInstance", &low.base); /* stays at its review task */
    prime_call(a, "ActivateJobs", seed(s, n, "activate_jobs"));
    wf_arena_free(a);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void
open_store(void)
{
    wf_error err;
    wf_error_clear(&err);
    if (wf_app_open_store(&app, &err) != WF_OK) {
        fprintf(stderr, "fuzz: memory store: %s\n", err.msg);
        exit(1);
    }
    prime();
}

void
fuzz_app_init(void)
{
    if (cfg != NULL)
        return;
    wf_error err;
    wf_error_clear(&err);
    cfg = wf_config_load(fuzz_env, &err);
    if (cfg == NULL) {
        fprintf(stderr, "fuzz: config: %s\n", err.msg);
        exit(1);
    }
    wf_log_threshold = (wf_log_level)cfg->log_level;
    const char *v = getenv("FUZZ_RECYCLE");
    if (v != NULL && strtoul(v, NULL, 10) > 0)
        recycle_every = strtoul(v, NULL, 10);
    v = getenv("FUZZ_ALLOW_INTERNAL");
    allow_internal = v != NULL && strcmp(v, "1") == 0;
    debug = fuzz_debug();
    build_routes();
    app.cfg = cfg;
    open_store();
}

void
fuzz_input_done(void)
{
    if (wf_expr_cache_size() > 0)
        wf_expr_cache_clear();
}

wf_app *
fuzz_app_next_input(void)
{
    if (++inputs % recycle_every == 0 || recycle_every == 1) {
        wf_app_close_store(&app);
        /* Nothing handed out by the caches is in use between inputs. */
        wf_defcache_clear();
        wf_expr_cache_clear();
        open_store();
    }
    return &app;
}
