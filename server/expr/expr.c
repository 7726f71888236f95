/*
 * expr: jq expressions on libjq 1.6. See expr.h for the thread-safety and
 * bounding scheme; the notes here say why each piece is there.
 */
#include "expr.h"
#include "expr_int.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jq.h>
#include <jv.h>

#include "wf_bulkhead.h"

struct wf_expr {
    char *src;
    uint64_t hash;      /* FNV-1a of src, for the cache */
    atomic_int refs;    /* the cache holds one while the entry is cached */
    pthread_mutex_t mu; /* guards jq and every jv derived from it */
    jq_state *jq;       /* NULL: compiled and evaluated by worker processes */
};

/* ---- process-wide setup -------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Cap Oniguruma backtracking (test/match/capture/split/scan): the defaults
 * allow 10^7 retries per start position and no cap per search, so one
 * "(a+)+$" over a long string could run for minutes. libonig is a
 * dependency of libjq that this library does not link itself, so the
 * setters are looked up at run time; when absent the defaults stay. */
static void
cap_regex_backtracking(void)
{
    typedef int (*set_limit_fn)(unsigned long);
    void *self = dlopen(NULL, RTLD_NOW);
    if (self == NULL)
        return;
    set_limit_fn in_match, in_search;
    *(void **)&in_match = dlsym(self, "onig_set_retry_limit_in_match");
    *(void **)&in_search = dlsym(self, "onig_set_retry_limit_in_search");
    if (in_match != NULL)
        in_match(100000UL);
    if (in_search != NULL)
        in_search(1000000UL);
    dlclose(self);
}

static void
ignore_msg(void *data, jv msg)
{
    (void)data;
    jv_free(msg);
}

/* Oniguruma initialises its global tables lazily, without a lock, on the
 * first onig_new(); two threads running their first regex at once would
 * race. Running one regex here, under pthread_once, settles it. */
static void
expr_init(void)
{
    cap_regex_backtracking();
    jq_state *jq = jq_init();
    if (jq == NULL)
        return;
    jq_set_error_cb(jq, ignore_msg, NULL);
    if (jq_compile(jq, "test(\"a\")")) {
        jq_start(jq, jv_string("a"), 0);
        jv_free(jq_next(jq));
    }
    jq_teardown(&jq);
}

void
wf_expr__init(void)
{
    pthread_once(&init_once, expr_init);
}

/* ---- the program check --------------------------------------------------- */

/* Names refused in call position; see expr.h for why. */
static const char *const denied_names[] = {
    "def",
    "import",
    "include",
    "env",
    "input",
    "inputs",
    "debug",
    "stderr",
    "halt",
    "halt_error",
    "input_filename",
    "get_search_list",
    "modulemeta",
    "get_prog_origin",
    "get_jq_origin",
    "range",
    "repeat",
    "while",
    "until",
    "combinations",
    "gsub",
    "sub",
    NULL,
};

static bool
ident_start(int c)
{
    return isalpha(c) || c == '_';
}

static bool
ident_char(int c)
{
    return isalnum(c) || c == '_';
}

/* Scans src for refused names without parsing it: string literals and
 * comments are skipped (string interpolations "\( ... )" are code again),
 * field names (.env) are allowed. It errs on the side of refusing, e.g.
 * the object key in {env: 1}. Returns false and fills err when refused. */
static bool
check_program(const char *s, wf_error *err)
{
    int depth[32]; /* paren depth of each open interpolation */
    int sp = 0;
    bool in_str = false;
    size_t n = strlen(s), i = 0;

    while (i < n) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1] == '(') {
                if (sp == (int)(sizeof depth / sizeof depth[0])) {
                    wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                 "invalid expression: string interpolation is nested too deeply");
                    return false;
                }
                depth[sp++] = 0;
                in_str = false;
                i += 2;
            } else if (c == '\\') {
                i += 2; /* the escaped character, whatever it is */
            } else {
                if (c == '"')
                    in_str = false;
                i++;
            }
            continue;
        }
        if (c == '"') {
            in_str = true;
            i++;
        } else if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '(') {
            if (sp > 0)
                depth[sp - 1]++;
            i++;
        } else if (c == ')') {
            if (sp > 0 && depth[sp - 1] == 0) {
                sp--;
                in_str = true; /* back in the string around "\(...)" */
            } else if (sp > 0) {
                depth[sp - 1]--;
            }
            i++;
        } else if (isdigit((unsigned char)c)) {
            while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '.'))
                i++; /* 1e5 is a number, not the name e5 */
        } else if (c == '$' || ident_start((unsigned char)c)) {
            size_t st = i;
            bool var = c == '$';
            if (var)
                i++;
            bool module = false;
            while (i < n) {
                if (ident_char((unsigned char)s[i])) {
                    i++;
                } else if (s[i] == ':' && s[i + 1] == ':') {
                    module = true;
                    i += 2;
                } else {
                    break;
                }
            }
            size_t len = i - st;
            /* ".name" is a field, "..name" is not (and does not parse). */
            bool field = !var && st > 0 && s[st - 1] == '.' && !(st > 1 && s[st - 2] == '.');
            if (field)
                continue;
            const char *why = NULL;
            if (module) {
                why = "modules are";
            } else if (var) {
                if (len == 4 && strncmp(s + st, "$ENV", 4) == 0)
                    why = "variable \"$ENV\" is";
            } else {
                for (const char *const *d = denied_names; *d != NULL; d++)
                    if (strlen(*d) == len && strncmp(s + st, *d, len) == 0)
                        why = "";
                if (why == NULL && len == 7 && strncmp(s + st, "recurse", 7) == 0) {
                    size_t j = i;
                    while (j < n && isspace((unsigned char)s[j]))
                        j++;
                    if (s[j] == '(')
                        why = ""; /* recurse(f) may never end; recurse and .. do */
                }
            }
            if (why != NULL) {
                if (*why != '\0')
                    wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s not allowed in expressions", why);
                else
                    wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                 "function \"%.*s\" is not allowed in expressions", (int)len,
                                 s + st);
                return false;
            }
        } else {
            i++;
        }
    }
    return true;
}

