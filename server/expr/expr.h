/*
 * expr: jq expressions over instance variables (guards, ids_expression,
 * due_expression), evaluated with libjq 1.6.
 *
 * Thread safety. A jq_state is not thread-safe (jq_start/jq_next mutate its
 * stack, and the jv values it hands out use non-atomic refcounts), so every
 * wf_expr owns one compiled jq_state behind its own mutex: any number of
 * threads may evaluate the same wf_expr, one at a time, and different
 * expressions in parallel. libjq 1.6 itself has little global state (the
 * out-of-memory handler is thread-local, lexer and parser are reentrant,
 * dtoa contexts are per call); the exception is Oniguruma's lazy global
 * initialisation on the first regex, which the module does once, up front,
 * under pthread_once (see expr.c).
 *
 * Bounds. libjq has no step limit, cannot be interrupted and aborts the
 * process when an allocation fails, so programs are checked before
 * compiling: user functions (def), unbounded generators (range, repeat,
 * while, until, recurse(f), combinations), gsub/sub (loop forever on an
 * empty match in 1.6), modules and everything that reads the process (env,
 * $ENV, input, inputs, debug, stderr, halt, ...) are refused, and so are
 * the literal shapes that crash libjq 1.6 (check_shapes, expr.c). Evaluation
 * consumes at most WF_EXPR_MAX_RESULTS results and WF_EXPR_MAX_OUTPUT
 * bytes; regex backtracking is capped. That check cannot be complete: a
 * dozen bytes allocate gigabytes (".x[1e9] = 1", "x" * 1e9) or grow
 * exponentially ([.,.]|[.,.]|...), with numbers the caller chose in the
 * variables. So the server isolates evaluation (wf_expr_configure):
 *
 *   WF_EXPR_PROCESS  (workflowd's default) programs are compiled and run by
 *                    a pool of worker processes (workflowd --expr-worker),
 *                    each with an address-space limit, a deadline per
 *                    evaluation in the worker's CPU time (bounded at ten
 *                    times in wall-clock time) enforced by the caller
 *                    (kill and respawn) and a fresh process after
 *                    recycle_after evaluations. Running out of either, or
 *                    the worker dying, is WF_E_EXPRESSION_LIMIT; the
 *                    server itself never runs libjq.
 *   WF_EXPR_INLINE   (the default until configured: unit tests, fuzz
 *                    targets) libjq runs in the calling thread, unbounded:
 *                    for trusted definitions only (workflowd refuses it
 *                    outside development).
 *
 * Variables are capped by the message size limit either way.
 * libjq 1.6 links a $HOME/.jq file into every program: workers run with
 * HOME=/nonexistent; inline, the service must run without one.
 */
#ifndef WF_EXPR_H
#define WF_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wf_arena.h"
#include "wf_error.h"

/* Longest accepted expression source, in bytes. */
#define WF_EXPR_MAX_SOURCE 4096
/* Largest variables document an expression reads. */
#define WF_EXPR_MAX_INPUT ((size_t)4 * 1024 * 1024)
/* Results consumed from one evaluation before giving up. */
#define WF_EXPR_MAX_RESULTS 1000
/* Bytes of strings one evaluation may return (ids_expression). */
#define WF_EXPR_MAX_OUTPUT ((size_t)64 * 1024)
/* Bytes of the JSON text one evaluation may return (for_each). */
#define WF_EXPR_MAX_JSON ((size_t)1024 * 1024)
/* Distinct sources kept compiled by the cache (oldest evicted first). */
#define WF_EXPR_CACHE_MAX 1024

/* A compiled expression: refcounted, safe to share between threads. */
typedef struct wf_expr wf_expr;

/* Compiles src into a new expression owned by the caller (one reference).
 * Errors: WF_E_INVALID_ARGUMENT with a client-safe message
 * ("invalid expression: syntax error, unexpected ..." or
 * "function \"range\" is not allowed in expressions"). */
wf_code wf_expr_compile(const char *src, wf_expr **out, wf_error *err);

/* Like wf_expr_compile, through the process-wide cache keyed by the source
 * text: each distinct source is compiled once. *out is a new reference. */
wf_code wf_expr_cached(const char *src, wf_expr **out, wf_error *err);

/* Checks n sources at once, as a deploy validates a definition: errs[i]
 * is WF_OK when srcs[i] compiles, else the error its own compile gives
 * (wf_expr_compile). Sources the cache has seen cost nothing; the others
 * are compiled together, in one worker message and, when they all
 * compile, one libjq compile (libjq 1.6 binds its builtin library on
 * every compile: that, not the expressions, is what a compile costs), and
 * then cached. Compiling makes the calling thread's call join the compile
 * bulkhead (core/wf_bulkhead.h). Returns WF_OK, or the error that stopped
 * the check (WF_E_BULKHEAD_FULL, a worker's limit) with errs unset. */
wf_code wf_expr_check_all(const char *const *srcs, size_t n, wf_error *errs, wf_error *err);

/* True when the cache holds src: it compiles, and checking it costs
 * nothing. */
bool wf_expr_seen(const char *src);

/* Drops one reference; frees on the last. NULL-safe. */
void wf_expr_free(wf_expr *e);

