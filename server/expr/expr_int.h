/*
 * expr_int: what expr.c (the API, the in-process evaluation) and
 * expr_worker.c (the worker processes) share. Not for other modules.
 */
#ifndef WF_EXPR_INT_H
#define WF_EXPR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jq.h>

#include "wf_arena.h"
#include "wf_error.h"

/* What a request asks of an expression; also the op byte on the wire. */
typedef enum wf_expr_op {
    WF_EXPR_OP_COMPILE = 'c',
    WF_EXPR_OP_BOOL = 'b',
    WF_EXPR_OP_STRINGS = 's',
    WF_EXPR_OP_TIME = 't',
    WF_EXPR_OP_INT = 'i',
    WF_EXPR_OP_JSON = 'j',  /* the first result as JSON text, in strs[0] */
    WF_EXPR_OP_CHECK = 'm', /* many sources, compiled together (wf_expr_check_all) */
} wf_expr_op;

/* The result of one evaluation; which fields are set depends on the op. */
typedef struct wf_expr_result {
    bool yes;    /* BOOL */
    int64_t us;  /* TIME; INT: the integer */
    char **strs; /* STRINGS, in the arena given */
    size_t nstrs;
    wf_error *errs; /* CHECK: one per source, given by the caller */
    size_t nerrs;
} wf_expr_result;

/* Budget of a worker to compile a program it has not seen (libjq 1.6 parses
 * its builtin library on every compile: tens of milliseconds, more under
 * sanitizers). The evaluation's own deadline starts after it. */
#define WF_EXPR_COMPILE_MS 5000

/* The one-time process setup (regex caps, Oniguruma's tables). */
void wf_expr__init(void);

/* Compiles src (already through the program check) into a new jq state.
 * Errors: WF_E_INVALID_ARGUMENT "invalid expression: ...". */
wf_code wf_expr__jq_compile(const char *src, jq_state **out, wf_error *err);

/* Checks n sources (each through the program check already) as their own
 * compiles would, errs[i] for srcs[i], by compiling them joined into one
 * program: libjq binds its builtin library once for all of them instead
 * of once each (expr.c, "checking many"). */
void wf_expr__jq_check_all(const char *const *srcs, size_t n, wf_error *errs);

/* Runs jq over vars_json (len bytes, at most WF_EXPR_MAX_INPUT) for op.
 * The caller owns jq exclusively for the call. */
wf_code wf_expr__jq_run(jq_state *jq, wf_expr_op op, const char *vars_json, size_t len, wf_arena *a,
                        wf_expr_result *r, wf_error *err);

/* True when wf_expr_configure selected worker processes. */
bool wf_expr__isolated(void);

/* Asks a worker process: compiles (COMPILE) or evaluates src over
 * vars_json. Strings of the result are allocated in a. A worker that runs
 * out of its deadline or memory, or dies, gives WF_E_EXPRESSION_LIMIT.
 * An evaluation that runs past the budget (wf_expr_options.slow_ms) joins
 * the call to the expression bulkhead (core/wf_bulkhead.h), or is ended
 * with WF_E_BULKHEAD_FULL when that is full; a source that did so before
 * joins before it starts. */
wf_code wf_expr__remote(wf_expr_op op, const char *src, const char *vars_json, wf_arena *a,
                        wf_expr_result *r, wf_error *err);

/* Asks a worker to check n sources at once (WF_EXPR_OP_CHECK); errs[i]
 * gets the result of srcs[i]. */
wf_code wf_expr__remote_check(const char *const *srcs, size_t n, wf_error *errs, wf_error *err);

#endif /* WF_EXPR_INT_H */