/* ---- shapes that crash libjq 1.6 ----------------------------------------- */

/* Largest literal array index accepted (.x[1e9] = 1 allocates 1e9 slots). */
#define MAX_LITERAL_INDEX 1e6
/* Largest literal number accepted in a program that formats dates: libjq
 * 1.6 asserts (aborts) in strftime/todate on a time gmtime rejects. */
#define MAX_DATE_LITERAL 1e15

static const char *const date_names[] = {
    "todate", "todateiso8601", "date", "strftime", "strflocaltime", "dateadd", "datesub", NULL,
};

static bool
is_name(const char *s, size_t len, const char *const *names)
{
    for (const char *const *d = names; *d != NULL; d++)
        if (strlen(*d) == len && strncmp(s, *d, len) == 0)
            return true;
    return false;
}

/* Refuses the program shapes known to crash libjq 1.6 itself, whatever the
 * variables: a literal array index beyond MAX_LITERAL_INDEX (".x[1e9] = 1",
 * SIGSEGV), a reduce or foreach whose update wraps its state in a new array
 * or object ("reduce .a[] as $x (null; [.])": the nesting grows with the
 * input and libjq recurses through it, SIGSEGV), and, in a program that
 * formats dates, nan, infinite or a literal beyond MAX_DATE_LITERAL
 * ("nan | todate", "1e19 | todate": an assertion, SIGABRT). The scan skips
 * strings (but not their interpolations) and comments, like
 * check_program. Numbers that come from the variables cannot be checked
 * here: process isolation contains those. */
static bool
check_shapes(const char *s, wf_error *err)
{
    int interp[32]; /* paren depth of each open interpolation */
    int sp = 0, paren = 0;
    bool in_str = false;
    size_t n = strlen(s), i = 0;
    char brackets[64]; /* 'i' index, 'c' constructor */
    int nb = 0;
    /* reduce/foreach being read: its paren level, and whether its update
     * (after the first ';') is being read, with the constructor depth there. */
    struct red {
        int level, update_nb;
        bool open, update;
    } red[8];
    int nred = 0;
    bool dates = false, nonfinite = false;
    double big = 0;
    char prev = 0; /* last significant character outside strings */

    while (i < n) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1] == '(') {
                if (sp == (int)(sizeof interp / sizeof interp[0]))
                    return true; /* check_program refuses it */
                interp[sp++] = 0;
                in_str = false;
                i += 2;
                prev = '(';
            } else if (c == '\\') {
                i += 2;
            } else {
                if (c == '"') {
                    in_str = false;
                    prev = '"';
                }
                i++;
            }
            continue;
        }
        if (isspace((unsigned char)c)) {
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            i++;
            continue;
        }
        if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (c == '(') {
            if (sp > 0)
                interp[sp - 1]++;
            paren++;
            if (nred > 0 && !red[nred - 1].open) {
                red[nred - 1].open = true;
                red[nred - 1].level = paren;
            }
        } else if (c == ')') {
            if (sp > 0 && interp[sp - 1] == 0) {
                sp--;
                in_str = true;
                i++;
                continue;
            }
            if (sp > 0)
                interp[sp - 1]--;
            if (nred > 0 && red[nred - 1].open && red[nred - 1].level == paren)
                nred--;
            paren--;
        } else if (c == ';') {
            if (nred > 0 && red[nred - 1].open && red[nred - 1].level == paren &&
                !red[nred - 1].update) {
                red[nred - 1].update = true;
                red[nred - 1].update_nb = nb;
            }
        } else if (c == '[' || c == '{') {
            bool index = c == '[' && (prev == '.' || prev == ']' || prev == ')' || prev == '"' ||
                                      prev == '?' || ident_char((unsigned char)prev));
            if (nb < (int)sizeof brackets)
                brackets[nb] = index ? 'i' : 'c';
            nb++;
        } else if (c == ']' || c == '}') {
            if (nb > 0)
                nb--;
        } else if (c == '.' && i + 1 < n && s[i + 1] == '.') {
            i += 2;
            prev = '.';
            continue;
        } else if (c == '.' && !ident_start((unsigned char)s[i + 1]) && s[i + 1] != '[' &&
                   s[i + 1] != '"' && !isdigit((unsigned char)s[i + 1])) {
            /* "." itself: inside a constructor of a reduce's update? */
            if (nred > 0 && red[nred - 1].update) {
                for (int k = red[nred - 1].update_nb; k < nb && k < (int)sizeof brackets; k++)
                    if (brackets[k] == 'c') {
                        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                     "a reduce or foreach that nests its state in a new array "
                                     "or object is not allowed in expressions");
                        return false;
                    }
            }
        } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
            char *end;
            double v = strtod(s + i, &end);
            if (end == s + i)
                end = (char *)s + i + 1;
            if (nb > 0 && nb <= (int)sizeof brackets && brackets[nb - 1] == 'i' &&
                !(v <= MAX_LITERAL_INDEX)) {
                wf_error_set(err, WF_E_INVALID_ARGUMENT,
                             "array index %.*s is too large (at most %.0f) in expressions",
                             (int)(end - (s + i)), s + i, MAX_LITERAL_INDEX);
                return false;
            }
            if (!(v <= big))
                big = v;
            i = (size_t)(end - s);
            while (i < n && isalnum((unsigned char)s[i]))
                i++;
            prev = '0';
            continue;
        } else if (c == '$' || ident_start((unsigned char)c)) {
            size_t st = i;
            i++;
            while (i < n && (ident_char((unsigned char)s[i]) || s[i] == ':'))
                i++;
            size_t len = i - st;
            bool field = st > 0 && s[st - 1] == '.';
            if (!field && c != '$') {
                if (is_name(s + st, len, date_names))
                    dates = true;
                else if ((len == 3 && strncmp(s + st, "nan", 3) == 0) ||
                         (len == 8 && strncmp(s + st, "infinite", 8) == 0))
                    nonfinite = true;
                else if (((len == 6 && strncmp(s + st, "reduce", 6) == 0) ||
                          (len == 7 && strncmp(s + st, "foreach", 7) == 0)) &&
                         nred < (int)(sizeof red / sizeof red[0]))
                    red[nred++] = (struct red){0, 0, false, false};
            }
            prev = 'a';
            continue;
        }
        prev = c;
        i++;
    }
    if (dates && (nonfinite || big > MAX_DATE_LITERAL)) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "nan, infinite and numbers beyond %.0e are not allowed in expressions that "
                     "format dates",
                     MAX_DATE_LITERAL);
        return false;
    }
    return true;
}

