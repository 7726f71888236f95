/*
 * fuzz_definition: definition decoding, validation, canonical JSON, the
 * content hash and the firing rules; and the deploy handler's conversion.
 *
 * Byte 0 selects the mode, the rest is the document (in both modes,
 * expressions that libjq could not evaluate in bounded time and memory
 * are replaced by one that does not compile, fuzz_jq.h):
 *   even  JSON: wf_net_from_json; when it parses: wf_net_validate,
 *         wf_net_to_json, wf_net_content_hash, and the canonical form must
 *         be a fixed point (decoding and encoding it again gives the same
 *         bytes and hash: the content hash identifies a definition). A net
 *         without ERROR findings is started (wf_net_start with fixed
 *         variables) and up to FIRINGS live work items are fired
 *         (wf_net_fire), the item chosen by the input's last bytes. Pure
 *         engine: no store.
 *   odd   protobuf workflow.v1.Definition, unpacked with the arena
 *         allocator, sent through the DeployDefinition handler
 *         (h_definitions.c: Definition -> wf_net, validation, versioning)
 *         on the memory-store app: validate_only when bit 1 is clear; else
 *         a real deploy, and a deployed net is read back (GetDefinition)
 *         and started (StartInstance), which runs the net runtime.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_app.h"
#include "fuzz_jq.h"
#include "fuzz_seeds.h"
#include "net.h"
#include "workflow/v1/workflow.pb-c.h"

#define FIRINGS 8

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_app_init();
    return 0;
}

/* Start and fire may fail on the net's own terms; INTERNAL is a bug. */
static void
check_step(wf_code rc, const wf_error *err, const char *what)
{
    if (rc == WF_E_INTERNAL || (int)rc < 0 || rc >= WF_CODE_COUNT_)
        fuzz_fail("%s: %s: %s", what, wf_code_reason(rc), err->msg);
}

static void
json_mode(const uint8_t *data, size_t size)
{
    char *json = malloc(size + 1);
    if (json == NULL)
        fuzz_fail("out of memory");
    memcpy(json, data, size);
    json[size] = '\0';
    wf_arena *a = wf_arena_new();
    wf_error err;
    wf_error_clear(&err);
    wf_net *net = NULL;
    if (wf_net_from_json(json, a, &net, &err) != WF_OK)
        goto done;
    fuzz_jq_cap_net(net); /* libjq's unbounded programs (fuzz_jq.h) */

    wf_validation_error *errors = NULL;
    size_t n_errors = 0;
    if (wf_net_validate(net, a, &errors, &n_errors, &err) != WF_OK)
        fuzz_fail("wf_net_validate failed: %s", err.msg);
    for (size_t i = 0; i < n_errors; i++)
        if (errors[i].code == NULL || errors[i].path == NULL || errors[i].message == NULL ||
            (errors[i].severity != WF_SEVERITY_ERROR && errors[i].severity != WF_SEVERITY_WARNING))
            fuzz_fail("validation finding %zu is incomplete", i);

    char *canon = NULL, *hash = NULL;
    if (wf_net_to_json(net, a, &canon, &err) != WF_OK)
        fuzz_fail("wf_net_to_json failed: %s", err.msg);
    if (wf_net_content_hash(net, a, &hash, &err) != WF_OK || strlen(hash) != 64)
        fuzz_fail("wf_net_content_hash failed: %s", err.msg);

    /* The canonical form is a fixed point. */
    wf_net *again = NULL;
    char *canon2 = NULL, *hash2 = NULL;
    if (wf_net_from_json(canon, a, &again, &err) != WF_OK)
        fuzz_fail("the canonical JSON does not decode (%s): %s", err.msg, canon);
    if (wf_net_to_json(again, a, &canon2, &err) != WF_OK ||
        wf_net_content_hash(again, a, &hash2, &err) != WF_OK)
        fuzz_fail("re-encoding the canonical JSON failed: %s", err.msg);
    if (strcmp(canon, canon2) != 0 || strcmp(hash, hash2) != 0)
        fuzz_fail("canonical JSON is not stable:\n  first:  %s\n  second: %s", canon, canon2);

    if (wf_net_has_errors(errors, n_errors))
        goto done;
    wf_net_state state;
    wf_net_diff diff;
    wf_code rc = wf_net_start(net, NULL, FUZZ_START_VARS, a, &state, &diff, &err);
    check_step(rc, &err, "wf_net_start");
    for (int i = 0; rc == WF_OK && !diff.ended && state.n_items > 0 && i < FIRINGS; i++) {
        size_t pick = size > (size_t)i ? data[size - 1 - (size_t)i] : 0;
        const wf_work_item *item = &state.items[pick % state.n_items];
        if (item->id == NULL || wf_net_transition_index(net, item->transition_id) < 0)
            fuzz_fail("live work item %zu names no transition", pick % state.n_items);
        wf_net_state next;
        rc = wf_net_fire(net, &state, item->id, FUZZ_START_VARS, a, &next, &diff, &err);
        check_step(rc, &err, "wf_net_fire");
        if (rc == WF_OK)
            state = next;
    }
done:
    wf_arena_free(a);
    free(json);
}

