/*
 * Unit tests of the configuration reader and its startup rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"
#include "wf_config.h"
#include "wf_keys.h"
#include "wf_log.h"

static wf_config *
load(const char *const *env, wf_error *err)
{
    wf_error_clear(err);
    return wf_config_load((char *const *)env, err);
}

WF_TEST(test_production_requires_keys_and_database)
{
    wf_error err;
    /* Neither: one refusal names both. */
    const char *none[] = {NULL};
    ck_assert_ptr_null(load(none, &err));
    ck_assert_int_eq(err.code, WF_E_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "not set: WF_API_KEYS (or WF_API_KEYS_FILE), DATABASE_URL") !=
                      NULL,
                  "%s", err.msg);

    const char *keys_only[] = {"WF_API_KEYS=k1", NULL};
    ck_assert_ptr_null(load(keys_only, &err));
    ck_assert_msg(strstr(err.msg, "not set: DATABASE_URL") != NULL, "%s", err.msg);
    ck_assert_ptr_null(strstr(err.msg, "WF_API_KEYS"));

    const char *db_only[] = {"DATABASE_URL=postgresql://x@127.0.0.1/db", NULL};
    ck_assert_ptr_null(load(db_only, &err));
    ck_assert_msg(strstr(err.msg, "not set: WF_API_KEYS (or WF_API_KEYS_FILE)") != NULL, "%s",
                  err.msg);
    ck_assert_ptr_null(strstr(err.msg, "DATABASE_URL"));

    const char *both[] = {"WF_API_KEYS=k1", "DATABASE_URL=postgresql://x@127.0.0.1/db", NULL};
    wf_config *cfg = load(both, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert(!cfg->development);
    ck_assert_int_eq(cfg->drain_seconds, 5);
    ck_assert(!wf_config_open_access(cfg));
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_development_defaults)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert(cfg->development);
    ck_assert_str_eq(cfg->addr, "0.0.0.0:50051");
    ck_assert_ptr_null(cfg->database_url);
    ck_assert_int_eq(cfg->max_message_bytes, 4 * 1024 * 1024);
    ck_assert_int_eq(cfg->drain_seconds, 0);
    ck_assert_int_eq(cfg->log_level, WF_LOG_INFO);
    ck_assert(cfg->threads >= 1);
    ck_assert(wf_config_open_access(cfg));
    ck_assert(cfg->auto_create_definitions);
    wf_config_free(cfg);
}
END_TEST

/* Answers are bounded by WF_MAX_ANSWER_BYTES, 4 MiB by default (what every
 * gRPC client receives unless told otherwise), whatever the request limit;
 * the variables of a tree by the answer limit less what an answer keeps
 * beside them, by default and at most. */