/* ---- compile ------------------------------------------------------------- */

typedef struct compile_msg {
    char text[200];
    bool set;
} compile_msg;

/* A compile message trimmed to the reason, into out (cap bytes):
 * "jq: error: syntax error, unexpected == (Unix shell quoting issues?) at
 * <top-level>, line 1:\n.a ==== b" becomes "syntax error, unexpected ==". */
static void
trim_compile_msg(const char *s, char *out, size_t cap)
{
    if (strncmp(s, "jq: error: ", 11) == 0)
        s += 11;
    size_t len = strcspn(s, "\n");
    const char *cut[] = {" (Unix shell quoting issues?)", " at <top-level>"};
    for (size_t k = 0; k < 2; k++) {
        const char *p = strstr(s, cut[k]);
        if (p != NULL && (size_t)(p - s) < len)
            len = (size_t)(p - s);
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* Keeps the first compile message, trimmed to the reason. */
static void
keep_compile_msg(void *data, jv msg)
{
    compile_msg *cm = data;
    if (!cm->set && jv_get_kind(msg) == JV_KIND_STRING) {
        trim_compile_msg(jv_string_value(msg), cm->text, sizeof cm->text);
        cm->set = true;
    }
    jv_free(msg);
}

static uint64_t
fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

wf_code
wf_expr__jq_compile(const char *src, jq_state **out, wf_error *err)
{
    wf_expr__init();
    jq_state *jq = jq_init();
    if (jq == NULL)
        return wf_error_nomem(err);
    compile_msg cm = {.set = false};
    jq_set_error_cb(jq, keep_compile_msg, &cm);
    int ok = jq_compile(jq, src);
    /* Runtime messages come back from jq_next; nothing may reach stderr. */
    jq_set_error_cb(jq, ignore_msg, NULL);
    if (!ok) {
        jq_teardown(&jq);
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "invalid expression: %s",
                            cm.set ? cm.text : "it does not compile");
    }
    *out = jq;
    return WF_OK;
}

/* ---- checking many -------------------------------------------------------- */

/* A deploy's validation compiles each of its expressions to find the ones
 * that do not compile. libjq 1.6 parses and binds its whole builtin
 * library on every jq_compile: some 17 ms on the development machine,
 * against well under a millisecond for a guard itself. So the sources are
 * compiled joined, each inside its own parentheses on lines of its own:
 *
 *     [(
 *     <source 0>
 *     ),(
 *     <source 1>
 *     )]
 *
 * When that compiles, every source does: a source whose brackets balance
 * and whose strings end (joinable) is read by the parser between its
 * parentheses as one expression, exactly as on its own, and binds only to
 * builtins (programs define no functions, and no variable reaches across
 * the parentheses). When it does not, libjq reports each error with its
 * line, which names the source. Syntax errors are compiled again alone
 * (that fails in the parser, before the builtins: cheap), so that the
 * message is the one of the source's own compile (the joined program ends
 * differently); the other errors (an unknown function or variable) read
 * the same either way and are kept. The sources without an error are
 * compiled joined again, since a syntax error stops libjq before it binds
 * anything. A failure no line explains (libjq refuses a program whose
 * bytecode grows past its limit) is checked again in halves. Sources that
 * are not joinable are compiled alone. Compiling is not only the builtins:
 * a long guard costs libjq 1.6 tens to hundreds of milliseconds itself
 * (some 0.3 s for 4 KB of comparisons), which the worker's compile budget
 * and the compile bulkhead bound. */

/* True when src's brackets balance and its strings end, outside comments
 * and inside string interpolations. */
static bool
joinable(const char *s)
{
    char stack[64]; /* open brackets; 'i' an interpolation */
    int sp = 0;
    bool in_str = false;
    for (size_t i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1] == '(') {
                if (sp == (int)sizeof stack)
                    return false;
                stack[sp++] = 'i';
                in_str = false;
                i++;
            } else if (c == '\\' && s[i + 1] != '\0') {
                i++;
            } else if (c == '"') {
                in_str = false;
            }
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '#') {
            while (s[i + 1] != '\0' && s[i + 1] != '\n')
                i++;
        } else if (c == '(' || c == '[' || c == '{') {
            if (sp == (int)sizeof stack)
                return false;
            stack[sp++] = c;
        } else if (c == ')' || c == ']' || c == '}') {
            char open = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (sp == 0 || (stack[sp - 1] != open && !(c == ')' && stack[sp - 1] == 'i')))
                return false;
            in_str = stack[--sp] == 'i';
        }
    }
    return !in_str && sp == 0;
}

