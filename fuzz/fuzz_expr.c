/*
 * fuzz_expr: jq expressions over variables (expr.h) and the engine's JSON
 * object handling (vars.h, wf_net_merge_variables).
 *
 * Input: EXPRESSION NUL VARIABLES [NUL PATCH]. The expression is cut at
 * MAX_EXPR bytes and the two JSON documents at MAX_VARS bytes each: expr.h
 * says libjq can neither be interrupted nor bounded in what it allocates,
 * so the harness keeps to the sizes a definition deployer writes (see
 * README.md, "libjq"). Without a NUL the whole input is the expression and
 * the variables are {}.
 *
 *   - wf_expr_compile, then wf_expr_eval_bool, _strings and _time on the
 *     variables when wf_vars_object accepts them (the engine never
 *     evaluates anything else) and the program is within the harness caps
 *     for libjq's unbounded evaluation (fuzz_jq.h); libjq's own compile leak is exempt (known
 *     finding K2 in README.md), and INVALID_JSON from an evaluation is
 *     known finding K3;
 *   - wf_vars_object on the variables, and again on its output
 *     (the compact text of an object is an object);
 *   - wf_vars_merge and wf_net_merge_variables of VARIABLES and
 *     PATCH (PATCH defaults to VARIABLES): both must accept or refuse the
 *     same inputs, and a merge result must be an object;
 *   - wf_expr_parse_rfc3339 on the expression text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vars.h"
#include "expr.h"
#include "fuzz_app.h"
#include "fuzz_jq.h"
#include "net.h"

#define MAX_EXPR 256
#define MAX_VARS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Copies up to cap bytes of [p, p+n) up to the first NUL into a new string;
 * *used is how many input bytes that consumed, the NUL included. */
static char *
take(const uint8_t *p, size_t n, size_t cap, size_t *used)
{
    const uint8_t *nul = memchr(p, 0, n);
    size_t len = nul != NULL ? (size_t)(nul - p) : n;
    *used = nul != NULL ? len + 1 : len;
    if (len > cap)
        len = cap;
    char *s = malloc(len + 1);
    if (s == NULL)
        fuzz_fail("out of memory");
    memcpy(s, p, len);
    s[len] = '\0';
    return s;
}

static void
check(wf_code rc, const wf_error *err, const char *what)
{
    if (rc == WF_E_INTERNAL || (int)rc < 0 || rc >= WF_CODE_COUNT_)
        fuzz_fail("%s: %s: %s", what, wf_code_reason(rc), err->msg);
}

/* An evaluation over variables the engine accepted. INVALID_JSON there is
 * known finding K3 (README.md): jansson (vars.c) accepts objects
 * nested up to 2048 deep, libjq 1.6 parses at most 256 levels, so every
 * guard, ids_expression and due_expression over such variables fails. */
static void
check_eval(wf_code rc, const wf_error *err, const char *what)
{
    check(rc, err, what);
    if (fuzz_debug())
        fprintf(stderr, "fuzz: %s: %s %s\n", what, wf_code_reason(rc), err->msg);
    if (rc == WF_E_INVALID_JSON) {
        if (fuzz_strict())
            fuzz_fail("%s: variables the engine accepted are not valid JSON to libjq", what);
        fuzz_known("K3", "wf_expr_eval_*",
                   "INVALID_JSON for variables wf_vars_object accepted (nested deeper "
                   "than libjq's 256 levels?)");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t used, off = 0;
    int has_vars = memchr(data, 0, size) != NULL;
    char *expr = take(data, size, MAX_EXPR, &used);
    off += used;
    char *vars = take(data + off, size - off, MAX_VARS, &used);
    off += used;
    char *patch = off < size ? take(data + off, size - off, MAX_VARS, &used) : NULL;
    const char *v = has_vars ? vars : NULL;
    const char *p = patch != NULL ? patch : v;

    wf_arena *a = wf_arena_new();
    wf_error err;
    wf_error_clear(&err);
    int64_t us;
    (void)wf_expr_parse_rfc3339(expr, &us);

    /* vars.c */
    const char *norm = NULL;
    wf_code rc = wf_vars_object(a, v, "variables_json", &norm, &err);
    check(rc, &err, "wf_vars_object");
    if (fuzz_debug())
        fprintf(stderr, "fuzz: variables %s %s\n", wf_code_reason(rc), err.msg);
    if (rc == WF_OK) {
        const char *norm2 = NULL;
        if (wf_vars_object(a, norm, "variables_json", &norm2, &err) != WF_OK)
            fuzz_fail("the normalised variables are not an object: %s", norm);
        if (strcmp(norm, norm2) != 0)
            fuzz_fail("normalising is not stable: %s vs %s", norm, norm2);
    }
    const char *merged = NULL;
    char *merged2 = NULL;
    wf_code m1 = wf_vars_merge(a, v, p, &merged, &err);
    check(m1, &err, "wf_vars_merge");
    wf_code m2 = wf_net_merge_variables(v, p, a, &merged2, &err);
    check(m2, &err, "wf_net_merge_variables");
    if ((m1 == WF_OK) != (m2 == WF_OK))
        fuzz_fail("the two merges disagree: vars %s, net %s", wf_code_reason(m1),
                  wf_code_reason(m2));
    if (m1 == WF_OK && wf_vars_object(a, merged, "merged", NULL, &err) != WF_OK)
        fuzz_fail("a merge result is not an object: %s", merged);

    /* expressions: evaluated, like the engine does, only over variables
     * wf_vars_object accepted (rc above). libjq 1.6 leaks in
     * jv_parse_sized on some malformed text; the engine never hands it
     * text that jansson refused. */
    wf_code accepted = rc;
    wf_expr *e = NULL;
    rc = wf_expr_compile(expr, &e, &err);
    if (fuzz_debug())
        fprintf(stderr, "fuzz: compile %s: %s\n", wf_code_reason(rc), err.msg);
    if (rc != WF_OK)
        check(err.code, &err, "wf_expr_compile");
    /* The caps for libjq's unbounded evaluation (expr.h "Residual risk",
     * fuzz_jq.h): the program itself, or large numbers in the variables
     * for programs that repeat strings or assign indexes. */
    bool capped = fuzz_jq_unbounded(expr) ||
                  (fuzz_json_has_big_number(v) &&
                   (strpbrk(expr, "*=") != NULL || strstr(expr, "setpath") != NULL));
    if (fuzz_debug() && capped)
        fprintf(stderr, "fuzz: not evaluated (harness cap)\n");
    if (rc == WF_OK && accepted == WF_OK && !capped) {
        bool b;
        rc = wf_expr_eval_bool(e, v, &b, &err);
        check_eval(rc, &err, "wf_expr_eval_bool");
        char **ids = NULL;
        size_t n = 0;
        rc = wf_expr_eval_strings(e, v, a, &ids, &n, &err);
        check_eval(rc, &err, "wf_expr_eval_strings");
        for (size_t i = 0; rc == WF_OK && i < n; i++)
            if (ids[i] == NULL || ids[i][0] == '\0')
                fuzz_fail("wf_expr_eval_strings returned an empty id");
        rc = wf_expr_eval_time(e, v, &us, &err);
        check_eval(rc, &err, "wf_expr_eval_time");
    }
    wf_expr_free(e);

    wf_arena_free(a);
    free(expr);
    free(vars);
    free(patch);
    return 0;
}