static void
proto_mode(const uint8_t *data, size_t size, int deploy)
{
    wf_app *app = fuzz_app_next_input();
    wf_arena *a = wf_arena_new();
    ProtobufCAllocator alloc = wf_arena_pb_allocator(a);
    /* The definition arrives inside a DeployDefinitionRequest, whose
     * strings the rpc layer checks before unpacking (rpc_wire.h). */
    Workflow__V1__Definition *def =
        fuzz_wire_ok(&workflow__v1__definition__descriptor, data, size, a)
            ? (Workflow__V1__Definition *)protobuf_c_message_unpack(
                  &workflow__v1__definition__descriptor, &alloc, size, data)
            : NULL;
    if (def == NULL)
        goto done;
    fuzz_jq_cap_message(&def->base); /* libjq's unbounded programs (fuzz_jq.h) */
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = def;
    req.validate_only = !deploy;
    ProtobufCMessage *resp = NULL;
    wf_error err;
    wf_code rc = fuzz_dispatch(app, a, fuzz_route_named("DeployDefinition"), &req.base, FUZZ_ACTOR,
                               &resp, &err);
    if (rc != WF_OK || !deploy)
        goto done;
    const Workflow__V1__DeployDefinitionResponse *dr = (const void *)resp;
    if (dr->definition == NULL)
        fuzz_fail("DeployDefinition stored nothing and returned no definition");

    Workflow__V1__GetDefinitionRequest get = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    get.key = dr->definition->key;
    get.version = dr->definition->version;
    rc = fuzz_dispatch(app, a, fuzz_route_named("GetDefinition"), &get.base, NULL, &resp, &err);
    if (rc != WF_OK)
        fuzz_fail("GetDefinition of the version just deployed: %s: %s", wf_code_reason(rc),
                  err.msg);

    Workflow__V1__StartInstanceRequest start = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    start.definition_key = dr->definition->key;
    start.version = dr->definition->version;
    start.variables_json = FUZZ_START_VARS;
    rc = fuzz_dispatch(app, a, fuzz_route_named("StartInstance"), &start.base, FUZZ_ACTOR, &resp,
                       &err);
    if (rc == WF_OK) {
        const Workflow__V1__StartInstanceResponse *sr = (const void *)resp;
        Workflow__V1__GetInstanceRequest gi = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
        gi.instance_id = sr->instance != NULL ? sr->instance->id : "";
        fuzz_dispatch(app, a, fuzz_route_named("GetInstance"), &gi.base, NULL, &resp, &err);
    }
done:
    wf_arena_free(a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] % 2 == 0)
        json_mode(data + 1, size - 1);
    else
        proto_mode(data + 1, size - 1, (data[0] & 2) != 0);
    fuzz_input_done();
    return 0;
}