/* The errors of one joined compile: each message's line and text. */
typedef struct joined_errors {
    struct joined_error {
        int line;
        char text[200];
    } e[256];
    size_t n;
    bool unplaced; /* an error without a line (other than the count of errors) */
} joined_errors;

static void
keep_joined_msg(void *data, jv msg)
{
    joined_errors *je = data;
    if (jv_get_kind(msg) == JV_KIND_STRING) {
        const char *s = jv_string_value(msg);
        const char *at = strstr(s, " at <top-level>, line ");
        if (at != NULL && je->n < sizeof je->e / sizeof je->e[0]) {
            je->e[je->n].line = atoi(at + strlen(" at <top-level>, line "));
            trim_compile_msg(s, je->e[je->n].text, sizeof je->e[je->n].text);
            je->n++;
        } else if (at == NULL && strstr(s, " compile error") == NULL) {
            je->unplaced = true;
        }
        /* Errors beyond the ones kept come back in a later round. */
    }
    jv_free(msg);
}

/* Compiles srcs[idx[0..m)] joined; true when it compiled. last[k] is the
 * last line of source idx[k] (its closing line). */
static bool
compile_joined(const char *const *srcs, const size_t *idx, size_t m, int *last, joined_errors *je)
{
    size_t len = 8;
    for (size_t k = 0; k < m; k++)
        len += strlen(srcs[idx[k]]) + 6;
    char *prog = malloc(len);
    if (prog == NULL) {
        je->unplaced = true;
        return false;
    }
    size_t at = (size_t)sprintf(prog, "[(\n");
    int line = 1;
    for (size_t k = 0; k < m; k++) {
        const char *s = srcs[idx[k]];
        size_t n = strlen(s);
        memcpy(prog + at, s, n);
        at += n;
        line += 1; /* the source's first line */
        for (size_t i = 0; i < n; i++)
            line += s[i] == '\n';
        at += (size_t)sprintf(prog + at, k + 1 < m ? "\n),(\n" : "\n)]");
        last[k] = ++line; /* its closing line */
    }
    je->n = 0;
    je->unplaced = false;
    jq_state *jq = jq_init();
    bool ok = false;
    if (jq != NULL) {
        jq_set_error_cb(jq, keep_joined_msg, je);
        ok = jq_compile(jq, prog) != 0;
        jq_teardown(&jq);
    } else {
        je->unplaced = true;
    }
    free(prog);
    return ok;
}

/* The source (position in idx) whose lines hold line; m when none. */
static size_t
source_of_line(const int *last, size_t m, int line)
{
    for (size_t k = 0; k < m; k++)
        if (line <= last[k])
            return line > 1 ? k : m;
    return m;
}

/* Compiles src alone, into *e. */
static void
check_alone(const char *src, wf_error *e)
{
    jq_state *jq = NULL;
    wf_error_clear(e);
    if (wf_expr__jq_compile(src, &jq, e) == WF_OK)
        jq_teardown(&jq);
}

/* One round over idx[0..*m): the sources an error names get their result;
 * the rest stay in idx for the next round. False when no error could be
 * placed (the caller then compiles each alone). */
static bool
place_errors(const char *const *srcs, size_t *idx, size_t *m, const int *last,
             const joined_errors *je, wf_error *errs)
{
    bool *named = calloc(*m, sizeof *named);
    if (named == NULL)
        return false;
    size_t placed = 0;
    for (size_t j = 0; j < je->n; j++) {
        size_t k = source_of_line(last, *m, je->e[j].line);
        if (k == *m || named[k])
            continue;
        named[k] = true;
        placed++;
        const char *text = je->e[j].text;
        if (strncmp(text, "syntax error", 12) == 0 ||
            strncmp(text, "Possibly unterminated", 21) == 0)
            check_alone(srcs[idx[k]], &errs[idx[k]]);
        else
            wf_error_set(&errs[idx[k]], WF_E_INVALID_ARGUMENT, "invalid expression: %s", text);
    }
    size_t kept = 0;
    for (size_t k = 0; k < *m; k++)
        if (!named[k])
            idx[kept++] = idx[k];
    free(named);
    *m = kept;
    return placed > 0;
}

/* Checks srcs[idx[0..m)] (joinable ones), joined while that works; last
 * and je are the caller's workspace (m entries of last). A joined program
 * that fails without saying where (libjq refuses a program whose bytecode
 * grows past its limit) is checked in halves. */
