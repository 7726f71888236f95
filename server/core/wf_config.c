/*
 * wf_config: environment → immutable wf_config, with the startup rules.
 *
 * Parsing is strict: a malformed number or boolean is an error naming the
 * variable, never a silent default. Secrets (API keys, DATABASE_URL) are
 * never logged or echoed in messages.
 */
#include "wf_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "wf_log.h"

static const char *
env_get(char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

/* Non-empty value or NULL. */
static const char *
env_str(char *const *env, const char *name)
{
    const char *v = env_get(env, name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static bool
env_int(char *const *env, const char *name, int min, int max, int *out, wf_error *err)
{
    const char *v = env_str(env, name);
    if (v == NULL)
        return true;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end != '\0' || n < min || n > max) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s must be an integer between %d and %d", name,
                     min, max);
        return false;
    }
    *out = (int)n;
    return true;
}

static bool
env_bool(char *const *env, const char *name, bool *out, wf_error *err)
{
    const char *v = env_str(env, name);
    if (v == NULL)
        return true;
    if (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0) {
        *out = true;
    } else if (strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0) {
        *out = false;
    } else {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s must be true or false", name);
        return false;
    }
    return true;
}

#define DAY_S (24LL * 3600)

/* A duration "<n>[s|m|h|d]" (a bare number is seconds) between min_s and
 * max_s seconds. */
static bool
env_duration(char *const *env, const char *name, long long min_s, long long max_s, long long *out,
             wf_error *err)
{
    const char *v = env_str(env, name);
    if (v == NULL)
        return true;
    char *end;
    long long n = strtoll(v, &end, 10);
    static const char units[] = "smhd";
    static const long long unit_s[] = {1, 60, 3600, DAY_S};
    long long unit = 1;
    const char *u = end != v && end[0] != '\0' && end[1] == '\0' ? strchr(units, end[0]) : NULL;
    if (u != NULL) {
        unit = unit_s[u - units];
        end++;
    }
    /* Checked before multiplying, so the product cannot overflow. */
    if (end == v || *end != '\0' || n < 0 || n > max_s / unit || n * unit < min_s) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "%s must be a duration such as 90s, 30m, 24h or 7d, between %llds and %lldd",
                     name, min_s, max_s / DAY_S);
        return false;
    }
    *out = n * unit;
    return true;
}

/* Splits a comma list, trimming blanks and skipping empty items. */
static char **
split_list(const char *s, size_t *count)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        if (*p == ',')
            cap++;
    char **items = calloc(cap, sizeof *items);
    size_t n = 0;
    const char *p = s;
    while (items != NULL && *p) {
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a)
            items[n++] = strndup(a, (size_t)(b - a));
        p = *end ? end + 1 : end;
    }
    *count = n;
    return items;
}

static void
free_list(char **items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/* WF_API_KEYS or WF_API_KEYS_FILE, not both: the file's keys can change
 * while the server runs, the environment's cannot, and a set made of both
 * would keep a key of the environment that a rotation meant to remove. */
static bool
load_keys(wf_config *cfg, char *const *env, wf_error *err)
{
    const char *list = env_str(env, "WF_API_KEYS");
    const char *file = env_str(env, "WF_API_KEYS_FILE");
    if (list != NULL && file != NULL)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "WF_API_KEYS and WF_API_KEYS_FILE are both set: set one (the keys "
                            "of WF_API_KEYS_FILE rotate without a restart)"),
               false;
    if (file != NULL) {
        cfg->api_keys_file = strdup(file);
        if (cfg->api_keys_file == NULL)
            return wf_error_nomem(err), false;
        cfg->keys = wf_keys_from_file(file, err);
        return cfg->keys != NULL;
    }
    if (list == NULL)
        return true;
    cfg->keys = wf_keys_from_list(list, "WF_API_KEYS", err);
    if (cfg->keys != NULL && wf_keys_count(cfg->keys) == 0) {
        wf_keys_free(cfg->keys); /* only separators: no key, as if unset */
        cfg->keys = NULL;
        return true;
    }
    return cfg->keys != NULL;
}

static bool
parse_groups(wf_config *cfg, char *const *env)
{
    static const char prefix[] = "WF_GROUP_";
    size_t cap = 0;
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        if (strncmp(env[i], prefix, sizeof prefix - 1) == 0)
            cap++;
    if (cap == 0)
        return true;
    cfg->groups = calloc(cap, sizeof *cfg->groups);
    if (cfg->groups == NULL)
        return false;
    for (size_t i = 0; env[i] != NULL; i++) {
        if (strncmp(env[i], prefix, sizeof prefix - 1) != 0)
            continue;
        const char *name = env[i] + sizeof prefix - 1;
        const char *eq = strchr(name, '=');
        if (eq == NULL || eq == name)
            continue;
        wf_config_group *g = &cfg->groups[cfg->ngroups++];
        g->id = strndup(name, (size_t)(eq - name));
        g->members = split_list(eq + 1, &g->nmembers);
    }
    return true;
}

