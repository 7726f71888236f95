/*
 * gen_corpus: writes the seed inputs of the fuzz targets.
 *
 *   build-fuzz/fuzz/fuzz_gen_corpus fuzz/corpus      (fuzz/README.md, "Seeds")
 *
 * DIR/fuzz_requests/<name>     route byte (index in wf_routes) + packed request
 * DIR/fuzz_definition/json_N   ' ' (JSON mode) + a net JSON document
 * DIR/fuzz_definition/pb_*     0x01 (validate only) / 0x03 (deploy) + packed Definition
 * DIR/fuzz_expr/<name>         expression NUL variables [NUL patch]
 *
 * It also builds the fuzzers' app (which primes a store with the seeds, and
 * reports a seed that fails) and checks that the valid net documents
 * validate without ERROR findings. Exit status 1 when a check fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_app.h"
#include "fuzz_seeds.h"
#include "net.h"

static int failed;

static void
mkdirs(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        exit(1);
    }
}

static void
write_file(const char *dir, const char *name, const void *prefix, size_t nprefix, const void *body,
           size_t nbody)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(prefix, 1, nprefix, f) != nprefix ||
        (nbody > 0 && fwrite(body, 1, nbody, f) != nbody) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void
write_packed(const char *dir, const char *name, uint8_t prefix, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    protobuf_c_message_pack(m, buf);
    write_file(dir, name, &prefix, 1, buf, n);
    free(buf);
}

/* As write_packed, with the byte 0x01 of the first occurrence of marked (a
 * string of m holding one 0x01) turned into a NUL: protobuf-c strings
 * cannot hold one, the wire can, and the wire check must refuse it. */
static void
write_packed_nul(const char *dir, const char *name, uint8_t prefix, const ProtobufCMessage *m,
                 const char *marked)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    protobuf_c_message_pack(m, buf);
    size_t k = strlen(marked);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, marked, k) == 0) {
            *(uint8_t *)memchr(buf + i, 0x01, k) = 0;
            write_file(dir, name, &prefix, 1, buf, n);
            free(buf);
            return;
        }
    fprintf(stderr, "gen_corpus: %s: no \"%s\" in the packed message\n", name, marked);
    failed = 1;
    free(buf);
}

static void
requests(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz_requests", root);
    mkdirs(dir);
    const fuzz_route *routes;
    size_t nroutes = fuzz_routes(&routes);
    wf_arena *a = wf_arena_new();
    size_t n;
    const fuzz_seed *s = fuzz_seed_requests(a, &n);
    for (size_t i = 0; i < n; i++) {
        const fuzz_route *r = fuzz_route_named(s[i].method);
        if (r == NULL) {
            fprintf(stderr, "gen_corpus: no route %s\n", s[i].method);
            failed = 1;
            continue;
        }
        write_packed(dir, s[i].name, (uint8_t)(r - routes), s[i].msg);
    }
    /* Regression of K1 (README.md): a description that is not UTF-8, which
     * the rpc layer's wire check refuses before unpacking. */
    Workflow__V1__DeployDefinitionRequest k1 = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    k1.definition = fuzz_seed_definition(a);
    k1.definition->description = "caf\xe9";
    write_packed(dir, "k1_deploy_non_utf8",
                 (uint8_t)(fuzz_route_named("DeployDefinition") - routes), &k1.base);
    /* NUL bytes in strings (valid UTF-8, but protobuf-c would cut them): an
     * id plus junk, a JSON text plus junk, a nested name. */
    Workflow__V1__GetInstanceRequest gi = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    gi.instance_id = "00000000-0000-7000-8000-000000000000\x01junk";
    write_packed_nul(dir, "nul_get_instance", (uint8_t)(fuzz_route_named("GetInstance") - routes),
                     &gi.base, gi.instance_id);
    Workflow__V1__StartInstanceRequest si = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    si.definition_key = "adhoc";
    si.variables_json = "{\"a\":1}\x01";
    write_packed_nul(dir, "nul_start_variables",
                     (uint8_t)(fuzz_route_named("StartInstance") - routes), &si.base,
                     si.variables_json);
    Workflow__V1__DeployDefinitionRequest nd = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    nd.definition = fuzz_seed_definition(a);
    nd.definition->description = "a\x01"
                                 "b";
    write_packed_nul(dir, "nul_deploy_description",
                     (uint8_t)(fuzz_route_named("DeployDefinition") - routes), &nd.base,
                     "a\x01"
                     "b");
    /* A bool sent length-delimited (protobuf-c read it as true) and a
     * Duration past its range: refused by the wire check. */
    Workflow__V1__WatchEventsRequest we = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    size_t wn = workflow__v1__watch_events_request__get_packed_size(&we);
    uint8_t wbuf[64];
    workflow__v1__watch_events_request__pack(&we, wbuf);
    wbuf[wn++] = (5 << 3) | 2; /* follow, length-delimited */
    wbuf[wn++] = 1;
    wbuf[wn++] = 1;
    uint8_t wroute = (uint8_t)(fuzz_route_named("WatchEvents") - routes);
    write_file(dir, "watch_follow_wrong_wire_type", &wroute, 1, wbuf, wn);
    Workflow__V1__SendSignalRequest ss = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Google__Protobuf__Duration ttl = GOOGLE__PROTOBUF__DURATION__INIT;
    ttl.seconds = 10000000000000LL;
    ss.name = "ping";
    ss.buffer_ttl = &ttl;
    write_packed(dir, "signal_ttl_out_of_range", (uint8_t)(fuzz_route_named("SendSignal") - routes),
                 &ss.base);
    /* The same list calls without an actor (route byte + nroutes). */
    Workflow__V1__ListInstancesRequest li = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    li.page_size = 1;
    write_packed(dir, "list_instances_no_actor",
                 (uint8_t)(fuzz_route_named("ListInstances") - routes + nroutes), &li.base);
    wf_arena_free(a);
}