static void
check_joined(const char *const *srcs, size_t *idx, size_t m, int *last, joined_errors *je,
             wf_error *errs)
{
    while (m > 1 && !compile_joined(srcs, idx, m, last, je)) {
        if (je->unplaced) {
            check_joined(srcs, idx, m / 2, last, je, errs);
            check_joined(srcs, idx + m / 2, m - m / 2, last, je, errs);
            return;
        }
        if (!place_errors(srcs, idx, &m, last, je, errs)) {
            for (size_t k = 0; k < m; k++)
                check_alone(srcs[idx[k]], &errs[idx[k]]);
            return;
        }
    }
    if (m == 1)
        check_alone(srcs[idx[0]], &errs[idx[0]]);
}

void
wf_expr__jq_check_all(const char *const *srcs, size_t n, wf_error *errs)
{
    wf_expr__init();
    size_t *idx = malloc((n + 1) * sizeof *idx);
    int *last = malloc((n + 1) * sizeof *last);
    joined_errors *je = malloc(sizeof *je);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        wf_error_clear(&errs[i]);
        if (idx != NULL && last != NULL && je != NULL && joinable(srcs[i]))
            idx[m++] = i;
        else
            check_alone(srcs[i], &errs[i]);
    }
    check_joined(srcs, idx, m, last, je, errs);
    free(idx);
    free(last);
    free(je);
}

static _Thread_local wf_expr_wait waiter;

wf_expr_wait
wf_expr_set_wait(wf_expr_wait w)
{
    wf_expr_wait old = waiter;
    waiter = w;
    return old;
}

static void
wait_begins(void)
{
    if (waiter.before != NULL)
        waiter.before(waiter.arg);
}

static void
wait_ends(void)
{
    if (waiter.after != NULL)
        waiter.after(waiter.arg);
}

/* The checks before any compile: not empty, not too long, no refused name
 * or shape. */
static bool
precheck(const char *src, wf_error *err)
{
    if (src == NULL || src[strspn(src, " \t\r\n")] == '\0') {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression is empty");
        return false;
    }
    if (strlen(src) > WF_EXPR_MAX_SOURCE) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression is longer than %d bytes",
                     WF_EXPR_MAX_SOURCE);
        return false;
    }
    return check_program(src, err) && check_shapes(src, err);
}

/* A new expression of src (one reference), evaluated by jq (NULL: by
 * worker processes); takes jq. NULL when out of memory. */
