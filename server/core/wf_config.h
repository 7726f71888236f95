/*
 * config: the service's configuration, read once from the environment.
 *
 * The struct is immutable after wf_config_load() returns and is shared by
 * every thread without locking; only the API keys of WF_API_KEYS_FILE
 * change, behind their own lock (wf_keys.h). See README.md "Configuration" for the
 * variables and their defaults.
 */
#ifndef WF_CONFIG_H
#define WF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "wf_error.h"
#include "wf_keys.h"

/* One static directory group from WF_GROUP_<id>. */
typedef struct wf_config_group {
    char *id;
    char **members;
    size_t nmembers;
} wf_config_group;

typedef struct wf_config {
    char *addr;          /* WF_ADDR, default 0.0.0.0:50051 */
    char *database_url;  /* DATABASE_URL; NULL selects the memory store */
    int db_pool_size;    /* WF_DB_POOL_SIZE, default threads + bulkhead_expr + 2 */
    int threads;         /* WF_THREADS, default = number of CPUs */
    wf_keys *keys;       /* WF_API_KEYS or WF_API_KEYS_FILE; NULL when no key is set */
    char *api_keys_file; /* WF_API_KEYS_FILE (path); NULL when the keys are WF_API_KEYS' */
    bool development;    /* WF_ENV=development */
    char **users;        /* WF_USERS (static directory) */
    size_t nusers;
    wf_config_group *groups; /* WF_GROUP_<id> */
    size_t ngroups;
    bool trust_actor_groups;      /* WF_TRUST_ACTOR_GROUPS=true */
    bool auto_create_definitions; /* WF_AUTO_CREATE_DEFINITIONS, default true */
    char *metrics_addr;           /* WF_METRICS_ADDR; NULL = no metrics endpoint */
    char *console_addr;           /* WF_CONSOLE_ADDR; NULL = no web console */
    int log_level;                /* WF_LOG_LEVEL (wf_log_level) */
    int max_message_bytes;        /* WF_MAX_MESSAGE_BYTES: one request, default 4 MiB */
    int max_answer_bytes;         /* WF_MAX_ANSWER_BYTES: one answer, default 4 MiB */
    int max_variables_bytes;      /* WF_MAX_VARIABLES_BYTES: one instance tree, default and
                                     most wf_config_variables_max */
    int drain_seconds;            /* WF_DRAIN_SECONDS, default 5 (0 in development) */
    int grace_seconds;            /* WF_GRACE_SECONDS: in-flight calls after drain, default 10 */
    char *tls_cert;               /* WF_TLS_CERT (path) */
    char *tls_key;                /* WF_TLS_KEY (path) */
    bool expr_inline;             /* WF_EXPR_ISOLATION=inline (default process) */
    int expr_timeout_ms;          /* WF_EXPR_TIMEOUT_MS, default 1000 */
    int expr_memory_mb;           /* WF_EXPR_MEMORY_MB, default 256 */
    int expr_workers;             /* WF_EXPR_WORKERS, default threads + 2 */
    /* Overload bounds. */
    int max_queued_calls; /* WF_MAX_QUEUED_CALLS: calls waiting for a thread, default 8 x threads,
                             at least 64 */
    int expr_max_queued;  /* WF_EXPR_MAX_QUEUED: evaluations waiting for a worker, default
                             2 x expr_workers */
    /* Bulkheads (wf_bulkhead.h): calls at once in each expensive class of
     * work, beside the shared threads. */
    int bulkhead_diagram;    /* WF_BULKHEAD_DIAGRAM: diagram layouts, default 2 */
    int bulkhead_compile;    /* WF_BULKHEAD_COMPILE: definitions compiling expressions, default 2 */
    int bulkhead_expr;       /* WF_BULKHEAD_EXPR: evaluations past expr_slow_ms, default 2 */
    int expr_slow_ms;        /* WF_EXPR_SLOW_MS: an evaluation's budget on a shared thread, 50 */
    int diagram_cache_bytes; /* WF_DIAGRAM_CACHE_BYTES: laid-out diagrams kept, 32 MiB; 0 = off */
    /* Retention (the scheduler's sweep), in seconds. Durations are read as
     * "<n>[s|m|h|d]"; a bare number is seconds. */
    long long sweep_interval_s;        /* WF_RETENTION_INTERVAL, default 60 */
    long long idempotency_retention_s; /* WF_IDEMPOTENCY_RETENTION, default 24 h */
    long long signal_retention_s; /* WF_SIGNAL_RETENTION: expired signals, deliveries run, 7 d */
    long long event_retention_s;  /* WF_EVENT_RETENTION: events of ended trees; 0 = keep */
    /* Batch operations: how long a replica's claim of one keeps the
     * others off (a dead replica's batch is taken over after it). */
    long long batch_lease_s; /* WF_BATCH_LEASE, default 30 s */
    /* Signal fan-out: deliveries a scheduler pass claims and runs. */
    int fanout_chunk;          /* WF_SIGNAL_FANOUT_CHUNK, default 200, 1-1000 */
    int job_priority_aging_ms; /* WF_JOB_PRIORITY_AGING_MS: a priority point's worth of
                                  waiting, default 1000, 1-3600000 */
    /* BackfillSchedule: fire times one call may run. */
    int schedule_backfill_max; /* WF_SCHEDULE_BACKFILL_MAX, default 1000, 1-100000 */
    int foreach_max_items;     /* WF_FOREACH_MAX_ITEMS: items of one for-each transition,
                                  default 1000, 1-100000 */
    int call_max_depth;        /* WF_CALL_MAX_DEPTH: levels a chain of calls nests below its
                                  root, default 16, 1-100 */
} wf_config;

