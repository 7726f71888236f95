/*
 * Unit tests of server/engine/expr: jq guards, ids and due expressions,
 * the program check, the cache, and concurrent evaluation, in process
 * (WF_EXPR_INLINE) and again in worker processes (WF_EXPR_PROCESS: this
 * binary started with WF_EXPR_WORKER_ARG); the limits of the workers
 * (memory, time, crashes) and the cost of isolation.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expr.h"
#include "test_support.h"
#include "wf_arena.h"
#include "wf_bulkhead.h"
#include "wf_time.h"

#if defined(__SANITIZE_ADDRESS__)
/* Whole allocation stacks for LeakSanitizer in this suite: libjq has no
 * frame pointers, so the fast unwinder stops at jv_mem_alloc and the
 * suppression of libjq's parser leak (tests/support/lsan.supp, by
 * jq_parse) could not tell it from a jv value leaked here. */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}
#endif

/* True in the cases that run in worker processes (setup_isolated). */
static bool isolated_case;

static wf_expr *
compile_ok(const char *src)
{
    wf_expr *e = NULL;
    wf_error err;
    wf_code rc = wf_expr_compile(src, &e, &err);
    ck_assert_msg(rc == WF_OK, "compile %s: %s", src, err.msg);
    return e;
}

static bool
guard(const char *src, const char *vars)
{
    wf_expr *e = compile_ok(src);
    wf_error err;
    bool out = false;
    wf_code rc = wf_expr_eval_bool(e, vars, &out, &err);
    ck_assert_msg(rc == WF_OK, "%s on %s: %s", src, vars, err.msg);
    wf_expr_free(e);
    return out;
}

WF_TEST(test_guard_truthiness)
{
    ck_assert(guard(".amount > 1000", "{\"amount\":1500}"));
    ck_assert(!guard(".amount > 1000", "{\"amount\":10}"));
    ck_assert(guard(".amount > 1000 and .tier == \"gold\"", "{\"amount\":2000,\"tier\":\"gold\"}"));
    ck_assert(!guard(".missing", "{}")); /* null is false */
    ck_assert(!guard(".flag", "{\"flag\":false}"));
    ck_assert(guard(".n", "{\"n\":0}"));    /* 0 is true in jq */
    ck_assert(guard(".s", "{\"s\":\"\"}")); /* so is "" */
    ck_assert(!guard("empty", "{}"));       /* no result is false */
    ck_assert(guard("true, false", "{}"));  /* the first result decides */
    ck_assert(guard(".a", NULL) == false);  /* NULL variables read as {} */
}
END_TEST