static wf_expr *
expr_new(const char *src, jq_state *jq)
{
    wf_expr *e = calloc(1, sizeof *e);
    if (e == NULL || (e->src = strdup(src)) == NULL) {
        free(e);
        if (jq != NULL)
            jq_teardown(&jq);
        return NULL;
    }
    e->jq = jq;
    e->hash = fnv1a(src);
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

wf_code
wf_expr_compile(const char *src, wf_expr **out, wf_error *err)
{
    wf_expr__init();
    if (!precheck(src, err))
        return err != NULL ? err->code : WF_E_INVALID_ARGUMENT;

    /* Isolated, the program is compiled by a worker (which keeps it for
     * its evaluations): libjq's compile leaks on some syntax errors (fuzz
     * finding K2), and a worker's leaks end with the worker. */
    jq_state *jq = NULL;
    wait_begins();
    wf_code rc = wf_expr__isolated()
                     ? wf_expr__remote(WF_EXPR_OP_COMPILE, src, NULL, NULL, NULL, err)
                     : wf_expr__jq_compile(src, &jq, err);
    wait_ends();
    if (rc != WF_OK)
        return rc;
    wf_expr *e = expr_new(src, jq);
    if (e == NULL)
        return wf_error_nomem(err);
    *out = e;
    return WF_OK;
}

void
wf_expr_free(wf_expr *e)
{
    if (e == NULL)
        return;
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (e->jq != NULL)
        jq_teardown(&e->jq);
    pthread_mutex_destroy(&e->mu);
    free(e->src);
    free(e);
}

const char *
wf_expr_source(const wf_expr *e)
{
    return e->src;
}

/* ---- cache --------------------------------------------------------------- */

/* A ring of at most WF_EXPR_CACHE_MAX entries searched linearly by hash:
 * definitions hold tens of expressions, so this stays small and simple.
 * The oldest entry is evicted first; holders of a reference keep it alive. */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static wf_expr *cache_ring[WF_EXPR_CACHE_MAX];
static size_t cache_n, cache_head;

static wf_expr *
cache_find_locked(const char *src, uint64_t h)
{
    for (size_t i = 0; i < cache_n; i++) {
        wf_expr *e = cache_ring[(cache_head + i) % WF_EXPR_CACHE_MAX];
        if (e->hash == h && strcmp(e->src, src) == 0) {
            atomic_fetch_add(&e->refs, 1);
            return e;
        }
    }
    return NULL;
}

/* Puts fresh into the cache, taking the caller's reference; returns the
 * cached expression of its source (fresh, or one another thread put
 * there first), with a reference for the caller. */
static wf_expr *
cache_insert(wf_expr *fresh)
{
    wf_expr *evicted = NULL;
    pthread_mutex_lock(&cache_mu);
    wf_expr *e = cache_find_locked(fresh->src, fresh->hash);
    if (e == NULL) {
        if (cache_n == WF_EXPR_CACHE_MAX) {
            evicted = cache_ring[cache_head];
            cache_ring[cache_head] = NULL;
            cache_head = (cache_head + 1) % WF_EXPR_CACHE_MAX;
            cache_n--;
        }
        atomic_fetch_add(&fresh->refs, 1); /* the cache's reference */
        cache_ring[(cache_head + cache_n) % WF_EXPR_CACHE_MAX] = fresh;
        cache_n++;
        e = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&cache_mu);
    wf_expr_free(fresh);
    wf_expr_free(evicted);
    return e;
}

bool
wf_expr_seen(const char *src)
{
    pthread_mutex_lock(&cache_mu);
    wf_expr *e = cache_find_locked(src, fnv1a(src));
    pthread_mutex_unlock(&cache_mu);
    wf_expr_free(e);
    return e != NULL;
}

wf_code
wf_expr_cached(const char *src, wf_expr **out, wf_error *err)
{
    if (src == NULL)
        return wf_expr_compile(src, out, err);
    uint64_t h = fnv1a(src);
    pthread_mutex_lock(&cache_mu);
    wf_expr *e = cache_find_locked(src, h);
    pthread_mutex_unlock(&cache_mu);
    if (e != NULL) {
        *out = e;
        return WF_OK;
    }
    /* Compile outside the lock: jq 1.6 parses its builtins on every
     * compile, which takes milliseconds. */
    wf_expr *fresh;
    wf_code rc = wf_expr_compile(src, &fresh, err);
    if (rc != WF_OK)
        return rc;
    *out = cache_insert(fresh);
    return WF_OK;
}

/* Compiles the sources no cache has seen (todo[0..m), each of
 * srcs[at[k]]) and caches the ones that compile; errs[at[k]] their
 * results. */
static wf_code
check_unseen(const char *const *todo, const size_t *at, size_t m, wf_error *errs, wf_error *err)
{
    wf_code rc = wf_bulkhead_enter(WF_BULKHEAD_COMPILE, err);
    if (rc != WF_OK)
        return rc;
    wf_error *res = calloc(m, sizeof *res);
    if (res == NULL)
        return wf_error_nomem(err);
    bool isolated = wf_expr__isolated();
    wait_begins();
    if (isolated)
        rc = wf_expr__remote_check(todo, m, res, err);
    else
        wf_expr__jq_check_all(todo, m, res);
    wait_ends();
    for (size_t k = 0; rc == WF_OK && k < m; k++) {
        errs[at[k]] = res[k];
        /* Isolated, an expression is its source: cached, later deploys of
         * it compile nothing. Inline, its evaluations compile it into the
         * cache at first use (wf_expr_cached). */
        wf_expr *e = isolated && res[k].code == WF_OK ? expr_new(todo[k], NULL) : NULL;
        if (e != NULL)
            wf_expr_free(cache_insert(e));
    }
    free(res);
    return rc;
}

wf_code
wf_expr_check_all(const char *const *srcs, size_t n, wf_error *errs, wf_error *err)
{
    wf_expr__init();
    const char **todo = malloc((n + 1) * sizeof *todo);
    size_t *at = malloc((n + 1) * sizeof *at);
    if (todo == NULL || at == NULL) {
        free(todo);
        free(at);
        return wf_error_nomem(err);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        wf_error_clear(&errs[i]);
        if (precheck(srcs[i], &errs[i]) && !wf_expr_seen(srcs[i])) {
            todo[m] = srcs[i];
            at[m++] = i;
        }
    }
    wf_code rc = m > 0 ? check_unseen(todo, at, m, errs, err) : WF_OK;
    free(todo);
    free(at);
    return rc;
}

size_t
wf_expr_cache_size(void)
{
    pthread_mutex_lock(&cache_mu);
    size_t n = cache_n;
    pthread_mutex_unlock(&cache_mu);
    return n;
}

void
wf_expr_cache_clear(void)
{
    wf_expr *old[WF_EXPR_CACHE_MAX];
    pthread_mutex_lock(&cache_mu);
    size_t n = cache_n;
    for (size_t i = 0; i < n; i++) {
        size_t k = (cache_head + i) % WF_EXPR_CACHE_MAX;
        old[i] = cache_ring[k];
        cache_ring[k] = NULL;
    }
    cache_n = cache_head = 0;
    pthread_mutex_unlock(&cache_mu);
    for (size_t i = 0; i < n; i++)
        wf_expr_free(old[i]);
}

/* ---- evaluation ---------------------------------------------------------- */

static const char *
kind_name(jv v)
{
    return jv_kind_name(jv_get_kind(v));
}

/* Classifies what jq_next returned: 1 = a value, 0 = no more results,
 * -1 = a runtime error (err filled, v consumed). */
static int
next_result(jq_state *jq, jv v, wf_error *err)
{
    if (jv_is_valid(v))
        return 1;
    if (!jv_invalid_has_msg(jv_copy(v))) {
        jv_free(v);
        if (jq_halted(jq)) {
            wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression halted");
            return -1;
        }
        return 0;
    }
    jv msg = jv_invalid_get_msg(v);
    char text[200];
    if (jv_get_kind(msg) == JV_KIND_STRING) {
        snprintf(text, sizeof text, "%s", jv_string_value(msg));
        jv_free(msg);
    } else {
        jv s = jv_dump_string(msg, 0);
        snprintf(text, sizeof text, "%s (not a string)", jv_string_value(s));
        jv_free(s);
    }
    text[0] = (char)tolower((unsigned char)text[0]);
    wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression failed: %s", text);
    return -1;
}

static wf_code
run_bool(jq_state *jq, bool *out, wf_error *err)
{
    jv v = jq_next(jq);
    int r = next_result(jq, v, err);
    if (r < 0)
        return err != NULL ? err->code : WF_E_INVALID_ARGUMENT;
    jv_kind k = r == 1 ? jv_get_kind(v) : JV_KIND_NULL;
    *out = k != JV_KIND_NULL && k != JV_KIND_FALSE;
    if (r == 1)
        jv_free(v);
    return WF_OK;
}

typedef struct str_list {
    char **v;
    size_t n, cap, bytes;
} str_list;

static wf_code
str_list_add(str_list *l, wf_arena *a, jv s, wf_error *err)
{
    const char *p = jv_string_value(s);
    size_t len = (size_t)jv_string_length_bytes(jv_copy(s));
    if (len == 0 || strlen(p) != len)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "expression yielded an empty id or one containing NUL");
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], p) == 0)
            return WF_OK;
    l->bytes += len;
    if (l->n == WF_EXPR_MAX_RESULTS || l->bytes > WF_EXPR_MAX_OUTPUT)
        return wf_error_set(err, WF_E_TOO_LARGE, "expression yielded more than %d ids or %zu bytes",
                            WF_EXPR_MAX_RESULTS, WF_EXPR_MAX_OUTPUT);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **v = wf_arena_alloc(a, cap * sizeof *v);
        if (v == NULL)
            return wf_error_nomem(err);
        if (l->n > 0)
            memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n] = wf_arena_strndup(a, p, len)) == NULL)
        return wf_error_nomem(err);
    l->n++;
    return WF_OK;
}