/* The source text (owned by e). */
const char *wf_expr_source(const wf_expr *e);

/* Guard evaluation: the first result decides with jq truthiness (false and
 * null are false, everything else true); no result is false. vars_json is
 * a JSON document (NULL or "" reads as {}); invalid JSON gives
 * WF_E_INVALID_JSON, a jq runtime error WF_E_INVALID_ARGUMENT. */
wf_code wf_expr_eval_bool(wf_expr *e, const char *vars_json, bool *out, wf_error *err);

/* ids_expression evaluation: every result must be a non-empty string or an
 * array of them; duplicates are dropped, order is kept. The strings and
 * the array are allocated in a. Too many results or bytes give
 * WF_E_TOO_LARGE; a wrong type WF_E_INVALID_ARGUMENT. */
wf_code wf_expr_eval_strings(wf_expr *e, const char *vars_json, wf_arena *a, char ***out,
                             size_t *n_out, wf_error *err);

/* due_expression evaluation: the first result must be an RFC 3339 time
 * string; *out_us is microseconds since the Unix epoch. */
wf_code wf_expr_eval_time(wf_expr *e, const char *vars_json, int64_t *out_us, wf_error *err);

/* priority_expression evaluation: the first result must be a number
 * with an integral value within int64 (e.g. 70 or 70.0, not 70.5 or
 * "70"); no result, another type or a fraction is WF_E_INVALID_ARGUMENT.
 * The range a field allows is the caller's to check. */
wf_code wf_expr_eval_int(wf_expr *e, const char *vars_json, int64_t *out, wf_error *err);

/* for_each evaluation: the first result as JSON text in a ("null" when
 * there is none); more than WF_EXPR_MAX_JSON bytes is WF_E_TOO_LARGE. */
wf_code wf_expr_eval_json(wf_expr *e, const char *vars_json, wf_arena *a, char **out,
                          wf_error *err);

/* Parses an RFC 3339 date-time ("2024-05-01T10:00:00.5+02:00") into
 * microseconds since the epoch. False when s is not one. */
bool wf_expr_parse_rfc3339(const char *s, int64_t *out_us);

/* Where expressions run (see "Bounds" above). */
typedef enum wf_expr_isolation { WF_EXPR_INLINE, WF_EXPR_PROCESS } wf_expr_isolation;

typedef struct wf_expr_options {
    wf_expr_isolation isolation;
    int timeout_ms;    /* the worker's CPU time for one evaluation */
    int memory_mb;     /* address space a worker may add to what it maps at start */
    int workers;       /* most worker processes at once; more callers wait */
    int recycle_after; /* evaluations before a worker is replaced */
    int max_queued;    /* callers that may wait for a busy worker; one more fails at once
                          with WF_E_EXPRESSION_LIMIT (0: 2 x workers) */
    int slow_ms;       /* budget of an evaluation (the wait for a worker included, and ten
                          times as much for a worker's first compile of the program)
                          before its call joins the expression bulkhead (0: 50) */
} wf_expr_options;

/* The deadline of the calling thread's current call (monotonic ms, 0 =
 * none), set by the server around each handler: an evaluation or compile
 * waits for a worker no longer than that (WF_E_DEADLINE_EXCEEDED). */
void wf_expr_set_call_deadline(int64_t deadline_ms);

/* What the calling thread does around each wait for a compilation or an
 * evaluation (a worker process's work, or libjq's inline): before(arg),
 * then after(arg) once it is done, on the same thread. A unit of work sets
 * it so that the store serves others meanwhile (engine/base/uow.c).
 * Thread-local; wf_expr_set_wait returns the previous one, to be set back
 * ({NULL} for none). */
typedef struct wf_expr_wait {
    void (*before)(void *arg);
    void (*after)(void *arg);
    void *arg;
} wf_expr_wait;

wf_expr_wait wf_expr_set_wait(wf_expr_wait w);

/* The argument that makes a binary a worker (see wf_expr_worker_main). */
#define WF_EXPR_WORKER_ARG "--expr-worker"

/* Selects where expressions run, from now on, for the whole process.
 * Empties the cache and ends idle workers of an earlier configuration.
 * Worker processes are started lazily from /proc/self/exe with
 * WF_EXPR_WORKER_ARG: a binary that configures WF_EXPR_PROCESS must call
 * wf_expr_worker_main when its first argument is WF_EXPR_WORKER_ARG. */
void wf_expr_configure(const wf_expr_options *o);

/* Ends every idle worker (waits for them); busy ones end when returned.
 * Evaluation still works afterwards: workers are started again on demand. */
void wf_expr_shutdown(void);

/* The worker's loop: requests on file descriptor 0 until it closes; argv
 * as the pool passes it (argv[1] == WF_EXPR_WORKER_ARG). Returns the exit
 * status. */
int wf_expr_worker_main(int argc, char **argv);

/* Number of cached expressions, and emptying the cache (tests, shutdown).
 * Expressions still referenced elsewhere stay valid. */
size_t wf_expr_cache_size(void);
void wf_expr_cache_clear(void);

#endif /* WF_EXPR_H */
