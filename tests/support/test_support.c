/*
 * test_support: in-process servers and clients for the Check suites.
 */
#include "test_support.h"

#include "wf_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
wf_test_server_start(wf_test_server *ts, const char *const *env)
{
    const char *defaults[] = {"WF_ENV=development", "WF_ADDR=127.0.0.1:0", "WF_THREADS=2",
                              "WF_LOG_LEVEL=error", "WF_DRAIN_SECONDS=0"};
    char *all[64];
    size_t n = 0;
    static char dburl[1024];
    if (wf_test_store_is_pg()) {
        snprintf(dburl, sizeof dburl, "DATABASE_URL=%s", getenv("WF_TEST_PG_DSN"));
        all[n++] = dburl;
    }
    /* Caller's entries first: the config reader takes the first match. */
    for (size_t i = 0; env != NULL && env[i] != NULL && n < 50; i++)
        all[n++] = (char *)env[i];
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        all[n++] = (char *)defaults[i];
    all[n] = NULL;

    memset(ts, 0, sizeof *ts);
    wf_error err;
    wf_error_clear(&err);
    ts->cfg = wf_config_load(all, &err);
    ck_assert_msg(ts->cfg != NULL, "config: %s", err.msg);
    wf_log_threshold = (wf_log_level)ts->cfg->log_level;
    ts->app = (wf_app)WF_APP_INIT;
    ts->app.cfg = ts->cfg;
    ck_assert_msg(wf_app_open_store(&ts->app, &err) == WF_OK, "store: %s", err.msg);
    ts->srv = wf_rpc_server_start(&ts->app, &err);
    ck_assert_msg(ts->srv != NULL, "server: %s", err.msg);
    ck_assert_msg(wf_app_listen(&ts->app, &err) == WF_OK, "listen: %s", err.msg);
    ts->port = wf_rpc_server_port(ts->srv);
    snprintf(ts->target, sizeof ts->target, "127.0.0.1:%d", ts->port);
}

void
wf_test_server_stop(wf_test_server *ts, int grace_ms)
{
    wf_rpc_server_stop(ts->srv, grace_ms);
    ts->srv = NULL;
    wf_app_close_store(&ts->app);
    wf_config_free(ts->cfg);
    ts->cfg = NULL;
}

wf_client *
wf_test_client(const wf_test_server *ts, const char *key, const char *tenant, const char *actor)
{
    wf_client_options o = {.target = ts->target,
                           .api_key = key,
                           .tenant = tenant,
                           .actor = actor,
                           .timeout_ms = 5000,
                           .wait_for_ready = 1};
    wf_client *c = wf_client_new(&o);
    ck_assert_ptr_nonnull(c);
    return c;
}

bool
wf_test_store_is_pg(void)
{
    const char *s = getenv("WF_TEST_STORE");
    return s != NULL && strcmp(s, "pg") == 0;
}

const char *
wf_test_store_name(void)
{
    return wf_test_store_is_pg() ? "pg" : "memory";
}

void
wf_test_quiet_log(void)
{
    if (getenv("WF_TEST_LOG") == NULL)
        wf_log_threshold = WF_LOG_ERROR;
}

int
wf_test_run(Suite *s)
{
    if (wf_test_store_is_pg()) {
        const char *dsn = getenv("WF_TEST_PG_DSN");
        if (dsn == NULL || dsn[0] == '\0') {
            printf("skipped: WF_TEST_STORE=pg but WF_TEST_PG_DSN is not set\n");
            return WF_TEST_SKIP;
        }
    }
    return wf_test_run_mode(s, CK_FORK_GETENV);
}

/* The load average of the last minute per online CPU, 1 when unknown or
 * below one. */
static double
load_per_cpu(void)
{
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &load) != 1)
            load = 0;
        fclose(f);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double per = cpus > 0 ? load / (double)cpus : 0;
    return per > 1 ? per : 1;
}

/* The scale of load_per_cpu() as it is now (see wf_test_time_scale). */
static int
scale_now(void)
{
    double s = load_per_cpu();
#if defined(__SANITIZE_ADDRESS__)
    s *= 5;
#endif
    const char *env = getenv("WF_TEST_TIME_SCALE");
    double user = env != NULL ? strtod(env, NULL) : 1;
    if (user > 1)
        s *= user;
    int whole = s < 40 ? (int)s : 40;
    return whole < 40 && (double)whole < s ? whole + 1 : whole; /* rounded up */
}

int
wf_test_time_scale(void)
{
    static int scale; /* 0: not computed yet (the suites read it from one thread) */
    if (scale == 0)
        scale = scale_now();
    return scale;
}

int64_t
wf_test_utc_us(const char *text)
{
    struct tm tm = {0};
    ck_assert_int_eq(sscanf(text, "%d-%d-%dT%d:%d:%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec),
                     6);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000000;
}

int
wf_test_time_scale_now(void)
{
    int now = scale_now();
    return now > wf_test_time_scale() ? now : wf_test_time_scale();
}

int
count_of(const char *list, const char *type)
{
    int n = 0;
    size_t l = strlen(type);
    for (const char *p = list; (p = strstr(p, type)) != NULL; p += l)
        if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
            n++;
    return n;
}