static wf_code
run_strings(jq_state *jq, wf_arena *a, wf_expr_result *res, wf_error *err)
{
    str_list l = {0};
    wf_code rc = WF_OK;
    for (int results = 0; rc == WF_OK; results++) {
        if (results == WF_EXPR_MAX_RESULTS) {
            rc = wf_error_set(err, WF_E_TOO_LARGE, "expression yielded more than %d results",
                              WF_EXPR_MAX_RESULTS);
            break;
        }
        jv v = jq_next(jq);
        int r = next_result(jq, v, err);
        if (r <= 0) {
            if (r < 0)
                rc = err != NULL ? err->code : WF_E_INVALID_ARGUMENT;
            break;
        }
        if (jv_get_kind(v) == JV_KIND_STRING) {
            rc = str_list_add(&l, a, v, err);
        } else if (jv_get_kind(v) == JV_KIND_ARRAY) {
            int len = jv_array_length(jv_copy(v));
            for (int i = 0; i < len && rc == WF_OK; i++) {
                jv item = jv_array_get(jv_copy(v), i);
                if (jv_get_kind(item) == JV_KIND_STRING)
                    rc = str_list_add(&l, a, item, err);
                else
                    rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                      "expression must yield strings or arrays of strings, "
                                      "got an array holding %s",
                                      kind_name(item));
                jv_free(item);
            }
        } else {
            rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                              "expression must yield strings or arrays of strings, got %s",
                              kind_name(v));
        }
        jv_free(v);
    }
    if (rc == WF_OK) {
        res->strs = l.v;
        res->nstrs = l.n;
    }
    return rc;
}

static wf_code
run_time(jq_state *jq, int64_t *out_us, wf_error *err)
{
    jv v = jq_next(jq);
    int r = next_result(jq, v, err);
    if (r < 0)
        return err != NULL ? err->code : WF_E_INVALID_ARGUMENT;
    if (r == 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression yielded no time");
    wf_code rc = WF_OK;
    if (jv_get_kind(v) != JV_KIND_STRING)
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                          "expression must yield an RFC 3339 time string, got %s", kind_name(v));
    else if (!wf_expr_parse_rfc3339(jv_string_value(v), out_us))
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                          "expression yielded \"%.64s\", which is not an RFC 3339 time",
                          jv_string_value(v));
    jv_free(v);
    return rc;
}

static wf_code
run_int(jq_state *jq, int64_t *out, wf_error *err)
{
    jv v = jq_next(jq);
    int r = next_result(jq, v, err);
    if (r < 0)
        return err != NULL ? err->code : WF_E_INVALID_ARGUMENT;
    if (r == 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression yielded no number");
    wf_code rc = WF_OK;
    if (jv_get_kind(v) != JV_KIND_NUMBER) {
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "expression must yield an integer, got %s",
                          kind_name(v));
    } else {
        double d = jv_number_value(v);
        /* 2^63 itself is out of range; every smaller double that is whole is in. */
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
            rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                              "expression must yield an integer, got %.17g", d);
        else
            *out = (int64_t)d;
    }
    jv_free(v);
    return rc;
}

/* The first result as JSON text ("null" when there is none), at most
 * WF_EXPR_MAX_JSON bytes. */
static wf_code
run_json(jq_state *jq, wf_arena *a, wf_expr_result *res, wf_error *err)
{
    jv v = jq_next(jq);
    int r = next_result(jq, v, err);
    if (r < 0)
        return err != NULL ? err->code : WF_E_INVALID_ARGUMENT;
    if (r == 0)
        v = jv_null();
    jv text = jv_dump_string(v, 0);
    size_t len = (size_t)jv_string_length_bytes(jv_copy(text));
    wf_code rc = WF_OK;
    res->strs = wf_arena_alloc(a, sizeof *res->strs);
    if (len > WF_EXPR_MAX_JSON)
        rc = wf_error_set(err, WF_E_TOO_LARGE, "expression yielded more than %zu bytes",
                          WF_EXPR_MAX_JSON);
    else if (res->strs == NULL ||
             (res->strs[0] = wf_arena_strndup(a, jv_string_value(text), len)) == NULL)
        rc = wf_error_nomem(err);
    else
        res->nstrs = 1;
    jv_free(text);
    return rc;
}