WF_TEST(test_sizes)
{
    wf_error err;
    const char *dflt[] = {"WF_ENV=development", NULL};
    wf_config *cfg = load(dflt, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->max_message_bytes, 4 * 1024 * 1024);
    ck_assert_int_eq(cfg->max_answer_bytes, 4 * 1024 * 1024);
    ck_assert_int_eq(wf_config_send_limit(cfg), 4 * 1024 * 1024);
    ck_assert_int_eq(wf_config_receive_limit(cfg), 8 * 1024 * 1024);
    ck_assert_uint_eq(wf_config_answer_budget(cfg), 4 * 1024 * 1024 - 256 * 1024);
    ck_assert_int_eq(cfg->max_variables_bytes, 3584 * 1024);
    ck_assert_uint_eq(wf_config_variables_max(cfg), 3584 * 1024);
    wf_config_free(cfg);

    /* Requests larger than answers: what they store could not be read. */
    const char *big_requests[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=16777216", NULL};
    ck_assert_ptr_null(load(big_requests, &err));
    ck_assert_str_eq(err.msg, "WF_MAX_MESSAGE_BYTES (16777216) must not pass WF_MAX_ANSWER_BYTES "
                              "(4194304): what a request stores is read back in one answer; "
                              "raise WF_MAX_ANSWER_BYTES to the clients' receive limit, or lower "
                              "WF_MAX_MESSAGE_BYTES");

    /* Clients that raised their receive limit to 16 MiB. */
    const char *raised[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=16777216",
                            "WF_MAX_ANSWER_BYTES=16777216", NULL};
    cfg = load(raised, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(wf_config_send_limit(cfg), 16 * 1024 * 1024);
    ck_assert_int_eq(wf_config_receive_limit(cfg), 32 * 1024 * 1024);
    ck_assert_int_eq(cfg->max_variables_bytes, 14 * 1024 * 1024);
    wf_config_free(cfg);

    /* Small answers keep at least 8 KiB beside the variables. */
    const char *small[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=65536",
                           "WF_MAX_ANSWER_BYTES=65536", NULL};
    cfg = load(small, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(wf_config_answer_budget(cfg), 61440);
    ck_assert_int_eq(cfg->max_variables_bytes, 61440 - 8192);
    wf_config_free(cfg);
    const char *lower[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=65536",
                           "WF_MAX_ANSWER_BYTES=65536", "WF_MAX_VARIABLES_BYTES=4096", NULL};
    cfg = load(lower, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->max_variables_bytes, 4096);
    wf_config_free(cfg);

    const char *over[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=65536",
                          "WF_MAX_ANSWER_BYTES=65536", "WF_MAX_VARIABLES_BYTES=53249", NULL};
    ck_assert_ptr_null(load(over, &err));
    ck_assert_str_eq(err.msg, "WF_MAX_VARIABLES_BYTES must be an integer between 1024 and 53248 "
                              "(WF_MAX_ANSWER_BYTES, 65536, less the room an answer keeps "
                              "beside the variables)");
    const char *past_default[] = {"WF_ENV=development", "WF_MAX_VARIABLES_BYTES=4194304", NULL};
    ck_assert_ptr_null(load(past_default, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "between 1024 and 3670016"));
    const char *answers[] = {"WF_MAX_ANSWER_BYTES=16383", "WF_MAX_ANSWER_BYTES=1073741825",
                             "WF_MAX_ANSWER_BYTES=4MiB"};
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        const char *env[] = {"WF_ENV=development", "WF_MAX_MESSAGE_BYTES=16384", answers[i], NULL};
        ck_assert_ptr_null(load(env, &err));
        ck_assert_str_eq(err.msg,
                         "WF_MAX_ANSWER_BYTES must be an integer between 16384 and 1073741824");
    }
}
END_TEST

WF_TEST(test_auto_create_definitions_can_be_turned_off)
{
    wf_error err;
    const char *off[] = {"WF_ENV=development", "WF_AUTO_CREATE_DEFINITIONS=false", NULL};
    wf_config *cfg = load(off, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert(!cfg->auto_create_definitions);
    wf_config_free(cfg);
    const char *bad[] = {"WF_ENV=development", "WF_AUTO_CREATE_DEFINITIONS=maybe", NULL};
    ck_assert_ptr_null(load(bad, &err));
    ck_assert_str_eq(err.msg, "WF_AUTO_CREATE_DEFINITIONS must be true or false");
}
END_TEST

WF_TEST(test_api_keys_with_and_without_tenant)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development", "WF_API_KEYS= k1 , k2=tenant-b,", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(wf_keys_count(cfg->keys), 2);
    wf_key_match k1, k2;
    ck_assert(wf_config_find_key(cfg, "k1", 2, &k1));
    ck_assert_str_eq(k1.tenant, "");
    ck_assert(wf_config_find_key(cfg, "k2", 2, &k2));
    ck_assert_str_eq(k2.tenant, "tenant-b");
    ck_assert_uint_eq(strlen(k1.key_id), 8);
    ck_assert_str_ne(k1.key_id, k2.key_id);
    ck_assert(!wf_config_open_access(cfg));
    wf_config_free(cfg);

    const char *bad[] = {"WF_ENV=development", "WF_API_KEYS=k1=", NULL};
    ck_assert_ptr_null(load(bad, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "WF_API_KEYS"));
    /* The message names the entry, never the key. */
    ck_assert_ptr_null(strstr(err.msg, "k1"));
}
END_TEST

/* Keys that could never be presented, tenants no call could name, and a
 * key listed twice (for two tenants: which one would it act in?) stop the
 * start with a message naming the entry, never the key. */
WF_TEST(test_api_keys_refused_at_start)
{
    wf_error err;
    const struct {
        const char *keys;
        const char *msg;
    } bad[] = {
        {"WF_API_KEYS=k-a=t a", "entry 1 must name a tenant"},
        {"WF_API_KEYS=k-b,k-a=t\xc3\xa9", "entry 2 must name a tenant"},
        {"WF_API_KEYS=k-a=ta,k-a=tb", "entry 2 repeats the key of entry 1"},
        {"WF_API_KEYS=k-a,k-b,k-a", "entry 3 repeats the key of entry 1"},
        {"WF_API_KEYS=k a", "entry 1 must have a key of printable ASCII"},
        {"WF_API_KEYS=k\x01"
         "a",
         "entry 1 must have a key of printable ASCII"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *env[] = {"WF_ENV=development", bad[i].keys, NULL};
        ck_assert_msg(load(env, &err) == NULL, "%s was accepted", bad[i].keys);
        ck_assert_int_eq(err.code, WF_E_INVALID_ARGUMENT);
        ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "%s: %s", bad[i].keys, err.msg);
        ck_assert_ptr_null(strstr(err.msg, "k-a"));
    }
    const char *ok[] = {"WF_ENV=development", "WF_API_KEYS=k-a=t.a_1-b,k-b=t.a_1-b", NULL};
    wf_config *cfg = load(ok, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(wf_keys_count(cfg->keys), 2);
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_directory_groups_and_users)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development", "WF_USERS=alice,bob", "WF_GROUP_it=alice, carol",
                         "WF_GROUP_finance=bob", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(cfg->nusers, 2);
    ck_assert_uint_eq(cfg->ngroups, 2);
    ck_assert_str_eq(cfg->groups[0].id, "it");
    ck_assert_uint_eq(cfg->groups[0].nmembers, 2);
    ck_assert_str_eq(cfg->groups[0].members[1], "carol");
    ck_assert_str_eq(cfg->groups[1].id, "finance");
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_malformed_values_are_errors)
{
    wf_error err;
    const char *cases[][3] = {
        {"WF_ENV=development", "WF_THREADS=zero", "WF_THREADS"},
        {"WF_ENV=development", "WF_THREADS=0", "WF_THREADS"},
        {"WF_ENV=development", "WF_DB_POOL_SIZE=-1", "WF_DB_POOL_SIZE"},
        {"WF_ENV=development", "WF_TRUST_ACTOR_GROUPS=maybe", "WF_TRUST_ACTOR_GROUPS"},
        {"WF_ENV=development", "WF_LOG_LEVEL=loud", "WF_LOG_LEVEL"},
        {"WF_ENV=staging", "WF_API_KEYS=k", "WF_ENV"},
        {"WF_ENV=development", "WF_TLS_CERT=/x.pem", "WF_TLS_KEY"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *env[] = {cases[i][0], cases[i][1], NULL};
        ck_assert_ptr_null(load(env, &err));
        ck_assert_int_eq(err.code, WF_E_INVALID_ARGUMENT);
        ck_assert_msg(strstr(err.msg, cases[i][2]) != NULL, "case %zu: %s", i, err.msg);
    }
}
END_TEST

WF_TEST(test_numbers_and_booleans_parse)
{
    wf_error err;
    const char *env[] = {
        "WF_ENV=development",         "WF_THREADS=3",           "WF_DB_POOL_SIZE=7",
        "WF_MAX_MESSAGE_BYTES=65536", "WF_DRAIN_SECONDS=2",     "WF_TRUST_ACTOR_GROUPS=true",
        "WF_LOG_LEVEL=debug",         "WF_ADDR=127.0.0.1:7000", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->threads, 3);
    ck_assert_int_eq(cfg->db_pool_size, 7);
    ck_assert_int_eq(cfg->max_message_bytes, 65536);
    ck_assert_int_eq(cfg->drain_seconds, 2);
    ck_assert(cfg->trust_actor_groups);
    ck_assert_int_eq(cfg->log_level, WF_LOG_DEBUG);
    ck_assert_str_eq(cfg->addr, "127.0.0.1:7000");
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_expression_limits)
{
    wf_error err;
    const char *dflt[] = {"WF_ENV=development", "WF_THREADS=3", NULL};
    wf_config *cfg = load(dflt, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert(!cfg->expr_inline);
    ck_assert_int_eq(cfg->expr_timeout_ms, 1000);
    ck_assert_int_eq(cfg->expr_memory_mb, 256);
    ck_assert_int_eq(cfg->expr_workers, 5);
    wf_config_free(cfg);

    const char *set[] = {"WF_ENV=development",    "WF_EXPR_ISOLATION=inline",
                         "WF_EXPR_TIMEOUT_MS=50", "WF_EXPR_MEMORY_MB=64",
                         "WF_EXPR_WORKERS=2",     NULL};
    cfg = load(set, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert(cfg->expr_inline);
    ck_assert_int_eq(cfg->expr_timeout_ms, 50);
    ck_assert_int_eq(cfg->expr_memory_mb, 64);
    ck_assert_int_eq(cfg->expr_workers, 2);
    wf_config_free(cfg);

    const char *bad_mode[] = {"WF_ENV=development", "WF_EXPR_ISOLATION=thread", NULL};
    ck_assert_ptr_null(load(bad_mode, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "WF_EXPR_ISOLATION"));
    const char *bad_mem[] = {"WF_ENV=development", "WF_EXPR_MEMORY_MB=1", NULL};
    ck_assert_ptr_null(load(bad_mem, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "WF_EXPR_MEMORY_MB"));
}
END_TEST

WF_TEST(test_inline_expressions_are_refused_in_production)
{
    wf_error err;
    const char *prod[] = {"WF_ENV=production", "WF_API_KEYS=k1",
                          "DATABASE_URL=postgresql://x@127.0.0.1/db", "WF_EXPR_ISOLATION=inline",
                          NULL};
    ck_assert_ptr_null(load(prod, &err));
    ck_assert_int_eq(err.code, WF_E_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "WF_EXPR_ISOLATION=inline is refused in production") != NULL,
                  "%s", err.msg);
    /* WF_ENV unset is production too. */
    const char *unset[] = {"WF_API_KEYS=k1", "DATABASE_URL=postgresql://x@127.0.0.1/db",
                           "WF_EXPR_ISOLATION=inline", NULL};
    ck_assert_ptr_null(load(unset, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "WF_EXPR_ISOLATION=inline"));
    /* process isolation in production is fine. */
    const char *proc[] = {"WF_API_KEYS=k1", "DATABASE_URL=postgresql://x@127.0.0.1/db",
                          "WF_EXPR_ISOLATION=process", NULL};
    wf_config *cfg = load(proc, &err);
    ck_assert_ptr_nonnull(cfg);
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_overload_bounds)
{
    wf_error err;
    const char *dflt[] = {"WF_ENV=development", "WF_THREADS=3", NULL};
    wf_config *cfg = load(dflt, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->max_queued_calls, 64); /* 8 x threads, at least 64 */
    ck_assert_int_eq(cfg->expr_max_queued, 10);
    wf_config_free(cfg);
    const char *set[] = {"WF_ENV=development", "WF_MAX_QUEUED_CALLS=7", "WF_EXPR_MAX_QUEUED=1",
                         NULL};
    cfg = load(set, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->max_queued_calls, 7);
    ck_assert_int_eq(cfg->expr_max_queued, 1);
    wf_config_free(cfg);
    const char *bad[] = {"WF_ENV=development", "WF_MAX_QUEUED_CALLS=0", NULL};
    ck_assert_ptr_null(load(bad, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "WF_MAX_QUEUED_CALLS"));
}
END_TEST

WF_TEST(test_retention_defaults)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_int_eq(cfg->sweep_interval_s, 60);
    ck_assert_int_eq(cfg->idempotency_retention_s, 24 * 3600);
    ck_assert_int_eq(cfg->signal_retention_s, 7 * 24 * 3600);
    ck_assert_int_eq(cfg->event_retention_s, 0); /* keep events forever */
    ck_assert_int_eq(cfg->batch_lease_s, 30);
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_retention_durations_parse)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development",
                         "WF_RETENTION_INTERVAL=90",
                         "WF_IDEMPOTENCY_RETENTION=36h",
                         "WF_SIGNAL_RETENTION=2d",
                         "WF_EVENT_RETENTION=30m",
                         "WF_BATCH_LEASE=2s",
                         NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(cfg->batch_lease_s, 2);
    ck_assert_int_eq(cfg->sweep_interval_s, 90);
    ck_assert_int_eq(cfg->idempotency_retention_s, 36 * 3600);
    ck_assert_int_eq(cfg->signal_retention_s, 2 * 24 * 3600);
    ck_assert_int_eq(cfg->event_retention_s, 30 * 60);
    wf_config_free(cfg);

    const char *keep[] = {"WF_ENV=development", "WF_EVENT_RETENTION=0", "WF_SIGNAL_RETENTION=5s",
                          NULL};
    cfg = load(keep, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_int_eq(cfg->event_retention_s, 0);
    ck_assert_int_eq(cfg->signal_retention_s, 5);
    wf_config_free(cfg);
}
END_TEST

WF_TEST(test_bad_retention_names_the_variable)
{
    static const char *const bad[][2] = {
        {"WF_IDEMPOTENCY_RETENTION", "WF_IDEMPOTENCY_RETENTION=24x"},
        {"WF_IDEMPOTENCY_RETENTION", "WF_IDEMPOTENCY_RETENTION=0"}, /* would drop every record */
        {"WF_IDEMPOTENCY_RETENTION", "WF_IDEMPOTENCY_RETENTION=-1h"},
        {"WF_EVENT_RETENTION", "WF_EVENT_RETENTION=h"},
        {"WF_EVENT_RETENTION", "WF_EVENT_RETENTION=99999999999999999999d"},
        {"WF_EVENT_RETENTION", "WF_EVENT_RETENTION=3651d"},
        {"WF_SIGNAL_RETENTION", "WF_SIGNAL_RETENTION=1.5h"},
        {"WF_RETENTION_INTERVAL", "WF_RETENTION_INTERVAL=2d"},
        {"WF_RETENTION_INTERVAL", "WF_RETENTION_INTERVAL=0"},
        {"WF_BATCH_LEASE", "WF_BATCH_LEASE=0"},
        {"WF_BATCH_LEASE", "WF_BATCH_LEASE=2d"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_error err;
        const char *env[] = {"WF_ENV=development", bad[i][1], NULL};
        ck_assert_msg(load(env, &err) == NULL, "%s accepted", bad[i][1]);
        ck_assert_int_eq(err.code, WF_E_INVALID_ARGUMENT);
        ck_assert_msg(strstr(err.msg, bad[i][0]) != NULL, "%s: %s", bad[i][1], err.msg);
        ck_assert_ptr_nonnull(strstr(err.msg, "duration"));
    }
}
END_TEST

/* The key lookup shared by the interceptors and the web console: the
 * matching key (and its tenant), none for a wrong, longer, shorter or
 * NUL-holding key; WF_CONSOLE_ADDR is read. */
WF_TEST(test_find_key)
{
    wf_error err;
    const char *env[] = {"WF_ENV=development", "WF_API_KEYS=k-one=acme,k-two",
                         "WF_CONSOLE_ADDR=127.0.0.1:8088", NULL};
    wf_config *cfg = load(env, &err);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_str_eq(cfg->console_addr, "127.0.0.1:8088");
    wf_key_match k;
    ck_assert(wf_config_find_key(cfg, "k-one", 5, &k));
    ck_assert_str_eq(k.tenant, "acme");
    ck_assert(wf_config_find_key(cfg, "k-two", 5, &k));
    ck_assert_str_eq(k.tenant, "");
    ck_assert(!wf_config_find_key(cfg, "k-on", 4, &k));
    ck_assert(!wf_config_find_key(cfg, "k-one1", 6, &k));
    ck_assert(!wf_config_find_key(cfg, "k-one\0", 6, &k));
    ck_assert(!wf_config_find_key(cfg, "", 0, &k));
    ck_assert(wf_secret_equal("abc", 3, "abc"));
    ck_assert(!wf_secret_equal("abd", 3, "abc"));
    wf_config_free(cfg);
}
END_TEST

/* ---- WF_API_KEYS_FILE ------------------------------------------------------ */

/* A scratch folder laid out as Kubernetes mounts a Secret: the file
 * "api-keys" is a link to "..data/api-keys", and "..data" a link to a
 * folder of the current content, swapped by a rename. */
typedef struct key_dir {
    char root[200];
    char file[260];
    int version;
} key_dir;

static void
key_dir_write(key_dir *d, const char *content)
{
    char ver[300], path[400], tmp[300], target[32];
    snprintf(target, sizeof target, "..v%d", ++d->version);
    snprintf(ver, sizeof ver, "%s/%s", d->root, target);
    ck_assert_int_eq(mkdir(ver, 0700), 0);
    snprintf(path, sizeof path, "%s/api-keys", ver);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    fclose(f);
    snprintf(tmp, sizeof tmp, "%s/..data_tmp", d->root);
    ck_assert_int_eq(symlink(target, tmp), 0);
    snprintf(path, sizeof path, "%s/..data", d->root);
    ck_assert_int_eq(rename(tmp, path), 0);
}

static void
key_dir_init(key_dir *d, const char *content)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->root, sizeof d->root, "%s/wf-keys-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(d->root));
    d->version = 0;
    key_dir_write(d, content);
    snprintf(d->file, sizeof d->file, "%s/api-keys", d->root);
    ck_assert_int_eq(symlink("..data/api-keys", d->file), 0);
}

static void
key_dir_remove(key_dir *d)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->root);
    ck_assert_int_eq(system(cmd), 0);
}

static bool
has_key(const wf_config *cfg, const char *key)
{
    wf_key_match m;
    return wf_config_find_key(cfg, key, strlen(key), &m);
}

static wf_config *
load_file(const key_dir *d, wf_error *err)
{
    char var[400];
    snprintf(var, sizeof var, "WF_API_KEYS_FILE=%s", d->file);
    const char *env[] = {"WF_ENV=development", var, NULL};
    return load(env, err);
}

/* The file holds WF_API_KEYS' entries, separated by commas or line breaks
 * (a WF_API_KEYS value works as it is, so does one entry per line); a
 * server with the file is never in open access. */
WF_TEST(test_api_keys_file_format)
{
    key_dir d;
    key_dir_init(&d, "k1\n  k2=tenant-b \r\n\n k3 , k4\n");
    wf_error err;
    wf_config *cfg = load_file(&d, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert_str_eq(cfg->api_keys_file, d.file);
    ck_assert_uint_eq(wf_keys_count(cfg->keys), 4);
    wf_key_match m;
    ck_assert(wf_config_find_key(cfg, "k2", 2, &m));
    ck_assert_str_eq(m.tenant, "tenant-b");
    ck_assert(has_key(cfg, "k1") && has_key(cfg, "k3") && has_key(cfg, "k4"));
    ck_assert(!wf_config_open_access(cfg));
    wf_config_free(cfg);
    key_dir_remove(&d);
}
END_TEST

/* At start: both settings, a file that cannot be read, holds no key or
 * breaks a rule stop the start; the message names the file and the entry
 * (and its line), never a key. */
WF_TEST(test_api_keys_file_refused_at_start)
{
    key_dir d;
    key_dir_init(&d, "k-good\nk-secret=bad tenant\n");
    wf_error err;
    ck_assert_ptr_null(load_file(&d, &err));
    ck_assert_msg(strstr(err.msg, "WF_API_KEYS_FILE entry 2 (line 2) must name a tenant") != NULL,
                  "%s", err.msg);
    ck_assert_ptr_null(strstr(err.msg, "k-secret"));
    key_dir_write(&d, "k-a\nk-b,k-a\n");
    ck_assert_ptr_null(load_file(&d, &err));
    ck_assert_msg(strstr(err.msg, "entry 3 (line 2) repeats the key of entry 1") != NULL, "%s",
                  err.msg);
    key_dir_write(&d, " \n,\n");
    ck_assert_ptr_null(load_file(&d, &err));
    ck_assert_str_eq(err.msg, "WF_API_KEYS_FILE holds no key");

    char var[400];
    snprintf(var, sizeof var, "WF_API_KEYS_FILE=%s/missing", d.root);
    const char *missing[] = {"WF_ENV=development", var, NULL};
    ck_assert_ptr_null(load(missing, &err));
    ck_assert_msg(strstr(err.msg, "/missing\" cannot be read: No such file") != NULL, "%s",
                  err.msg);
    snprintf(var, sizeof var, "WF_API_KEYS_FILE=%s", d.root);
    const char *folder[] = {"WF_ENV=development", var, NULL};
    ck_assert_ptr_null(load(folder, &err));
    ck_assert_msg(strstr(err.msg, "it is not a regular file") != NULL, "%s", err.msg);
    /* A FIFO is refused at once, not waited on for a writer. */
    snprintf(var, sizeof var, "WF_API_KEYS_FILE=%s/fifo", d.root);
    ck_assert_int_eq(mkfifo(var + strlen("WF_API_KEYS_FILE="), 0600), 0);
    const char *fifo[] = {"WF_ENV=development", var, NULL};
    ck_assert_ptr_null(load(fifo, &err));
    ck_assert_msg(strstr(err.msg, "it is not a regular file") != NULL, "%s", err.msg);

    key_dir_write(&d, "k1\n");
    snprintf(var, sizeof var, "WF_API_KEYS_FILE=%s", d.file);
    const char *both[] = {"WF_ENV=development", "WF_API_KEYS=k2", var, NULL};
    ck_assert_ptr_null(load(both, &err));
    ck_assert_msg(strstr(err.msg, "WF_API_KEYS and WF_API_KEYS_FILE are both set") != NULL, "%s",
                  err.msg);
    const char *production[] = {var, "DATABASE_URL=postgresql://x@127.0.0.1/db", NULL};
    wf_config *cfg = load(production, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    wf_config_free(cfg);
    key_dir_remove(&d);
}
END_TEST

/* A rotation: the new key beside the old one, then the old one removed,
 * each by a swap of "..data" as the kubelet does; a content that breaks a
 * rule, holds no key or cannot be read keeps the last good set; a file
 * rewritten in place is read too. */
WF_TEST(test_api_keys_file_reload)
{
    key_dir d;
    key_dir_init(&d, "old\n");
    wf_error err;
    wf_config *cfg = load_file(&d, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    wf_key_match old;
    ck_assert(wf_config_find_key(cfg, "old", 3, &old));
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_UNCHANGED);
    ck_assert(!has_key(cfg, "new"));

    key_dir_write(&d, "old\nnew=acme\n");
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_REPLACED);
    ck_assert(has_key(cfg, "old") && has_key(cfg, "new"));
    ck_assert(wf_keys_holds(cfg->keys, &old));
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_UNCHANGED);

    key_dir_write(&d, "new=acme\n");
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_REPLACED);
    ck_assert(!has_key(cfg, "old") && has_key(cfg, "new"));
    ck_assert(!wf_keys_holds(cfg->keys, &old));

    const char *bad[] = {"new=acme\nthird\nno good\n", "new=acme,new\n", "\n", "new=acme=x\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        key_dir_write(&d, bad[i]);
        ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_KEPT);
        ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_UNCHANGED); /* logged once */
        ck_assert(has_key(cfg, "new") && !has_key(cfg, "third") && !has_key(cfg, "old"));
        ck_assert_uint_eq(wf_keys_count(cfg->keys), 1);
    }
    char data[300];
    snprintf(data, sizeof data, "%s/..data", d.root);
    ck_assert_int_eq(unlink(data), 0);
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_KEPT);
    ck_assert(has_key(cfg, "new"));

    /* Not Kubernetes: the file itself, rewritten in place. */
    ck_assert_int_eq(unlink(d.file), 0);
    FILE *f = fopen(d.file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("plain\n", f);
    fclose(f);
    ck_assert_int_eq(wf_keys_reload(cfg->keys), WF_KEYS_REPLACED);
    ck_assert(has_key(cfg, "plain") && !has_key(cfg, "new"));
    wf_config_free(cfg);
    key_dir_remove(&d);
}
END_TEST

/* The watcher thread of a server: a rewrite is seen without a call to
 * wf_keys_reload, within a bound that scales with the machine's load. */
WF_TEST(test_api_keys_file_watched)
{
    key_dir d;
    key_dir_init(&d, "old\n");
    wf_error err;
    wf_config *cfg = load_file(&d, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    ck_assert(wf_config_watch_keys(cfg, &err));
    key_dir_write(&d, "new\n");
    int64_t waited_ms = 0, bound_ms = 10000LL * wf_test_time_scale();
    struct timespec step = {0, 50 * 1000000L};
    while (!has_key(cfg, "new") && waited_ms < bound_ms) {
        nanosleep(&step, NULL);
        waited_ms += 50;
    }
    ck_assert_msg(has_key(cfg, "new"), "the watcher did not read the new file in %lld ms",
                  (long long)bound_ms);
    ck_assert(!has_key(cfg, "old"));
    wf_config_free(cfg); /* stops the watcher */
    key_dir_remove(&d);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("config", "config", NULL, NULL, 0));
}
