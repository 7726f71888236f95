/*
 * wfctl: command-line client of the workflow service.
 *
 *   wfctl [--addr HOST:PORT] [--key KEY] [--tenant T] [--actor A] [--timeout MS] COMMAND ...
 *
 * Flags fall back to WFCTL_ADDR, WFCTL_API_KEY, WFCTL_TENANT, WFCTL_ACTOR.
 * Exit status: 0 on success, 1 when the call failed (the gRPC code and
 * reason are printed on stderr), 2 for a usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/health/v1/health.pb-c.h"
#include "wf_client.h"

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: wfctl [--addr HOST:PORT] [--key KEY] [--tenant T] [--actor A] [--timeout MS]\n"
            "             COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  health [SERVICE]      check the server's health (SERVING / NOT_SERVING)\n"
            "\n"
            "flags default to WFCTL_ADDR (127.0.0.1:50051), WFCTL_API_KEY, WFCTL_TENANT,\n"
            "WFCTL_ACTOR.\n");
}

/* Prints a failed call's status and returns 1. */
static int
fail(const wf_client_status *st)
{
    fprintf(stderr, "error: %s", wf_client_code_name(st->code));
    if (st->reason[0])
        fprintf(stderr, " (%s)", st->reason);
    fprintf(stderr, ": %s\n", st->message);
    for (int i = 0; i < st->nviolations && i < 8; i++)
        fprintf(stderr, "  %s\n", st->violations[i]);
    return 1;
}

static int
cmd_health(wf_client *c, int argc, char **argv)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = argc > 0 ? argv[0] : "";
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    if (wf_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                       &grpc__health__v1__health_check_response__descriptor, &resp, NULL,
                       &st) != 0)
        return fail(&st);
    Grpc__Health__V1__HealthCheckResponse *r = (void *)resp;
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
        &grpc__health__v1__health_check_response__serving_status__descriptor, r->status);
    printf("%s\n", v != NULL ? v->name : "UNKNOWN");
    int serving = r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    protobuf_c_message_free_unpacked(resp, NULL);
    return serving ? 0 : 1;
}

struct command {
    const char *name;
    int (*fn)(wf_client *c, int argc, char **argv);
};

static const struct command commands[] = {
    {"health", cmd_health},
    {NULL, NULL},
};

static const char *
env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : def;
}

int
main(int argc, char **argv)
{
    wf_client_options o = {
        .target = env_or("WFCTL_ADDR", "127.0.0.1:50051"),
        .api_key = env_or("WFCTL_API_KEY", NULL),
        .tenant = env_or("WFCTL_TENANT", NULL),
        .actor = env_or("WFCTL_ACTOR", NULL),
    };
    static const struct option longopts[] = {
        {"addr", required_argument, NULL, 'a'},   {"key", required_argument, NULL, 'k'},
        {"tenant", required_argument, NULL, 't'}, {"actor", required_argument, NULL, 'u'},
        {"timeout", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "+a:k:t:u:T:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'a': o.target = optarg; break;
        case 'k': o.api_key = optarg; break;
        case 't': o.tenant = optarg; break;
        case 'u': o.actor = optarg; break;
        case 'T': o.timeout_ms = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[optind];
    for (const struct command *cmd = commands; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, name) != 0)
            continue;
        wf_client *c = wf_client_new(&o);
        if (c == NULL) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
        int rc = cmd->fn(c, argc - optind - 1, argv + optind + 1);
        wf_client_free(c);
        return rc;
    }
    fprintf(stderr, "wfctl: unknown command \"%s\"\n", name);
    usage(stderr);
    return 2;
}