bool
wf_config_open_access(const wf_config *cfg)
{
    return cfg->development && cfg->keys == NULL;
}

bool
wf_config_find_key(const wf_config *cfg, const char *key, size_t klen, wf_key_match *out)
{
    return cfg->keys != NULL && wf_keys_find(cfg->keys, key, klen, out);
}

bool
wf_config_watch_keys(const wf_config *cfg, wf_error *err)
{
    return cfg->api_keys_file == NULL || wf_keys_watch(cfg->keys, 1000, err);
}

/* Sizes. Answers are bounded by WF_MAX_ANSWER_BYTES, the receive limit of
 * the clients (4 MiB, every gRPC client's default), whatever the request
 * limit; the variables of one instance tree by at most
 * wf_config_variables_max, so that every answer echoing them (GetInstance,
 * SetVariables, an activated job) fits with the fields beside them. */
static bool
load_sizes(wf_config *cfg, char *const *env, wf_error *err)
{
    cfg->max_answer_bytes = WF_CONFIG_CLIENT_RECEIVE_LIMIT;
    if (!env_int(env, "WF_MAX_ANSWER_BYTES", WF_CONFIG_MIN_ANSWER_BYTES, WF_CONFIG_MAX_ANSWER_BYTES,
                 &cfg->max_answer_bytes, err))
        return false;
    /* What a request stores (a definition, a signal's payload) is read
     * back in one answer. */
    if (cfg->max_message_bytes > cfg->max_answer_bytes) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_MAX_MESSAGE_BYTES (%d) must not pass WF_MAX_ANSWER_BYTES (%d): what a "
                     "request stores is read back in one answer; raise WF_MAX_ANSWER_BYTES to "
                     "the clients' receive limit, or lower WF_MAX_MESSAGE_BYTES",
                     cfg->max_message_bytes, cfg->max_answer_bytes);
        return false;
    }
    int most = (int)wf_config_variables_max(cfg);
    cfg->max_variables_bytes = most;
    if (!env_int(env, "WF_MAX_VARIABLES_BYTES", 1024, most, &cfg->max_variables_bytes, err)) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_MAX_VARIABLES_BYTES must be an integer between 1024 and %d "
                     "(WF_MAX_ANSWER_BYTES, %d, less the room an answer keeps beside the "
                     "variables)",
                     most, cfg->max_answer_bytes);
        return false;
    }
    return true;
}