WF_TEST(test_runtime_error_is_invalid_argument)
{
    wf_expr *e = compile_ok(".a.b");
    wf_error err;
    bool out;
    ck_assert_int_eq(wf_expr_eval_bool(e, "{\"a\":5}", &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression failed: cannot index number with string \"b\"");
    ck_assert_int_eq(wf_expr_eval_bool(e, "{\"a\":", &out, &err), WF_E_INVALID_JSON);
    ck_assert_str_eq(err.msg, "variables are not valid JSON");
    wf_expr_free(e);

    e = compile_ok("error({code: 1})");
    ck_assert_int_eq(wf_expr_eval_bool(e, "{}", &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression failed: {\"code\":1} (not a string)");
    wf_expr_free(e);
}
END_TEST

WF_TEST(test_compile_errors_are_trimmed)
{
    wf_expr *e = NULL;
    wf_error err;
    ck_assert_int_eq(wf_expr_compile(".a ====", &e, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_null(e);
    ck_assert_str_eq(err.msg, "invalid expression: syntax error, unexpected ==");
    ck_assert_int_eq(wf_expr_compile("foo(1)", &e, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "invalid expression: foo/1 is not defined");
    ck_assert_int_eq(wf_expr_compile("   ", &e, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression is empty");
    ck_assert_int_eq(wf_expr_compile(NULL, &e, &err), WF_E_INVALID_ARGUMENT);
    char big[WF_EXPR_MAX_SOURCE + 2];
    memset(big, ' ', sizeof big - 1);
    big[0] = '.';
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(wf_expr_compile(big, &e, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression is longer than 4096 bytes");
}
END_TEST

WF_TEST(test_unbounded_and_process_reading_programs_are_refused)
{
    static const struct {
        const char *src, *msg;
    } cases[] = {
        {"[range(10)]", "function \"range\" is not allowed in expressions"},
        {"def f: f; f", "function \"def\" is not allowed in expressions"},
        {"env.HOME", "function \"env\" is not allowed in expressions"},
        {"$ENV.PATH", "variable \"$ENV\" is not allowed in expressions"},
        {"\"x\\(env.HOME)\"", "function \"env\" is not allowed in expressions"},
        {"\"\\(\"\\(1 + (input))\")\"", "function \"input\" is not allowed in expressions"},
        {"recurse(. + 1)", "function \"recurse\" is not allowed in expressions"},
        {"recurse (.+1)", "function \"recurse\" is not allowed in expressions"},
        {"[limit(3; repeat(1))]", "function \"repeat\" is not allowed in expressions"},
        {"0 | until(. > 10; . + 1)", "function \"until\" is not allowed in expressions"},
        {"[.[] | combinations]", "function \"combinations\" is not allowed in expressions"},
        {"gsub(\"\"; \"x\")", "function \"gsub\" is not allowed in expressions"},
        {"import \"a\" as a; .", "function \"import\" is not allowed in expressions"},
        {"a::b", "modules are not allowed in expressions"},
        {". | debug", "function \"debug\" is not allowed in expressions"},
        {"$__loc__ | stderr", "function \"stderr\" is not allowed in expressions"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wf_expr *e = NULL;
        wf_error err;
        ck_assert_msg(wf_expr_compile(cases[i].src, &e, &err) == WF_E_INVALID_ARGUMENT,
                      "%s was accepted", cases[i].src);
        ck_assert_str_eq(err.msg, cases[i].msg);
    }
    /* Field names, strings, comments and bounded recursion are fine. */
    ck_assert(guard(".env == \"prod\"", "{\"env\":\"prod\"}"));
    ck_assert(guard(".range.def", "{\"range\":{\"def\":1}}"));
    ck_assert(guard("\"range(10) env\" | length == 13", "{}"));
    ck_assert(guard("\"a\\\"b \\(.x)\" == \"a\\\"b 1\"", "{\"x\":1}"));
    ck_assert(guard(".x # range(10) is only a comment", "{\"x\":true}"));
    ck_assert(guard("[.. | numbers] | length == 3", "{\"a\":1,\"b\":[2,{\"c\":3}]}"));
    ck_assert(guard("[recurse] | length == 2", "{\"a\":1}"));
    ck_assert(guard("1e3 == 1000", "{}"));
    ck_assert(guard("[limit(2; .xs[])] == [1,2]", "{\"xs\":[1,2,3]}"));
}
END_TEST

WF_TEST(test_regex_backtracking_is_capped)
{
    /* Catastrophic backtracking ends with an error instead of running
     * for minutes (Oniguruma retry limits set at init). */
    wf_expr *e = compile_ok(".s | test(\"^(a+)+$\")");
    char vars[300];
    snprintf(
        vars, sizeof vars, "{\"s\":\"%.*sb\"}", 200,
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    wf_error err;
    bool out = true;
    int64_t t0 = wf_mono_ms();
    ck_assert_int_eq(wf_expr_eval_bool(e, vars, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "retry-limit") != NULL, "%s", err.msg);
    ck_assert_int_lt(wf_mono_ms() - t0, 3000 * wf_test_time_scale());
    wf_expr_free(e);
    ck_assert(guard(".s | test(\"^a+b$\")", vars));
}
END_TEST

static size_t
ids(const char *src, const char *vars, char ***out, wf_arena *a, wf_error *err, wf_code want)
{
    wf_expr *e = compile_ok(src);
    size_t n = 0;
    wf_code rc = wf_expr_eval_strings(e, vars, a, out, &n, err);
    ck_assert_msg(rc == want, "%s: got %d (%s)", src, rc, err->msg);
    wf_expr_free(e);
    return n;
}

WF_TEST(test_ids_expression)
{
    wf_arena *a = wf_arena_new();
    wf_error err;
    char **v = NULL;
    size_t n = ids(".approvers", "{\"approvers\":[\"ann\",\"bob\",\"ann\"]}", &v, a, &err, WF_OK);
    ck_assert_uint_eq(n, 2); /* duplicates dropped, order kept */
    ck_assert_str_eq(v[0], "ann");
    ck_assert_str_eq(v[1], "bob");
    n = ids(".manager", "{\"manager\":\"carol\"}", &v, a, &err, WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0], "carol");
    n = ids(".a, .b", "{\"a\":\"x\",\"b\":[\"y\",\"z\"]}", &v, a, &err, WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[2], "z");
    n = ids("empty", "{}", &v, a, &err, WF_OK);
    ck_assert_uint_eq(n, 0);

    ids(".n", "{\"n\":5}", &v, a, &err, WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression must yield strings or arrays of strings, got number");
    ids(".xs", "{\"xs\":[\"a\",1]}", &v, a, &err, WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg,
                     "expression must yield strings or arrays of strings, got an array holding "
                     "number");
    ids(".s", "{\"s\":\"\"}", &v, a, &err, WF_E_INVALID_ARGUMENT);

    /* More results than the cap. */
    size_t cap = 20000, len = 0;
    char *big = wf_arena_alloc(a, cap);
    len += (size_t)snprintf(big + len, cap - len, "{\"xs\":[");
    for (int i = 0; i < 1500; i++)
        len += (size_t)snprintf(big + len, cap - len, "%s\"u%d\"", i ? "," : "", i);
    snprintf(big + len, cap - len, "]}");
    ids(".xs[]", big, &v, a, &err, WF_E_TOO_LARGE);
    ck_assert_str_eq(err.msg, "expression yielded more than 1000 results");
    ids(".xs", big, &v, a, &err, WF_E_TOO_LARGE);
    wf_arena_free(a);
}
END_TEST

WF_TEST(test_due_expression)
{
    wf_expr *e = compile_ok(".due");
    wf_error err;
    int64_t us = 0;
    ck_assert_int_eq(wf_expr_eval_time(e, "{\"due\":\"2024-05-01T10:00:00Z\"}", &us, &err), WF_OK);
    ck_assert_int_eq(us, 1714557600LL * 1000000);
    ck_assert_int_eq(wf_expr_eval_time(e, "{\"due\":\"2024-05-01T12:00:00.25+02:00\"}", &us, &err),
                     WF_OK);
    ck_assert_int_eq(us, 1714557600LL * 1000000 + 250000);
    ck_assert_int_eq(wf_expr_eval_time(e, "{\"due\":17}", &us, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression must yield an RFC 3339 time string, got number");
    ck_assert_int_eq(wf_expr_eval_time(e, "{\"due\":\"tomorrow\"}", &us, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression yielded \"tomorrow\", which is not an RFC 3339 time");
    ck_assert_int_eq(wf_expr_eval_time(e, "{}", &us, &err), WF_E_INVALID_ARGUMENT);
    wf_expr_free(e);

    /* jq's own date functions produce RFC 3339. */
    e = compile_ok("now + 3600 | todate");
    ck_assert_int_eq(wf_expr_eval_time(e, "{}", &us, &err), WF_OK);
    int64_t d = us - (wf_now_us() + 3600LL * 1000000);
    ck_assert_int_lt(d < 0 ? -d : d, 5LL * 1000000);
    wf_expr_free(e);
    e = compile_ok("empty");
    ck_assert_int_eq(wf_expr_eval_time(e, "{}", &us, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression yielded no time");
    wf_expr_free(e);
}
END_TEST

/* An integer result: whole numbers of any JSON spelling; a fraction, a
 * string, null, no result or a number past int64 are refused. */
WF_TEST(test_priority_expression)
{
    wf_expr *e = compile_ok(".p");
    wf_error err;
    int64_t v = 0;
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":70}", &v, &err), WF_OK);
    ck_assert_int_eq(v, 70);
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":-3.0}", &v, &err), WF_OK);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":1e3}", &v, &err), WF_OK);
    ck_assert_int_eq(v, 1000);
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":70.5}", &v, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression must yield an integer, got 70.5");
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":1e300}", &v, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"p\":\"70\"}", &v, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression must yield an integer, got string");
    ck_assert_int_eq(wf_expr_eval_int(e, "{}", &v, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression must yield an integer, got null");
    ck_assert_int_eq(v, 1000); /* untouched by a refusal */
    wf_expr_free(e);
    e = compile_ok("if .vip then 90 else 40 end");
    ck_assert_int_eq(wf_expr_eval_int(e, "{\"vip\":true}", &v, &err), WF_OK);
    ck_assert_int_eq(v, 90);
    wf_expr_free(e);
    e = compile_ok("empty");
    ck_assert_int_eq(wf_expr_eval_int(e, "{}", &v, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "expression yielded no number");
    wf_expr_free(e);
    e = compile_ok("error(\"no\")");
    ck_assert_int_eq(wf_expr_eval_int(e, "{}", &v, &err), WF_E_INVALID_ARGUMENT);
    wf_expr_free(e);
}
END_TEST

WF_TEST(test_rfc3339_parser)
{
    int64_t us;
    ck_assert(wf_expr_parse_rfc3339("1970-01-01T00:00:00Z", &us) && us == 0);
    ck_assert(wf_expr_parse_rfc3339("1969-12-31T23:59:59Z", &us) && us == -1000000);
    ck_assert(wf_expr_parse_rfc3339("2024-02-29t00:00:00.123456789z", &us));
    ck_assert_int_eq(us % 1000000, 123456);
    ck_assert(wf_expr_parse_rfc3339("2000-01-01T00:00:00-01:30", &us));
    ck_assert_int_eq(us, (946684800LL + 5400) * 1000000);
    ck_assert(!wf_expr_parse_rfc3339("2023-02-29T00:00:00Z", &us));
    ck_assert(!wf_expr_parse_rfc3339("2024-13-01T00:00:00Z", &us));
    ck_assert(!wf_expr_parse_rfc3339("2024-01-01T24:00:00Z", &us));
    ck_assert(!wf_expr_parse_rfc3339("2024-01-01T00:00:00", &us));
    ck_assert(!wf_expr_parse_rfc3339("2024-01-01T00:00:00.Z", &us));
    ck_assert(!wf_expr_parse_rfc3339("2024-01-01T00:00:00Zjunk", &us));
    ck_assert(!wf_expr_parse_rfc3339(NULL, &us));
}
END_TEST

WF_TEST(test_cache_compiles_once)
{
    wf_expr_cache_clear();
    wf_expr *a, *b, *c;
    wf_error err;
    ck_assert_int_eq(wf_expr_cached(".x > 1", &a, &err), WF_OK);
    ck_assert_int_eq(wf_expr_cached(".x > 1", &b, &err), WF_OK);
    ck_assert_ptr_eq(a, b);
    ck_assert_int_eq(wf_expr_cached(".x > 2", &c, &err), WF_OK);
    ck_assert_ptr_ne(a, c);
    wf_expr_free(c);
    ck_assert_uint_eq(wf_expr_cache_size(), 2);
    ck_assert_int_eq(wf_expr_cached(".x >", &c, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_uint_eq(wf_expr_cache_size(), 2);
    /* Cleared entries stay usable by their holders. */
    wf_expr_cache_clear();
    ck_assert_uint_eq(wf_expr_cache_size(), 0);
    bool out;
    ck_assert_int_eq(wf_expr_eval_bool(a, "{\"x\":5}", &out, &err), WF_OK);
    ck_assert(out);
    ck_assert_str_eq(wf_expr_source(b), ".x > 1");
    wf_expr_free(a);
    wf_expr_free(b);
}
END_TEST

/* ---- concurrency -------------------------------------------------------- */

#define N_THREADS 8
/* 1000 per thread; WF_TEST_EXPR_EVALS lowers it for valgrind --tool=helgrind. */
static int n_evals = 1000;

typedef struct worker {
    int id;
    int failures;
    char first_failure[300];
} worker;

static void
note_failure(worker *w, const char *what, const wf_error *err)
{
    if (w->failures++ == 0)
        snprintf(w->first_failure, sizeof w->first_failure, "%s: %s", what, err ? err->msg : "");
}

/* Every thread evaluates the same cached expressions (shared jq_states),
 * compiles private ones, and races on inserting fresh cache entries. */
static void *
work(void *arg)
{
    worker *w = arg;
    wf_arena *a = wf_arena_new();
    wf_error err;
    char src[64], vars[128];
    for (int i = 0; i < n_evals; i++) {
        int amount = (i * 7 + w->id) % 2000;
        snprintf(vars, sizeof vars, "{\"amount\":%d,\"who\":[\"u%d\",\"v%d\"],\"s\":\"abc%d\"}",
                 amount, w->id, i, i);
        wf_expr *g, *ids_e, *re;
        bool out;
        if (wf_expr_cached(".amount > 1000", &g, &err) != WF_OK ||
            wf_expr_eval_bool(g, vars, &out, &err) != WF_OK || out != (amount > 1000))
            note_failure(w, "guard", &err);
        wf_expr_free(g);
        char **v;
        size_t n;
        if (wf_expr_cached(".who", &ids_e, &err) != WF_OK ||
            wf_expr_eval_strings(ids_e, vars, a, &v, &n, &err) != WF_OK || n != 2 ||
            strncmp(v[1], "v", 1) != 0)
            note_failure(w, "ids", &err);
        wf_expr_free(ids_e);
        if (wf_expr_cached(".s | test(\"^abc[0-9]+$\")", &re, &err) != WF_OK ||
            wf_expr_eval_bool(re, vars, &out, &err) != WF_OK || !out)
            note_failure(w, "regex", &err);
        wf_expr_free(re);
        if (i % 100 == 0) {
            /* Fresh sources: concurrent misses and inserts. */
            snprintf(src, sizeof src, ".amount == %d", i);
            wf_expr *f;
            if (wf_expr_cached(src, &f, &err) != WF_OK ||
                wf_expr_eval_bool(f, vars, &out, &err) != WF_OK || out != (amount == i))
                note_failure(w, "fresh", &err);
            wf_expr_free(f);
        }
    }
    wf_arena_free(a);
    return NULL;
}

WF_TEST(test_concurrent_evaluation)
{
    pthread_t th[N_THREADS];
    worker w[N_THREADS];
    const char *env = getenv("WF_TEST_EXPR_EVALS");
    if (env != NULL && atoi(env) > 0)
        n_evals = atoi(env);
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker){.id = i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N_THREADS; i++)
        ck_assert_msg(w[i].failures == 0, "thread %d: %d failures, first %s", i, w[i].failures,
                      w[i].first_failure);
    ck_assert_uint_eq(wf_expr_cache_size(), 3 + (size_t)(n_evals + 99) / 100);
    wf_expr_cache_clear();
}
END_TEST

/* ---- worker processes ------------------------------------------------------ */

#define TIMEOUT_MS 1000

/* The budget of the isolated cases, in the worker's CPU time, so that the
 * load of the machine does not matter: a trivial evaluation stays far
 * below it, also under AddressSanitizer; every runaway program uses all
 * of it. */
static int
budget_ms(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 750;
#else
    return 250;
#endif
}

static void
isolate(int workers, int recycle_after)
{
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = budget_ms(),
                                         .memory_mb = 256,
                                         .workers = workers,
                                         .recycle_after = recycle_after});
}

static void
setup_isolated(void)
{
    isolated_case = true;
    isolate(N_THREADS, 1000);
    /* Each worker compiles each program it meets (tens of ms in libjq
     * 1.6): fewer rounds keep the concurrent test's time in bounds. */
    n_evals = 150;
}

/* Cached jq states keep their stack through a pointer one past the end
 * of the block, which LeakSanitizer cannot follow: free them. */
static void
teardown(void)
{
    wf_expr_cache_clear();
}

static void
teardown_isolated(void)
{
    wf_expr_shutdown();
    /* Every worker was reaped: this process has no child left. */
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    ck_assert_int_eq(errno, ECHILD);
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_INLINE});
}

/* Evaluates src as a guard over vars on one worker that compiled it first
 * (so that the time measured is the evaluation's); returns the code and
 * the milliseconds it took. */
static wf_code
timed_guard(const char *src, const char *vars, int64_t *ms, wf_error *err)
{
    wf_expr *e = compile_ok(src);
    bool out;
    int64_t t0 = wf_mono_ms();
    wf_code rc = wf_expr_eval_bool(e, vars, &out, err);
    *ms = wf_mono_ms() - t0;
    wf_expr_free(e);
    return rc;
}

WF_CASE_TEST("process", test_runaway_programs_hit_the_limit_and_the_pool_recovers)
{
    isolate(1, 1000); /* one worker: every program compiles where it runs */
    static const struct {
        const char *src, *vars;
    } cases[] = {
        {".x[1000 * 1000000] = 1", "{}"},         /* asks for 58 GB */
        {"\"x\" * 1e9 | length > 0", "{}"},       /* 1 GB */
        {".x[.n] = 1", "{\"n\":1e9}"},            /* the number from the caller */
        {"\"x\" * 200000000 | length > 0", "{}"}, /* fits, takes long */
        {"[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|"
         "[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|[.,.]|"
         "tostring | length > 0",
         "{\"s\":\"abcdefgh\"}"}, /* doubles 28 times */
        {".s | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | "
         "(.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | "
         "(.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | (.+.) | "
         "length > 0",
         "{\"s\":\"abcdefgh\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wf_error err;
        int64_t ms;
        wf_code rc = timed_guard(cases[i].src, cases[i].vars, &ms, &err);
        fprintf(stderr, "expr limit: %-40.40s %s after %lld ms: %s\n", cases[i].src,
                wf_code_reason(rc), (long long)ms, err.msg);
        ck_assert_msg(rc == WF_E_EXPRESSION_LIMIT, "%s: %s %s", cases[i].src, wf_code_reason(rc),
                      err.msg);
        ck_assert_msg(strstr(err.msg, "limit") != NULL, "%s", err.msg);
        /* Stopped once it has used its budget of CPU: on a loaded machine
         * that takes longer, but never past ten times the budget (and the
         * kill and the reply). */
        ck_assert_msg(ms < 11 * budget_ms(), "%s took %lld ms", cases[i].src, (long long)ms);
        /* The next evaluation gets a fresh worker and works. */
        ck_assert(guard(".amount > 1000", "{\"amount\":1500}"));
    }
    /* A recursive function never compiles: refused before any worker. */
    wf_expr *e = NULL;
    wf_error err;
    ck_assert_int_eq(wf_expr_compile("def f: f; f", &e, &err), WF_E_INVALID_ARGUMENT);
    /* Compile and runtime errors cross the process boundary unchanged. */
    ck_assert_int_eq(wf_expr_compile(".a ====", &e, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "invalid expression: syntax error, unexpected ==");
}
END_TEST

/* 10^9 iterations in constant memory: runs into the deadline. */
#define D10 "(0,1,2,3,4,5,6,7,8,9)"
#define SLOW_SRC                                                                                   \
    "any(" D10 " as $a | " D10 " as $b | " D10 " as $c | " D10 " as $d | " D10 " as $e | " D10     \
    " as $f | " D10 " as $g | " D10 " as $h | " D10 "; . < 0)"

typedef struct slow_eval {
    wf_code rc;
    char msg[256];
    atomic_bool done;
} slow_eval;

static void *
run_slow(void *arg)
{
    slow_eval *s = arg;
    wf_expr *e;
    wf_error err;
    bool out;
    s->rc = wf_expr_cached(SLOW_SRC, &e, &err);
    if (s->rc == WF_OK) {
        s->rc = wf_expr_eval_bool(e, "{}", &out, &err);
        wf_expr_free(e);
    }
    if (s->rc != WF_OK)
        snprintf(s->msg, sizeof s->msg, "%s", err.msg);
    atomic_store(&s->done, true);
    return NULL;
}

WF_CASE_TEST("process", test_a_stuck_evaluation_blocks_no_one_else)
{
    isolate(2, 1000);
    wf_expr *e = compile_ok(".amount > 1000");
    slow_eval s = {.rc = WF_OK};
    atomic_init(&s.done, false);
    pthread_t th;
    pthread_create(&th, NULL, run_slow, &s);
    /* While the slow one runs to its deadline on one worker, the other
     * answers (bounded: the slow one ends by its deadline). */
    int n = 0;
    while (!atomic_load(&s.done)) {
        bool out = false;
        wf_error err;
        ck_assert_int_eq(wf_expr_eval_bool(e, "{\"amount\":1500}", &out, &err), WF_OK);
        ck_assert(out);
        n++;
    }
    wf_expr_free(e);
    pthread_join(th, NULL);
    ck_assert_msg(s.rc == WF_E_EXPRESSION_LIMIT, "slow: %s (%s)", wf_code_reason(s.rc), s.msg);
    /* Served one after the other, the first fast call would wait for the
     * slow one and the loop would end after it. */
    ck_assert_msg(n >= 2, "only %d evaluations while one was stuck", n);
}
END_TEST

/* The one worker process of this process (a child of it), or 0. */
static pid_t
only_worker(void)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    pid_t found = 0;
    struct dirent *de;
    while (found == 0 && (de = readdir(d)) != NULL) {
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = de->d_name[0] >= '1' && de->d_name[0] <= '9' ? fopen(path, "r") : NULL;
        if (f == NULL)
            continue;
        int ppid = 0;
        if (fscanf(f, "%*d (%*[^)]) %*c %d", &ppid) == 1 && ppid == (int)getpid())
            found = (pid_t)strtol(de->d_name, NULL, 10);
        fclose(f);
    }
    closedir(d);
    return found;
}

typedef struct resume_after {
    pid_t pid;
    int ms;
} resume_after;

static void *
resume_later(void *arg)
{
    resume_after *r = arg;
    struct timespec ts = {r->ms / 1000, (long)(r->ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    kill(r->pid, SIGCONT);
    return NULL;
}

/* The limits are the worker's CPU time, not the wall clock: a worker that
 * gets no CPU for longer than both budgets (stopped here, as a loaded
 * machine would starve it) still answers once it runs again. */
WF_CASE_TEST("process", test_a_worker_starved_of_cpu_is_not_out_of_time)
{
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = 200,
                                         .memory_mb = 256,
                                         .workers = 1,
                                         .recycle_after = 1000,
                                         .slow_ms = 600000}); /* one worker, never put behind */
    ck_assert(guard(".amount > 1000", "{\"amount\":1500}"));  /* the worker is up */
    pid_t pid = only_worker();
    ck_assert_int_gt(pid, 0);
    /* Past the 5 s compile budget and the 200 ms evaluation budget, within
     * ten times the compile budget. */
    resume_after r = {pid, 6000};
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    pthread_t th;
    pthread_create(&th, NULL, resume_later, &r);
    int64_t t0 = wf_mono_ms();
    ck_assert(guard(".amount > 1000", "{\"amount\":1500}"));
    int64_t waited = wf_mono_ms() - t0;
    pthread_join(th, NULL);
    ck_assert_msg(waited >= 6000, "answered after %lld ms", (long long)waited);
    /* The same worker answered: it was not killed. */
    ck_assert_int_eq(only_worker(), pid);
}
END_TEST

/* The expression bulkhead: an evaluation past its budget (WF_EXPR_SLOW_MS)
 * in a call joins it, handing its thread off; with it full, the next slow
 * one is ended at its budget, and the same source again is refused before
 * it starts; evaluations within their budget go on, and outside a call
 * nothing is refused. */
static int budget_hand_offs;

static void
note_hand_off(void *arg)
{
    (void)arg;
    budget_hand_offs++;
}

static void *
run_slow_in_call(void *arg)
{
    wf_bulkhead_call_begin(note_hand_off, NULL);
    run_slow(arg);
    wf_bulkhead_call_end();
    return NULL;
}

/* Evaluates e as a guard in a call: its code, and the milliseconds. */
static wf_code
eval_in_call(wf_expr *e, int64_t *ms, wf_error *err)
{
    bool out;
    wf_bulkhead_call_begin(NULL, NULL);
    int64_t t0 = wf_mono_ms();
    wf_code rc = wf_expr_eval_bool(e, "{\"amount\":1500}", &out, err);
    *ms = wf_mono_ms() - t0;
    wf_bulkhead_call_end();
    return rc;
}

WF_CASE_TEST("process", test_an_evaluation_past_its_budget_joins_the_expression_bulkhead)
{
    /* The budget (wall clock) stretches with the load, so that the cheap
     * evaluation keeps within it on a busy machine; the runaway program
     * still runs well past it (to its CPU limit, at least four budgets). */
    int slow = 50 * wf_test_time_scale_now();
    int limit = budget_ms() > 4 * slow ? budget_ms() : 4 * slow;
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = limit,
                                         .memory_mb = 256,
                                         .workers = 3,
                                         .recycle_after = 1000,
                                         .slow_ms = slow});
    int limits[WF_BULKHEAD_COUNT_] = {1, 1, 1};
    wf_bulkhead_configure(limits);
    /* Compiled outside any call: what is measured is the evaluation. */
    wf_expr *fast = compile_ok(".amount > 1000");
    wf_expr *other =
        compile_ok("any(" D10 " as $a | " D10 " as $b | " D10 " as $c | " D10 " as $d | " D10
                   " as $e | " D10 " as $f | " D10 " as $g | " D10 " as $h | " D10 "; . < -1)");
    slow_eval s = {.rc = WF_OK};
    atomic_init(&s.done, false);
    pthread_t th;
    pthread_create(&th, NULL, run_slow_in_call, &s);
    wf_bulkhead_stats st = {0};
    for (int i = 0; i < 1000 && st.active == 0 && !atomic_load(&s.done); i++) {
        usleep(10 * 1000);
        wf_bulkhead_get_stats(WF_BULKHEAD_EXPR, &st);
    }
    ck_assert_int_eq(st.active, 1);
    wf_error err;
    int64_t ms;
    /* Within its budget: no bulkhead needed. */
    ck_assert_int_eq(eval_in_call(fast, &ms, &err), WF_OK);
    /* Past its budget with the bulkhead full: ended there. */
    ck_assert_int_eq(eval_in_call(other, &ms, &err), WF_E_BULKHEAD_FULL);
    ck_assert_msg(ms >= slow - 5 && ms < 1000 * wf_test_time_scale_now(), "refused after %lld ms",
                  (long long)ms);
    ck_assert_ptr_nonnull(strstr(err.msg, "bulkhead \"expression\" is full"));
    /* That source is known slow now: refused before it starts. */
    ck_assert_int_eq(eval_in_call(other, &ms, &err), WF_E_BULKHEAD_FULL);
    ck_assert_msg(ms < slow - 5, "refused after %lld ms", (long long)ms);
    pthread_join(th, NULL);
    ck_assert_msg(s.rc == WF_E_EXPRESSION_LIMIT, "slow: %s (%s)", wf_code_reason(s.rc), s.msg);
    ck_assert_int_eq(budget_hand_offs, 1);
    /* The bulkhead is free again: the known-slow source joins it and runs
     * to its deadline (outside a call, runaway programs run to theirs:
     * test_runaway_programs_hit_the_limit_and_the_pool_recovers). */
    wf_bulkhead_get_stats(WF_BULKHEAD_EXPR, &st);
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(eval_in_call(other, &ms, &err), WF_E_EXPRESSION_LIMIT);
    wf_expr_free(fast);
    wf_expr_free(other);
}
END_TEST

/* One worker, one waiting place: with the worker stuck and one caller
 * waiting, a third caller fails at once with EXPRESSION_LIMIT; a caller
 * whose call deadline comes first gives up at it. */
WF_CASE_TEST("process", test_the_expression_queue_is_bounded)
{
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = TIMEOUT_MS,
                                         .memory_mb = 256,
                                         .workers = 1,
                                         .recycle_after = 1000,
                                         .max_queued = 1});
    wf_expr *e = compile_ok(".amount > 1000");
    /* The slow program compiled (and cached) first: its threads then ask
     * the worker for the evaluation alone, and keep it. */
    wf_expr *warm = NULL;
    wf_error werr;
    ck_assert_int_eq(wf_expr_cached(SLOW_SRC, &warm, &werr), WF_OK);
    slow_eval s = {.rc = WF_OK};
    atomic_init(&s.done, false);
    pthread_t th;
    pthread_create(&th, NULL, run_slow, &s);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL); /* the slow one holds the worker */

    /* The waiting place taken by a caller whose call has 300 ms left. */
    int64_t t0 = wf_mono_ms();
    wf_expr_set_call_deadline(t0 + 300);
    bool out = false;
    wf_error err;
    wf_code rc = wf_expr_eval_bool(e, "{\"amount\":1500}", &out, &err);
    int64_t waited = wf_mono_ms() - t0;
    wf_expr_set_call_deadline(0);
    ck_assert_msg(rc == WF_E_DEADLINE_EXCEEDED, "%s: %s", wf_code_reason(rc), err.msg);
    ck_assert_msg(waited >= 250 && waited < 900, "waited %lld ms", (long long)waited);

    /* A waiter in the queue, then one more: refused at once. */
    slow_eval w = {.rc = WF_OK};
    atomic_init(&w.done, false);
    pthread_t wth;
    pthread_create(&wth, NULL, run_slow, &w);
    nanosleep(&ts, NULL);
    t0 = wf_mono_ms();
    rc = wf_expr_eval_bool(e, "{\"amount\":1500}", &out, &err);
    int64_t refused = wf_mono_ms() - t0;
    ck_assert_msg(rc == WF_E_EXPRESSION_LIMIT, "%s: %s", wf_code_reason(rc), err.msg);
    ck_assert_str_eq(err.msg, "the expression queue is full (1 workers busy, 1 waiting)");
    ck_assert_msg(refused < 100, "refused after %lld ms", (long long)refused);
    pthread_join(th, NULL);
    pthread_join(wth, NULL);
    /* Once the queue drains, evaluations work again. */
    ck_assert_int_eq(wf_expr_eval_bool(e, "{\"amount\":1500}", &out, &err), WF_OK);
    ck_assert(out);
    wf_expr_free(e);
    wf_expr_free(warm);
}
END_TEST

WF_CASE_TEST("process", test_workers_are_recycled)
{
    isolate(2, 5);
    wf_expr *e = compile_ok(".n + 1 == 2");
    for (int i = 0; i < 40; i++) {
        bool out = false;
        wf_error err;
        ck_assert_int_eq(wf_expr_eval_bool(e, "{\"n\":1}", &out, &err), WF_OK);
        ck_assert(out);
    }
    wf_expr_free(e);
}
END_TEST

/* Cost of one small guard, in process and through a worker; printed. */
WF_CASE_TEST("process", test_cost_of_isolation)
{
    const int n = 2000;
    double us[2];
    for (int mode = 0; mode < 2; mode++) {
        if (mode == 0)
            wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_INLINE});
        else
            isolate(1, 100000);
        wf_expr *e = compile_ok(".amount > 1000 and .tier == \"gold\"");
        bool out;
        wf_error err;
        ck_assert_int_eq(wf_expr_eval_bool(e, "{}", &out, &err), WF_OK); /* warm */
        int64_t t0 = wf_mono_ms();
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(wf_expr_eval_bool(e,
                                               "{\"amount\":1500,\"tier\":\"gold\",\"note\":\"x\"}",
                                               &out, &err),
                             WF_OK);
        us[mode] = (double)(wf_mono_ms() - t0) * 1000.0 / n;
        wf_expr_free(e);
    }
    fprintf(stderr, "expr cost per evaluation: inline %.1f us, isolated %.1f us\n", us[0], us[1]);
}
END_TEST

/* ---- checking many at once (the compile cache) ------------------------------------------- */

/* Sources of every kind of outcome, joinable or not, with errors before,
 * between and after valid ones. */
static const char *const mixed[] = {
    ".a > 1",
    ".b ==",   /* a syntax error at its end */
    "foo(.x)", /* an unknown function */
    ".c == \"x\"",
    "$nope | . > 1", /* an unknown variable */
    "\"open",        /* an unterminated string: not joinable */
    ".d ) (",        /* unbalanced: not joinable */
    "(.e | length) > 2 # a comment",
    "range(3)", /* refused before any compile */
    "",         /* empty */
    "1 / 0",    /* an error of the parser that is not a syntax error */
    "[.f[] | select(. > 1)] | length > 0 and (\"\\(.g)\" | test(\"a\"))",
    ".h as $h | $h > 1",
    "bar | baz", /* two unknown functions */
    ".i ==== 1",
};
#define NMIXED (sizeof mixed / sizeof mixed[0])

WF_TEST(test_check_all_gives_each_source_its_own_result)
{
    wf_expr_cache_clear();
    wf_error errs[NMIXED], err;
    ck_assert_int_eq(wf_expr_check_all(mixed, NMIXED, errs, &err), WF_OK);
    size_t valid = 0;
    for (size_t i = 0; i < NMIXED; i++) {
        wf_expr *e = NULL;
        wf_error alone;
        wf_error_clear(&alone);
        wf_code rc = wf_expr_compile(mixed[i], &e, &alone);
        wf_expr_free(e);
        ck_assert_msg(errs[i].code == rc, "%s: %s, alone %s", mixed[i],
                      wf_code_reason(errs[i].code), wf_code_reason(rc));
        ck_assert_msg(strcmp(errs[i].msg, alone.msg) == 0, "%s: \"%s\", alone \"%s\"", mixed[i],
                      errs[i].msg, alone.msg);
        valid += rc == WF_OK;
    }
    ck_assert_uint_eq(valid, 5);
    if (!isolated_case)
        return;
    /* Isolated, the valid ones are cached (an expression is its source
     * there): each is compiled once, whoever asks. */
    wf_expr_cache_clear();
    ck_assert_int_eq(wf_expr_check_all(mixed, NMIXED, errs, &err), WF_OK);
    ck_assert_uint_eq(wf_expr_cache_size(), valid);
    ck_assert_int_eq(wf_expr_check_all(mixed, NMIXED, errs, &err), WF_OK);
    ck_assert_uint_eq(wf_expr_cache_size(), valid);
    wf_expr *a;
    ck_assert_int_eq(wf_expr_cached(".a > 1", &a, &err), WF_OK);
    ck_assert_uint_eq(wf_expr_cache_size(), valid);
    wf_expr_free(a);
}
END_TEST

/* Joined, these guards' bytecode passes libjq's limit for one program:
 * the check goes on in halves, each source still with its own result. */
WF_TEST(test_check_all_of_guards_too_long_together)
{
    enum { N = 50, TERMS = 60 };
    wf_arena *a = wf_arena_new();
    const char *srcs[N + 1];
    long salt = (long)(wf_now_us() % 1000000) * 100;
    for (int i = 0; i < N; i++) {
        char *g = wf_arena_alloc(a, TERMS * 32);
        size_t k = 0;
        for (int t = 0; t < TERMS; t++)
            k += (size_t)sprintf(g + k, "%s.a%d == %ld", t ? " or " : "", i, salt + t);
        srcs[i] = g;
    }
    srcs[N] = "foo(.x)";
    wf_error errs[N + 1], err;
    int64_t t0 = wf_mono_ms();
    ck_assert_int_eq(wf_expr_check_all(srcs, N + 1, errs, &err), WF_OK);
    fprintf(stderr, "expr compile: %d guards of %d comparisons checked in %lld ms\n", N, TERMS,
            (long long)(wf_mono_ms() - t0));
    for (int i = 0; i < N; i++)
        ck_assert_msg(errs[i].code == WF_OK, "%d: %s", i, errs[i].msg);
    ck_assert_str_eq(errs[N].msg, "invalid expression: foo/1 is not defined");
    wf_arena_free(a);
}
END_TEST

/* n guards no cache has seen (salt makes them new). */
static const char **
new_guards(wf_arena *a, int n, long salt)
{
    const char **v = wf_arena_calloc(a, (size_t)n, sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = wf_arena_printf(a, ".amount > %ld and .tier == \"t%d\"", salt + i, i);
    return v;
}

WF_TEST(test_check_all_of_500_new_guards_takes_one_compile)
{
    wf_expr_cache_clear();
    wf_arena *a = wf_arena_new();
    long salt = (long)(wf_now_us() % 1000000) * 1000;
    wf_error err, errs[500];
    /* A compile of its own for each: the cost before. */
    const char **one = new_guards(a, 20, salt);
    int64_t t0 = wf_mono_ms();
    for (int i = 0; i < 20; i++) {
        wf_expr *e = compile_ok(one[i]);
        wf_expr_free(e);
    }
    double each_ms = (double)(wf_mono_ms() - t0) / 20;
    const char **g = new_guards(a, 500, salt + 100000);
    t0 = wf_mono_ms();
    ck_assert_int_eq(wf_expr_check_all(g, 500, errs, &err), WF_OK);
    int64_t all_ms = wf_mono_ms() - t0;
    for (int i = 0; i < 500; i++)
        ck_assert_msg(errs[i].code == WF_OK, "%s: %s", g[i], errs[i].msg);
    /* The same guards again (a redeploy): isolated, the cache answers. */
    t0 = wf_mono_ms();
    ck_assert_int_eq(wf_expr_check_all(g, 500, errs, &err), WF_OK);
    int64_t again_ms = isolated_case ? wf_mono_ms() - t0 : 0;
    fprintf(stderr,
            "expr compile: %.1f ms per guard alone; 500 new guards checked together in %lld ms, "
            "again (cached) in %lld ms\n",
            each_ms, (long long)all_ms, (long long)again_ms);
    /* Against the compiles alone measured just before, on the same machine
     * and load: 500 of them would take 500 times the first figure; checked
     * together they take the time of a few. */
    ck_assert_msg((double)all_ms < 500 * each_ms / 4,
                  "500 guards took %lld ms, %.1f ms per guard alone", (long long)all_ms, each_ms);
    ck_assert_msg(again_ms < 100 * wf_test_time_scale(), "again %lld ms", (long long)again_ms);
    wf_arena_free(a);
}
END_TEST

/* Shapes that crash libjq 1.6 itself (SIGSEGV, SIGABRT on an assertion)
 * are refused at compile time in both modes; evaluated inline they would
 * end this process. */
WF_TEST(test_programs_that_crash_libjq_are_refused)
{
    static const struct {
        const char *src, *msg;
    } cases[] = {
        {".x[1e9] = 1", "array index 1e9 is too large (at most 1000000) in expressions"},
        {".x[ 2000000 ] |= 1", "array index 2000000 is too large (at most 1000000) in expressions"},
        {"\"\\(.x[1e9] = 1)\"", "array index 1e9 is too large (at most 1000000) in expressions"},
        {"reduce .a[] as $x (null; [.])",
         "a reduce or foreach that nests its state in a new array or object is not allowed in "
         "expressions"},
        {"[foreach .a[] as $x (0; {v: .})] | length > 0",
         "a reduce or foreach that nests its state in a new array or object is not allowed in "
         "expressions"},
        {"nan | todate", "nan, infinite and numbers beyond 1e+15 are not allowed in expressions "
                         "that format dates"},
        {"1e19 | todate", "nan, infinite and numbers beyond 1e+15 are not allowed in expressions "
                          "that format dates"},
        {"infinite | strftime(\"%Y\")", "nan, infinite and numbers beyond 1e+15 are not allowed "
                                        "in expressions that format dates"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wf_expr *e = NULL;
        wf_error err;
        ck_assert_msg(wf_expr_compile(cases[i].src, &e, &err) == WF_E_INVALID_ARGUMENT,
                      "%s was accepted", cases[i].src);
        ck_assert_str_eq(err.msg, cases[i].msg);
    }
    /* Neighbours of those shapes stay allowed. */
    ck_assert(guard(".a[2] == 3", "{\"a\":[1,2,3]}"));
    ck_assert(guard("(reduce .a[] as $x ([]; . + [$x])) | length == 3", "{\"a\":[1,2,3]}"));
    ck_assert(guard("(reduce .a[] as $x (0; . + $x)) == 6", "{\"a\":[1,2,3]}"));
    ck_assert(guard("[.a[] | {v: .}] | length == 3", "{\"a\":[1,2,3]}"));
    ck_assert(guard("(0 | todate) == \"1970-01-01T00:00:00Z\"", NULL));
    ck_assert(guard(".amount > 1e19", "{\"amount\":1e20}"));
    ck_assert(guard("(.x | isnan) == false", "{\"x\":1}"));
}
END_TEST

static Suite *
expr_suite(void)
{
    Suite *s = suite_create("expr");
    for (int isolated = 0; isolated < 2; isolated++) {
        TCase *tc = tcase_create(isolated ? "process" : "inline");
        if (isolated)
            tcase_add_checked_fixture(tc, setup_isolated, teardown_isolated);
        else
            tcase_add_checked_fixture(tc, NULL, teardown);
        /* The runaway programs each take the budget, which scales. */
        tcase_set_timeout(tc, 120 * wf_test_time_scale());
        /* The tests of both ways to evaluate, then those of worker processes. */
        wf_test_add_listed(tc, NULL);
        if (isolated)
            wf_test_add_listed(tc, "process");
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);
    return wf_test_run(expr_suite());
}
