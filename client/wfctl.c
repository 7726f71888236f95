/*
 * wfctl: command-line client of the workflow service.
 *
 *   wfctl [--addr HOST:PORT] [--key KEY] [--tenant T] [--actor A] [--groups G1,G2]
 *         [--timeout MS] [--tls] [--json] COMMAND [ARGS] [OPTIONS]
 *
 * Flags fall back to WFCTL_ADDR, WFCTL_API_KEY, WFCTL_TENANT, WFCTL_ACTOR,
 * WFCTL_ACTOR_GROUPS, WFCTL_TIMEOUT and WFCTL_TLS. Exit status: 0 on
 * success, 1 when a call failed (the gRPC code and reason are printed on
 * stderr), 2 for a usage error. The commands live in wfctl_commands.c.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfctl.h"

struct wfctl g_wfctl;

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: wfctl [global flags] COMMAND [ARGS] [OPTIONS]\n"
            "\n"
            "global flags:\n"
            "  --addr HOST:PORT   server address (WFCTL_ADDR, default 127.0.0.1:50051)\n"
            "  --key KEY          API key, sent as x-api-key (WFCTL_API_KEY)\n"
            "  --tenant T         tenant, x-tenant-id (WFCTL_TENANT; server default \"default\")\n"
            "  --actor A          acting person, x-actor-id (WFCTL_ACTOR)\n"
            "  --groups G1,G2     the actor's groups, x-actor-groups (WFCTL_ACTOR_GROUPS)\n"
            "  --timeout MS       per-call deadline in milliseconds (WFCTL_TIMEOUT, default "
            "10000)\n"
            "  --tls              use TLS with the system roots (WFCTL_TLS=1)\n"
            "  --json             print JSON, one object per line (also accepted after the "
            "command)\n"
            "  --version          print \"wfctl VERSION\" and exit\n"
            "\n"
            "commands:\n");
    wfctl_list_commands(f);
    fprintf(f, "\n"
               "'wfctl COMMAND --help' describes a command. Exit status: 0 success, 1 the call\n"
               "failed (\"error: CODE (REASON): message\" on stderr), 2 usage error.\n");
}

int
wfctl_fail(const wf_client_status *st)
{
    fflush(stdout);
    fprintf(stderr, "error: %s", wf_client_code_name(st->code));
    if (st->reason[0])
        fprintf(stderr, " (%s)", st->reason);
    fprintf(stderr, ": %s\n", st->message);
    int shown = st->nviolations < 8 ? st->nviolations : 8;
    for (int i = 0; i < shown; i++) {
        /* A violation's own code (a validation code) when it has one. */
        const char *r = st->violation_reasons[i];
        if (r[0] != '\0' && strcmp(r, st->reason) != 0)
            fprintf(stderr, "  %s (%s)\n", st->violations[i], r);
        else
            fprintf(stderr, "  %s\n", st->violations[i]);
    }
    if (st->nviolations > shown)
        fprintf(stderr, "  ... and %d more\n", st->nviolations - shown);
    return WFCTL_FAILED;
}

int
wfctl_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wfctl: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return WFCTL_USAGE;
}

int
wfctl_call(const char *method, const ProtobufCMessage *req,
           const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp, int timeout_ms,
           wf_client_status *st)
{
    char path[160];
    if (method[0] == '/')
        snprintf(path, sizeof path, "%s", method);
    else
        snprintf(path, sizeof path, "/workflow.v1.WorkflowService/%s", method);
    wf_client_call_opts o = {0};
    o.timeout_ms = timeout_ms;
    return wf_client_call(g_wfctl.client, path, req, resp_desc, resp, &o, st);
}

static const char *
env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : def;
}

static int
parse_timeout(const char *s, int *ms)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 0 || v > 86400000L)
        return -1;
    *ms = (int)v;
    return 0;
}

int
main(int argc, char **argv)
{
    const char *tls = env_or("WFCTL_TLS", "0");
    wf_client_options o = {
        .target = env_or("WFCTL_ADDR", "127.0.0.1:50051"),
        .api_key = env_or("WFCTL_API_KEY", NULL),
        .tenant = env_or("WFCTL_TENANT", NULL),
        .actor = env_or("WFCTL_ACTOR", NULL),
        .actor_groups = env_or("WFCTL_ACTOR_GROUPS", NULL),
        .use_tls = strcmp(tls, "1") == 0 || strcmp(tls, "true") == 0,
    };
    const char *timeout = env_or("WFCTL_TIMEOUT", NULL);
    if (timeout != NULL && parse_timeout(timeout, &o.timeout_ms) != 0)
        return wfctl_usage_error("WFCTL_TIMEOUT: \"%s\" is not a number of milliseconds", timeout);
    static const struct option longopts[] = {
        {"addr", required_argument, NULL, 'a'},
        {"key", required_argument, NULL, 'k'},
        {"tenant", required_argument, NULL, 't'},
        {"actor", required_argument, NULL, 'u'},
        {"groups", required_argument, NULL, 'g'},
        {"timeout", required_argument, NULL, 'T'},
        {"tls", no_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            o.target = optarg;
            break;
        case 'k':
            o.api_key = optarg;
            break;
        case 't':
            o.tenant = optarg;
            break;
        case 'u':
            o.actor = optarg;
            break;
        case 'g':
            o.actor_groups = optarg;
            break;
        case 'T':
            if (parse_timeout(optarg, &o.timeout_ms) != 0)
                return wfctl_usage_error("--timeout: \"%s\" is not a number of milliseconds",
                                         optarg);
            break;
        case 'S':
            o.use_tls = 1;
            break;
        case 'j':
            g_wfctl.json = 1;
            break;
        case 'h':
            usage(stdout);
            return WFCTL_OK;
        case 'V':
            printf("wfctl %s\n", WF_VERSION);
            return WFCTL_OK;
        default:
            usage(stderr);
            return WFCTL_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return WFCTL_USAGE;
    }
    /* gRPC metadata values are printable ASCII; refuse others here rather
     * than fail every call. */
    const char *const md_names[] = {"--key", "--tenant", "--actor", "--groups"};
    const char *const md_values[] = {o.api_key, o.tenant, o.actor, o.actor_groups};
    for (int i = 0; i < 4; i++)
        for (const char *p = md_values[i]; p != NULL && *p != '\0'; p++)
            if (*p < 0x20 || *p > 0x7e)
                return wfctl_usage_error("%s (or its WFCTL_* variable) must be printable ASCII",
                                         md_names[i]);
    g_wfctl.timeout_ms = o.timeout_ms;
    g_wfctl.client = wf_client_new(&o);
    if (g_wfctl.client == NULL) {
        fprintf(stderr, "error: out of memory\n");
        return WFCTL_FAILED;
    }
    int rc = wfctl_run_command(argc - optind, argv + optind);
    fflush(stdout);
    wf_client_free(g_wfctl.client);
    return rc;
}