wf_config *
wf_config_load(char *const *env, wf_error *err)
{
    wf_config *cfg = calloc(1, sizeof *cfg);
    if (cfg == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    /* Handlers block on Postgres, so a CPU serves several workers: with
     * one worker per CPU, the database round trips left the CPUs idle. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = ncpu > 0 && ncpu < 16 ? 4 * (int)ncpu : 64;
    cfg->max_message_bytes = 4 * 1024 * 1024;
    cfg->log_level = WF_LOG_INFO;
    cfg->grace_seconds = 10;
    cfg->sweep_interval_s = 60;
    cfg->idempotency_retention_s = DAY_S;
    cfg->signal_retention_s = 7 * DAY_S;
    cfg->batch_lease_s = 30;
    cfg->job_priority_aging_ms = 1000;
    cfg->foreach_max_items = 1000;
    cfg->call_max_depth = 16;
    cfg->fanout_chunk = 200;
    cfg->schedule_backfill_max = 1000;

    const char *v = env_str(env, "WF_ENV");
    if (v != NULL && strcmp(v, "development") != 0 && strcmp(v, "production") != 0) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_ENV must be \"production\" or \"development\"");
        goto fail;
    }
    cfg->development = v != NULL && strcmp(v, "development") == 0;
    cfg->drain_seconds = cfg->development ? 0 : 5;

    cfg->addr = strdup((v = env_str(env, "WF_ADDR")) ? v : "0.0.0.0:50051");
    if ((v = env_str(env, "DATABASE_URL")) != NULL)
        cfg->database_url = strdup(v);
    if ((v = env_str(env, "WF_METRICS_ADDR")) != NULL)
        cfg->metrics_addr = strdup(v);
    if ((v = env_str(env, "WF_CONSOLE_ADDR")) != NULL)
        cfg->console_addr = strdup(v);
    if ((v = env_str(env, "WF_TLS_CERT")) != NULL)
        cfg->tls_cert = strdup(v);
    if ((v = env_str(env, "WF_TLS_KEY")) != NULL)
        cfg->tls_key = strdup(v);
    if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL)) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_TLS_CERT and WF_TLS_KEY must be set together");
        goto fail;
    }

    if (!env_int(env, "WF_THREADS", 1, 256, &cfg->threads, err))
        goto fail;
    /* Bulkheads: each class runs beside the shared threads, up to its
     * limit; a call in the expression class keeps its unit of work (and
     * its Postgres connection) while it waits, so the pool has room for
     * them beside the shared threads. */
    cfg->bulkhead_diagram = cfg->bulkhead_compile = cfg->bulkhead_expr = 2;
    cfg->expr_slow_ms = 50;
    cfg->diagram_cache_bytes = 32 * 1024 * 1024;
    if (!env_int(env, "WF_BULKHEAD_DIAGRAM", 1, 256, &cfg->bulkhead_diagram, err) ||
        !env_int(env, "WF_BULKHEAD_COMPILE", 1, 256, &cfg->bulkhead_compile, err) ||
        !env_int(env, "WF_BULKHEAD_EXPR", 1, 256, &cfg->bulkhead_expr, err) ||
        !env_int(env, "WF_EXPR_SLOW_MS", 1, 60000, &cfg->expr_slow_ms, err) ||
        !env_int(env, "WF_DIAGRAM_CACHE_BYTES", 0, 1024 * 1024 * 1024, &cfg->diagram_cache_bytes,
                 err))
        goto fail;
    cfg->db_pool_size = cfg->threads + cfg->bulkhead_expr + 2;
    if (!env_int(env, "WF_DB_POOL_SIZE", 1, 1024, &cfg->db_pool_size, err) ||
        !env_int(env, "WF_MAX_MESSAGE_BYTES", 1024, 64 * 1024 * 1024, &cfg->max_message_bytes,
                 err) ||
        !env_int(env, "WF_DRAIN_SECONDS", 0, 3600, &cfg->drain_seconds, err) ||
        !env_int(env, "WF_GRACE_SECONDS", 0, 3600, &cfg->grace_seconds, err) ||
        !env_bool(env, "WF_TRUST_ACTOR_GROUPS", &cfg->trust_actor_groups, err))
        goto fail;
    if (!load_sizes(cfg, env, err))
        goto fail;
    /* StartInstance of a key without any definition creates an AD_HOC
     * version 1 (TaskFlow's Start) unless this is false. */
    cfg->auto_create_definitions = true;
    if (!env_bool(env, "WF_AUTO_CREATE_DEFINITIONS", &cfg->auto_create_definitions, err))
        goto fail;

    cfg->expr_timeout_ms = 1000;
    cfg->expr_memory_mb = 256;
    cfg->expr_workers = cfg->threads + 2;
    if ((v = env_str(env, "WF_EXPR_ISOLATION")) != NULL && strcmp(v, "process") != 0) {
        if (strcmp(v, "inline") != 0) {
            wf_error_set(err, WF_E_INVALID_ARGUMENT,
                         "WF_EXPR_ISOLATION must be \"process\" or \"inline\"");
            goto fail;
        }
        cfg->expr_inline = true;
    }
    if (!env_int(env, "WF_EXPR_TIMEOUT_MS", 10, 60000, &cfg->expr_timeout_ms, err) ||
        !env_int(env, "WF_EXPR_MEMORY_MB", 32, 65536, &cfg->expr_memory_mb, err) ||
        !env_int(env, "WF_EXPR_WORKERS", 1, 256, &cfg->expr_workers, err))
        goto fail;
    /* Overload bounds: beyond them a call is refused at once
     * (RESOURCE_EXHAUSTED OVERLOADED / EXPRESSION_LIMIT) instead of waiting
     * for its deadline. Inline evaluation serves trusted definitions only:
     * production refuses it. */
    cfg->max_queued_calls = 8 * cfg->threads > 64 ? 8 * cfg->threads : 64;
    cfg->expr_max_queued = 2 * cfg->expr_workers;
    if (!env_int(env, "WF_MAX_QUEUED_CALLS", 1, 1000000, &cfg->max_queued_calls, err) ||
        !env_int(env, "WF_EXPR_MAX_QUEUED", 1, 100000, &cfg->expr_max_queued, err))
        goto fail;
    if (cfg->expr_inline && !cfg->development) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_EXPR_ISOLATION=inline is refused in production: inline evaluation "
                     "runs expressions in the server process without limits and is for trusted "
                     "definitions in development only");
        goto fail;
    }

    /* WF_EVENT_RETENTION unset or 0 keeps events forever; the others need
     * at least a second (0 would delete what was just written). */
    if (!env_duration(env, "WF_RETENTION_INTERVAL", 1, DAY_S, &cfg->sweep_interval_s, err) ||
        !env_duration(env, "WF_IDEMPOTENCY_RETENTION", 1, 3650 * DAY_S,
                      &cfg->idempotency_retention_s, err) ||
        !env_duration(env, "WF_SIGNAL_RETENTION", 1, 3650 * DAY_S, &cfg->signal_retention_s, err) ||
        !env_duration(env, "WF_EVENT_RETENTION", 0, 3650 * DAY_S, &cfg->event_retention_s, err) ||
        !env_duration(env, "WF_BATCH_LEASE", 1, DAY_S, &cfg->batch_lease_s, err) ||
        !env_int(env, "WF_SIGNAL_FANOUT_CHUNK", 1, 1000, &cfg->fanout_chunk, err) ||
        !env_int(env, "WF_SCHEDULE_BACKFILL_MAX", 1, 100000, &cfg->schedule_backfill_max, err) ||
        !env_int(env, "WF_JOB_PRIORITY_AGING_MS", 1, 3600000, &cfg->job_priority_aging_ms, err) ||
        !env_int(env, "WF_FOREACH_MAX_ITEMS", 1, 100000, &cfg->foreach_max_items, err) ||
        !env_int(env, "WF_CALL_MAX_DEPTH", 1, 100, &cfg->call_max_depth, err))
        goto fail;

    if ((v = env_str(env, "WF_LOG_LEVEL")) != NULL) {
        cfg->log_level = wf_log_parse_level(v);
        if (cfg->log_level < 0) {
            wf_error_set(err, WF_E_INVALID_ARGUMENT,
                         "WF_LOG_LEVEL must be debug, info, warn or error");
            goto fail;
        }
    }
    if (!load_keys(cfg, env, err))
        goto fail;
    if ((v = env_str(env, "WF_USERS")) != NULL)
        cfg->users = split_list(v, &cfg->nusers);
    if (!parse_groups(cfg, env)) {
        wf_error_nomem(err);
        goto fail;
    }

    /* Every missing setting is named at once, so that one failed start
     * says all that is missing. */
    const char *no_keys =
        !cfg->development && cfg->keys == NULL ? "WF_API_KEYS (or WF_API_KEYS_FILE)" : NULL;
    const char *no_db = !cfg->development && cfg->database_url == NULL ? "DATABASE_URL" : NULL;
    if (no_keys != NULL || no_db != NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "required outside development, not set: %s%s%s (set WF_ENV=development to "
                     "run without keys on the memory store, for development and tests only)",
                     no_keys != NULL ? no_keys : "", no_keys != NULL && no_db != NULL ? ", " : "",
                     no_db != NULL ? no_db : "");
        goto fail;
    }
    return cfg;