/* Reads the configuration from an environment given as a NULL-terminated
 * "NAME=value" array (pass `environ` in main; tests pass their own). Checks
 * the startup rules: outside development, API keys (WF_API_KEYS or
 * WF_API_KEYS_FILE, not both) and DATABASE_URL are required. On failure returns NULL and err says
 * which variable is wrong. The result is owned by the caller: release with wf_config_free(). */
wf_config *wf_config_load(char *const *env, wf_error *err);

void wf_config_free(wf_config *cfg);

/* Every gRPC client library (C core, Python, Go, Java, Node, .NET)
 * receives at most 4 MiB in one message unless its channel is told
 * otherwise, and generated clients keep that: the default of
 * WF_MAX_ANSWER_BYTES. */
#define WF_CONFIG_CLIENT_RECEIVE_LIMIT (4 * 1024 * 1024)
/* WF_MAX_ANSWER_BYTES' range: 16 KiB (an answer keeps
 * WF_CONFIG_ANSWER_RESERVE beside variables of at least 1024 bytes) to
 * 1 GiB. */
#define WF_CONFIG_MIN_ANSWER_BYTES (16 * 1024)
#define WF_CONFIG_MAX_ANSWER_BYTES (1024 * 1024 * 1024)
/* What an answer keeps beside a tree's variables at least: an activated
 * job's ids, error (at most 5 KiB) and idempotency key, or the tasks and
 * tokens of GetInstance. */
#define WF_CONFIG_ANSWER_RESERVE (8 * 1024)

/* The largest message the server sends (grpc's send limit):
 * WF_MAX_ANSWER_BYTES. */
int wf_config_send_limit(const wf_config *cfg);

/* grpc core's own limit on a received message: twice WF_MAX_MESSAGE_BYTES,
 * so that most oversized requests reach the server's check and get the
 * TOO_LARGE reason. */
int wf_config_receive_limit(const wf_config *cfg);

/* What one answer's rows (jobs, list entries, an instance's children) may
 * take: the send limit less a sixteenth, the margin of the estimates and
 * the rest of the message. */
size_t wf_config_answer_budget(const wf_config *cfg);

/* The most WF_MAX_VARIABLES_BYTES may be, and its default: the answer
 * budget less a sixteenth of the send limit (at least
 * WF_CONFIG_ANSWER_RESERVE), so that an activated job or a GetInstance
 * answer of a tree at the bound still fits with the fields beside the
 * variables. 3.5 MiB of a 4 MiB send limit. */
size_t wf_config_variables_max(const wf_config *cfg);

/* True when no API key is configured and development mode allows that:
 * every call is then accepted without a key. */
bool wf_config_open_access(const wf_config *cfg);

/* Constant-time comparison of a presented secret (len bytes, which may hold
 * NULs) with a configured one: the time depends only on the configured
 * secret's length. */
int wf_secret_equal(const char *presented, size_t presented_len, const char *expected);

/* The configured API key equal to the presented one: true and *out filled
 * (wf_keys_find), false when none is, or no key is configured. */
bool wf_config_find_key(const wf_config *cfg, const char *key, size_t klen, wf_key_match *out);

/* Starts re-reading WF_API_KEYS_FILE every second (wf_keys_watch), so that
 * a key rotates without a restart; nothing without the file. The server
 * calls it once it serves; wf_config_free stops it. */
bool wf_config_watch_keys(const wf_config *cfg, wf_error *err);

#endif /* WF_CONFIG_H */