wf_code
wf_expr__jq_run(jq_state *jq, wf_expr_op op, const char *vars_json, size_t len, wf_arena *a,
                wf_expr_result *r, wf_error *err)
{
    /* jv values are refcounted without atomics: the input is created by
     * the thread that owns jq, and every jv is freed before returning. */
    jv input = jv_parse_sized(vars_json, (int)len);
    if (!jv_is_valid(input)) {
        jv_free(input);
        return wf_error_set(err, WF_E_INVALID_JSON, "variables are not valid JSON");
    }
    jq_start(jq, input, 0);
    switch (op) {
    case WF_EXPR_OP_BOOL:
        return run_bool(jq, &r->yes, err);
    case WF_EXPR_OP_STRINGS:
        return run_strings(jq, a, r, err);
    case WF_EXPR_OP_TIME:
        return run_time(jq, &r->us, err);
    case WF_EXPR_OP_INT:
        return run_int(jq, &r->us, err);
    case WF_EXPR_OP_JSON:
        return run_json(jq, a, r, err);
    case WF_EXPR_OP_COMPILE:
    case WF_EXPR_OP_CHECK:
        break;
    }
    return wf_error_set(err, WF_E_INTERNAL, "unknown expression operation");
}

/* One evaluation of e, in this process under e's lock or in a worker. */
static wf_code
eval(wf_expr *e, wf_expr_op op, const char *vars_json, wf_arena *a, wf_expr_result *r,
     wf_error *err)
{
    if (vars_json == NULL || vars_json[0] == '\0')
        vars_json = "{}";
    size_t len = strlen(vars_json);
    if (len > WF_EXPR_MAX_INPUT)
        return wf_error_set(err, WF_E_TOO_LARGE, "variables are larger than %zu bytes",
                            WF_EXPR_MAX_INPUT);
    wf_code rc;
    wait_begins();
    if (e->jq == NULL) {
        rc = wf_expr__remote(op, e->src, vars_json, a, r, err);
    } else {
        pthread_mutex_lock(&e->mu);
        rc = wf_expr__jq_run(e->jq, op, vars_json, len, a, r, err);
        pthread_mutex_unlock(&e->mu);
    }
    wait_ends();
    return rc;
}

wf_code
wf_expr_eval_bool(wf_expr *e, const char *vars_json, bool *out, wf_error *err)
{
    wf_expr_result r = {0};
    wf_code rc = eval(e, WF_EXPR_OP_BOOL, vars_json, NULL, &r, err);
    if (rc == WF_OK)
        *out = r.yes;
    return rc;
}

wf_code
wf_expr_eval_strings(wf_expr *e, const char *vars_json, wf_arena *a, char ***out, size_t *n_out,
                     wf_error *err)
{
    wf_expr_result r = {0};
    wf_code rc = eval(e, WF_EXPR_OP_STRINGS, vars_json, a, &r, err);
    if (rc == WF_OK) {
        *out = r.strs;
        *n_out = r.nstrs;
    }
    return rc;
}

wf_code
wf_expr_eval_time(wf_expr *e, const char *vars_json, int64_t *out_us, wf_error *err)
{
    wf_expr_result r = {0};
    wf_code rc = eval(e, WF_EXPR_OP_TIME, vars_json, NULL, &r, err);
    if (rc == WF_OK)
        *out_us = r.us;
    return rc;
}

wf_code
wf_expr_eval_int(wf_expr *e, const char *vars_json, int64_t *out, wf_error *err)
{
    wf_expr_result r = {0};
    wf_code rc = eval(e, WF_EXPR_OP_INT, vars_json, NULL, &r, err);
    if (rc == WF_OK)
        *out = r.us;
    return rc;
}

wf_code
wf_expr_eval_json(wf_expr *e, const char *vars_json, wf_arena *a, char **out, wf_error *err)
{
    wf_expr_result r = {0};
    wf_code rc = eval(e, WF_EXPR_OP_JSON, vars_json, a, &r, err);
    if (rc == WF_OK)
        *out = r.nstrs == 1 ? r.strs[0] : NULL;
    if (rc == WF_OK && *out == NULL)
        rc = wf_error_set(err, WF_E_INTERNAL, "expression gave no JSON text");
    return rc;
}

/* ---- RFC 3339 ------------------------------------------------------------ */

static bool
digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool
wf_expr_parse_rfc3339(const char *s, int64_t *out_us)
{
    int y, mo, d, h, mi, sec;
    if (s == NULL || strlen(s) < 20)
        return false;
    if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return false;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || sec > 60)
        return false;
    if (sec == 60)
        sec = 59; /* a leap second reads as the second before it */
    const char *p = s + 19;
    int64_t frac_us = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (isdigit((unsigned char)*p)) {
            if (nd < 6)
                frac_us = frac_us * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            return false;
        for (int k = nd; k < 6; k++)
            frac_us *= 10;
    }
    int64_t off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        off_s = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p != '\0')
        return false;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off_s;
    *out_us = secs * 1000000 + frac_us;
    return true;
}