static void
definitions(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz_definition", root);
    mkdirs(dir);
    for (size_t i = 0; fuzz_seed_net_json[i] != NULL; i++) {
        const char *json = fuzz_seed_net_json[i];
        char name[32];
        snprintf(name, sizeof name, "json_%zu", i);
        write_file(dir, name, " ", 1, json, strlen(json));

        wf_arena *a = wf_arena_new();
        wf_error err;
        wf_net *net;
        wf_validation_error *errors;
        size_t nerr;
        if (wf_net_from_json(json, a, &net, &err) != WF_OK) {
            fprintf(stderr, "gen_corpus: %s does not decode: %s\n", name, err.msg);
            failed = 1;
        } else if (wf_net_validate(net, a, &errors, &nerr, &err) == WF_OK) {
            bool want_errors = i >= 2; /* json_2 is invalid; json_3 is an AD_HOC shape */
            if (wf_net_has_errors(errors, nerr) != want_errors) {
                fprintf(stderr, "gen_corpus: %s: expected %s ERROR findings, got:\n", name,
                        want_errors ? "some" : "no");
                for (size_t k = 0; k < nerr; k++)
                    fprintf(stderr, "  %s %s: %s\n", errors[k].code, errors[k].path,
                            errors[k].message);
                failed = 1;
            }
        }
        wf_arena_free(a);
    }
    wf_arena *a = wf_arena_new();
    Workflow__V1__Definition *def = fuzz_seed_definition(a);
    write_packed(dir, "pb_validate", 0x01, &def->base);
    write_packed(dir, "pb_deploy", 0x03, &def->base);
    wf_arena_free(a);
}

static void
expr_seed(const char *dir, const char *name, const char *expr, const char *vars, const char *patch)
{
    char buf[8192];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", expr);
    if (vars != NULL) {
        buf[n++] = '\0';
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", vars);
    }
    if (patch != NULL) {
        buf[n++] = '\0';
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", patch);
    }
    write_file(dir, name, "", 0, buf, n);
}

static void
expressions(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz_expr", root);
    mkdirs(dir);
    expr_seed(dir, "guard_gt", ".amount > 100", "{\"amount\":150}", NULL);
    expr_seed(dir, "ids_array", ".reviewers", "{\"reviewers\":[\"alice\",\"bob\"]}", NULL);
    expr_seed(dir, "due_field", ".due", "{\"due\":\"2030-01-01T00:00:00Z\"}", NULL);
    expr_seed(dir, "select_unique", "[.items[] | select(.qty > 1) | .owner] | unique",
              "{\"items\":[{\"qty\":2,\"owner\":\"alice\"},{\"qty\":1,\"owner\":\"bob\"}]}", NULL);
    expr_seed(dir, "if_group", "if .region == \"eu\" then \"ops\" else empty end",
              "{\"region\":\"eu\"}", NULL);
    expr_seed(dir, "date_math", ".start | fromdateiso8601 + 86400 | todateiso8601",
              "{\"start\":\"2024-05-01T10:00:00Z\"}", NULL);
    expr_seed(dir, "regex_merge", ".a | test(\"^x+$\")", "{\"a\":\"xxx\"}", "{\"b\":1}");
    expr_seed(dir, "interpolation", "\"\\(.first)-\\(.last)\"", "{\"first\":\"a\",\"last\":\"b\"}",
              NULL);
    expr_seed(dir, "alternative_merge", ".approved and (.amount // 0) < 1000",
              "{\"approved\":true}", "{\"amount\":null,\"approved\":false}");
    expr_seed(dir, "rfc3339_literal", "\"2024-02-29T23:59:60.123456+02:00\"", NULL, NULL);
    expr_seed(dir, "refused_range", "[range(10)]", "{}", NULL);
    expr_seed(dir, "not_an_object", ".[0]", "[1,2]", "\"x\"");
    /* Known finding K3 (README.md): variables nested 300 deep. */
    char deep[700];
    size_t n = (size_t)snprintf(deep, sizeof deep, "{\"a\":");
    for (int i = 0; i < 300; i++)
        deep[n++] = '[';
    for (int i = 0; i < 300; i++)
        deep[n++] = ']';
    snprintf(deep + n, sizeof deep - n, "}");
    expr_seed(dir, "k3_vars_depth_300", ".a | length > 0", deep, NULL);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    fuzz_app_init(); /* primes a store with the seeds; reports failures */
    mkdirs(argv[1]);
    requests(argv[1]);
    definitions(argv[1]);
    expressions(argv[1]);
    fuzz_input_done();
    return failed;
}
