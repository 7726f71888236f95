/*
 * wfctl: command-line client of the workflow service.
 *
 *   wfctl [--addr HOST:PORT] [--key KEY] [--tenant T] [--actor A] [--groups G1,G2]
 *         [--timeout MS] [--tls] [--json] COMMAND [ARGS] [OPTIONS]
 *
 * Flags fall back to WFCTL_ADDR, WFCTL_API_KEY, WFCTL_TENANT, WFCTL_ACTOR,
 * WFCTL_ACTOR_GROUPS, WFCTL_TIMEOUT and WFCTL_TLS. Exit status: 0 on
 * success, 1 when a call failed (the gRPC code and reason are printed on
 * stderr, as one JSON object with --json), 2 for a usage error. The global
 * flags are a table (wfctl_globals) that the help, the man page and the
 * shell completion are generated from; the commands live in
 * wfctl_commands.c.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfctl.h"

struct wfctl g_wfctl;

const struct wfctl_global wfctl_globals[] = {
    {"addr", "HOST:PORT", "WFCTL_ADDR",
     "server address (default 127.0.0.1:50051; or dns:///svc:50051, unix:/path)"},
    {"key", "KEY", "WFCTL_API_KEY", "API key, sent as x-api-key"},
    {"tenant", "T", "WFCTL_TENANT", "tenant, x-tenant-id (server default \"default\")"},
    {"actor", "A", "WFCTL_ACTOR", "acting person, x-actor-id"},
    {"groups", "G1,G2", "WFCTL_ACTOR_GROUPS", "the actor's groups, x-actor-groups"},
    {"timeout", "MS", "WFCTL_TIMEOUT", "per-call deadline in milliseconds (default 10000)"},
    {"tls", NULL, "WFCTL_TLS", "use TLS with the system roots (the variable: 1 or true)"},
    {"json", NULL, NULL,
     "print JSON, one object per line, errors too (also accepted after the command)"},
    {"version", NULL, NULL, "print \"wfctl VERSION\" and exit"},
    {"help", NULL, NULL, "print this help and exit"},
    {NULL, NULL, NULL, NULL},
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: wfctl [global flags] COMMAND [ARGS] [OPTIONS]\n"
               "\n"
               "global flags:\n");
    for (const struct wfctl_global *g = wfctl_globals; g->name != NULL; g++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s%s%s", g->name, g->meta != NULL ? " " : "",
                 g->meta != NULL ? g->meta : "");
        fprintf(f, "  %-18s %s%s%s%s\n", flag, g->help, g->env != NULL ? " (" : "",
                g->env != NULL ? g->env : "", g->env != NULL ? ")" : "");
    }
    fprintf(f, "\n"
               "commands:\n");
    wfctl_list_commands(f);
    fprintf(f, "\n"
               "'wfctl COMMAND --help' describes a command. Exit status: 0 success, 1 the call\n"
               "failed (\"error: CODE (REASON): message\" on stderr), 2 usage error.\n");
}

/* "text" up to the first sep as a JSON string, the rest after it in *rest. */
static json_t *
json_split(const char *text, const char *sep, const char **rest)
{
    const char *p = strstr(text, sep);
    *rest = p != NULL ? p + strlen(sep) : "";
    return p != NULL ? json_stringn_nocheck(text, (size_t)(p - text)) : json_string_nocheck(text);
}

/* The error object of --json: {"error":{"code","code_number","reason",
 * "domain","message","violations":[{"field","description","reason"}],
 * "metadata":{}}} on one line on stderr. */
static void
fail_json(const wf_client_status *st)
{
    json_t *e = json_object();
    json_object_set_new(e, "code", json_string(wf_client_code_name(st->code)));
    json_object_set_new(e, "code_number", json_integer(st->code));
    json_object_set_new(e, "reason", json_string_nocheck(st->reason));
    json_object_set_new(e, "domain", json_string_nocheck(st->domain));
    json_object_set_new(e, "message", json_string_nocheck(st->message));
    json_t *vs = json_array();
    int nv = st->nviolations < 8 ? st->nviolations : 8;
    for (int i = 0; i < nv; i++) {
        json_t *v = json_object();
        const char *desc;
        json_object_set_new(v, "field", json_split(st->violations[i], ": ", &desc));
        json_object_set_new(v, "description", json_string_nocheck(desc));
        json_object_set_new(v, "reason", json_string_nocheck(st->violation_reasons[i]));
        json_array_append_new(vs, v);
    }
    json_object_set_new(e, "violations", vs);
    json_object_set_new(e, "violations_total", json_integer(st->nviolations));
    json_t *md = json_object();
    int nm = st->nmetadata < 8 ? st->nmetadata : 8;
    for (int i = 0; i < nm; i++) {
        const char *value;
        json_t *k = json_split(st->metadata[i], "=", &value);
        json_object_set_new(md, json_string_value(k), json_string_nocheck(value));
        json_decref(k);
    }
    json_object_set_new(e, "metadata", md);
    json_t *o = json_object();
    json_object_set_new(o, "error", e);
    json_print_line(stderr, o);
    json_decref(o);
}

int
wfctl_fail(const wf_client_status *st)
{
    fflush(stdout);
    if (g_wfctl.json_errors) {
        fail_json(st);
        return WFCTL_FAILED;
    }
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
wfctl_fail_local(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (g_wfctl.json_errors) {
        json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", "CLIENT", "message", msg);
        json_print_line(stderr, o);
        json_decref(o);
    } else {
        fprintf(stderr, "error: %s\n", msg);
    }
    return WFCTL_FAILED;
}

int
wfctl_usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (g_wfctl.json_errors) {
        json_t *o = json_pack("{s:{s:s,s:i,s:s}}", "error", "code", "USAGE", "exit_status",
                              WFCTL_USAGE, "message", msg);
        json_print_line(stderr, o);
        json_decref(o);
    } else {
        fprintf(stderr, "wfctl: %s\n", msg);
    }
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
    /* --json anywhere before "--" makes every error JSON, also those found
     * before the flag is parsed. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            g_wfctl.json_errors = 1;
    opterr = !g_wfctl.json_errors;
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
            g_wfctl.json = g_wfctl.json_errors = 1;
            break;
        case 'h':
            usage(stdout);
            return WFCTL_OK;
        case 'V':
            printf("wfctl %s\n", WF_VERSION);
            return WFCTL_OK;
        default:
            if (g_wfctl.json_errors)
                return wfctl_usage_error("unknown global flag or missing value: %s",
                                         argv[optind - 1]);
            usage(stderr);
            return WFCTL_USAGE;
        }
    }
    if (optind >= argc) {
        if (g_wfctl.json_errors)
            return wfctl_usage_error("missing COMMAND (see 'wfctl --help')");
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
        return wfctl_fail_local("out of memory");
    }
    int rc = wfctl_run_command(argc - optind, argv + optind);
    fflush(stdout);
    wf_client_free(g_wfctl.client);
    return rc;
}