fail:
    wf_config_free(cfg);
    return NULL;
}

int
wf_config_send_limit(const wf_config *cfg)
{
    return cfg->max_answer_bytes;
}

int
wf_config_receive_limit(const wf_config *cfg)
{
    return cfg->max_message_bytes * 2;
}

size_t
wf_config_answer_budget(const wf_config *cfg)
{
    size_t limit = (size_t)wf_config_send_limit(cfg);
    return limit - limit / 16;
}

size_t
wf_config_variables_max(const wf_config *cfg)
{
    size_t limit = (size_t)wf_config_send_limit(cfg);
    size_t beside = limit / 16 > WF_CONFIG_ANSWER_RESERVE ? limit / 16 : WF_CONFIG_ANSWER_RESERVE;
    return wf_config_answer_budget(cfg) - beside;
}

void
wf_config_free(wf_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->addr);
    free(cfg->database_url);
    free(cfg->metrics_addr);
    free(cfg->console_addr);
    free(cfg->tls_cert);
    free(cfg->tls_key);
    wf_keys_free(cfg->keys); /* stops its watcher, scrubs the keys */
    free(cfg->api_keys_file);
    free_list(cfg->users, cfg->nusers);
    for (size_t i = 0; i < cfg->ngroups; i++) {
        free(cfg->groups[i].id);
        free_list(cfg->groups[i].members, cfg->groups[i].nmembers);
    }
    free(cfg->groups);
    free(cfg);
}
