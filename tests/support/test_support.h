/*
 * test_support: helpers shared by the Check suites — an in-process server on
 * 127.0.0.1:0 built from a test environment, and clients pointed at it.
 */
#ifndef WF_TEST_SUPPORT_H
#define WF_TEST_SUPPORT_H

#include <check.h>
#include <stdbool.h>

#include "handler.h"
#include "rpc_server.h"
#include "test_list.h"
#include "test_pg.h"
#include "wf_client.h"
#include "wf_config.h"

/* A running in-process server and what it owns. */
typedef struct wf_test_server {
    wf_config *cfg;
    wf_app app;
    wf_rpc_server *srv;
    int port;
    char target[64];
} wf_test_server;

/* Starts a server from a NULL-terminated "NAME=value" list; WF_ADDR
 * defaults to 127.0.0.1:0, WF_ENV to development. Aborts the test on
 * failure. The store is the one the environment names: pass
 * "DATABASE_URL=..." for Postgres, nothing for the memory store. */
void wf_test_server_start(wf_test_server *ts, const char *const *env);

/* Stops the server (grace in ms) and frees everything. */
void wf_test_server_stop(wf_test_server *ts, int grace_ms);

/* A client of ts with the given identity (any may be NULL). Its calls wait
 * for the channel to connect (wait-for-ready), so a connection attempt that
 * fails while many clients connect at once costs a reconnect, not a call. */
wf_client *wf_test_client(const wf_test_server *ts, const char *key, const char *tenant,
                          const char *actor);

/* True when WF_TEST_STORE=pg: suites then run against Postgres at
 * WF_TEST_PG_DSN (the same cases as on the memory store). */
bool wf_test_store_is_pg(void);

/* "pg" or "memory", for messages. */
const char *wf_test_store_name(void);

/* How many times slower than a quiet machine this run may be, for the
 * wall-clock bounds of the suites (a bound of B ms becomes B * scale): 5
 * under AddressSanitizer, times the load average per CPU when it is above
 * one, times WF_TEST_TIME_SCALE when that is a number above one; at most
 * 40. Computed once per process, at the first call. */
int wf_test_time_scale(void);

/* The larger of wf_test_time_scale() and the same computed from the load
 * average now: for a bound checked after a load that ran for a while (the
 * suite's own, or the machine's meanwhile). */
int wf_test_time_scale_now(void);

/* How many times type occurs as a word of list (space-separated words,
 * such as a list of event types). */
int count_of(const char *list, const char *type);

/* "YYYY-MM-DDTHH:MM:SSZ" (UTC) in microseconds since the epoch; fails the
 * running test on any other text. */
int64_t wf_test_utc_us(const char *text);

/* Lets only errors through the log unless WF_TEST_LOG is set, so that the
 * warnings of expected failures (outages, conflicts) keep a run readable. */
void wf_test_quiet_log(void);

/* The exit status of a suite that ran nothing (CTest SKIP_RETURN_CODE). */
#define WF_TEST_SKIP 77

/* Runs a suite in fork mode and returns the process exit status. With
 * WF_TEST_STORE=pg and no WF_TEST_PG_DSN it prints that it is skipped and
 * returns WF_TEST_SKIP. */
int wf_test_run(Suite *s);

#endif /* WF_TEST_SUPPORT_H */
