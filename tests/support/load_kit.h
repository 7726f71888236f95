/*
 * load_kit: what the suites that load the server share (overload,
 * bulkheads): percentiles, the server's count of taken calls, expressions
 * in worker processes, and definitions that are slow on purpose: a guard
 * slow to evaluate, nets of many guards no cache has seen, and a net slow
 * to lay out. Builds on net_kit (its server, ts).
 */
#ifndef WF_LOAD_KIT_H
#define WF_LOAD_KIT_H

#include <stdint.h>

#include "net_kit.h"

/* The p-quantile (0..1) of v[0..n) (sorted in place); -1 when n is 0. */
int64_t percentile(int64_t *v, size_t n, double p);

/* grpc_server_started_total of a WorkflowService method in ts's metrics:
 * the calls a server thread has taken so far. */
long long started_calls(const char *method);

/* Waits until n calls of method have been taken by ts's threads (at most
 * 10 s times the time scale), then asserts that they were. */
void await_started(const char *method, long long n);

/* Expressions from now on in worker processes: each evaluation within
 * timeout_ms, at most workers processes, a call joining the expression
 * bulkhead after slow_ms of one (0: the default budget). */
void expr_isolate(int timeout_ms, int workers, int slow_ms);

/* A guard of n^3 additions over an array a of n numbers (slow_vars): n =
 * 400 runs past any sane budget, n = 60 takes a few tens of milliseconds. */
#define SLOW_GUARD "[.a[] as $x | .a[] as $y | .a[] | $x + $y + .] | length > 0"

/* {"a": [0, 1, ..., n-1]} in a. */
char *slow_vars(wf_arena *a, int n);

/* Deploys s -> go (silent) -> [SLOW_GUARD] mid -> fin (silent) -> e, with
 * a default arc go -> e, under a key unique to the run: StartInstance
 * evaluates the guard in the call. */
char *deploy_slow(void);

/* Deploys s -> go (silent) -> e, no expression at all, under a key unique
 * to the run. */
char *deploy_plain(void);

/* s -> go (silent) -> [.x > salt+i] m<i> -> fin (silent) -> e for i <
 * nguards, and a default arc go -> e: nguards guards no cache has seen when
 * salt is new. In a. */
Workflow__V1__Definition *wide_net(wf_arena *a, const char *key, int nguards, int salt);

/* A net slow to lay out: 100 places p0..p99 (START, END) in a chain of
 * transitions t0..t98, t99 beside t98, and 200 arcs from t50..t99 back to
 * p1..p29 (400 arcs in all): seconds of Graphviz. In a. */
Workflow__V1__Definition *tangled_net(wf_arena *a, const char *key);

#endif /* WF_LOAD_KIT_H */
