/*
 * fuzz_jq: the harnesses' handling of libjq 1.6 (see fuzz_jq.h).
 */
#include "fuzz_jq.h"

#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jq.h>
#include <sanitizer/lsan_interface.h>

#include "fuzz_app.h"

/* ---- a jq 1.6 lexer, as far as strings go ------------------------------------------
 *
 * Follows the lexer's states the way expr.c check_program does: string
 * literals with escapes and "\(...)" interpolations (code again, nested to
 * any depth), comments. code (when non-NULL, strlen(s) + 1 bytes) receives
 * s with the text of string literals blanked, so the checks below only
 * see code. */
typedef struct jq_scan {
    bool open;          /* the program ends inside a string or interpolation */
    bool interpolation; /* some string has an interpolation */
} jq_scan;

static jq_scan
scan(const char *s, char *code)
{
    int depth[64]; /* paren depth of each open interpolation */
    int sp = 0;
    bool in_str = false;
    jq_scan r = {false, false};
    char scratch[2];
    size_t i = 0;
    while (s[i] != '\0') {
        char c = s[i];
        /* Where to write: code, or a scratch pair when code is NULL. */
        char *o = code != NULL ? code + i : scratch;
        if (in_str) {
            if (c == '\\' && s[i + 1] == '(') {
                if (sp == 64) {
                    r.open = true;
                    break;
                }
                depth[sp++] = 0;
                r.interpolation = true;
                in_str = false;
                o[0] = ' ', o[1] = '(';
                i += 2;
            } else if (c == '\\' && s[i + 1] != '\0') {
                o[0] = o[1] = ' ';
                i += 2;
            } else {
                in_str = c != '"';
                o[0] = c == '"' ? '"' : ' ';
                i++;
            }
            continue;
        }
        o[0] = c;
        if (c == '"') {
            /* Strings do not change paren depth: at their end the lexer is
             * back in the code (of the interpolation) they started in. */
            in_str = true;
        } else if (c == '#') {
            while (s[i] != '\0' && s[i] != '\n') {
                if (code != NULL)
                    code[i] = ' ';
                i++;
            }
            continue;
        } else if (c == '(' && sp > 0) {
            depth[sp - 1]++;
        } else if (c == ')' && sp > 0 && depth[sp - 1] == 0) {
            sp--;
            in_str = true;
        } else if (c == ')' && sp > 0) {
            depth[sp - 1]--;
        }
        i++;
    }
    if (code != NULL)
        code[i] = '\0';
    r.open = r.open || in_str || sp > 0;
    return r;
}

/* ---- K2: the compile leak --------------------------------------------------------
 *
 * libjq 1.6 leaks one 21-byte jv string when jq_compile fails while a
 * string literal is open: the program ends inside one ("abc, "\(.a) or a
 * syntax error occurs inside an interpolation (.a | "x\(1 +)"). The leak
 * is allocated under jq_parse, but libjq has no frame pointers, so LSan's
 * malloc stacks stop at jv_mem_alloc and no suppression can name it.
 * Instead the fuzz binaries interpose jq_compile (the engine is linked in
 * statically, so expr.c's call binds to the definition below) and let
 * libjq compile such programs with LSan disabled. Only allocations made
 * inside libjq's jq_compile of a program with a string interpolation or an
 * unterminated string are exempt; everything else is leak-checked as
 * usual. Remove this when Debian's libjq is fixed. */

bool
fuzz_jq_may_leak(const char *src)
{
    if (src == NULL)
        return false;
    jq_scan r = scan(src, NULL);
    return r.open || r.interpolation;
}

int
jq_compile(jq_state *jq, const char *src)
{
    static int (*real)(jq_state *, const char *);
    if (real == NULL) {
        *(void **)&real = dlsym(RTLD_NEXT, "jq_compile");
        if (real == NULL)
            fuzz_fail("jq_compile not found in libjq: %s", dlerror());
    }
    if (!fuzz_jq_may_leak(src))
        return real(jq, src);
    __lsan_disable();
    int ok = real(jq, src);
    __lsan_enable();
    return ok;
}

/* ---- the caps on evaluated programs ------------------------------------------------ */

/* Builtins that turn small literals into large numbers, or accumulate
 * over the whole input (expr.h: "string doubling over a large variables
 * array"). */
static const char *const capped_names[] = {
    "reduce",      "foreach", "pow",       "exp",      "exp2",
    "exp10",       "ldexp",   "scalb",     "scalbln",  "gamma",
    "lgamma",      "tgamma",  "lgamma_r",  "now",      "mktime",
    "fromdate",    "todate",  "strptime",  "tonumber", "fromdateiso8601",
    "dateadd",     "datesub", "date",      "fromjson", "infinite",
    "significand", "drem",    "nearbyint", NULL,
};

static bool
big_numbers(const char *code)
{
    for (size_t i = 0; code[i] != '\0'; i++) {
        if (!isdigit((unsigned char)code[i]))
            continue;
        if (i > 0 &&
            (isalnum((unsigned char)code[i - 1]) || code[i - 1] == '_' || code[i - 1] == '$'))
            continue; /* inside an identifier such as $x1 */
        char *end;
        double v = strtod(code + i, &end);
        if (!(fabs(v) <= FUZZ_JQ_MAX_NUMBER)) /* NaN too */
            return true;
        i = (size_t)(end - code) - 1;
    }
    return false;
}

/* FUZZ_NO_JQ_CAPS=1 lifts the caps, to reproduce a K4 finding. */
static bool
caps_off(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FUZZ_NO_JQ_CAPS");
        v = e != NULL && strcmp(e, "1") == 0;
    }
    return v;
}

bool
fuzz_jq_unbounded(const char *src)
{
    if (src == NULL || caps_off())
        return false;
    size_t n = strlen(src);
    char *code = malloc(n + 1);
    if (code == NULL)
        fuzz_fail("out of memory");
    scan(src, code);
    bool capped = big_numbers(code);
    int mul = 0, add = 0;
    for (size_t i = 0; !capped && code[i] != '\0'; i++) {
        mul += code[i] == '*';
        add += code[i] == '+';
        if (isalpha((unsigned char)code[i]) || code[i] == '_') {
            size_t st = i;
            while (isalnum((unsigned char)code[i + 1]) || code[i + 1] == '_')
                i++;
            if (st > 0 && (code[st - 1] == '.' || code[st - 1] == '$' ||
                           isalnum((unsigned char)code[st - 1])))
                continue; /* a field (.now) or a variable ($now) */
            for (const char *const *c = capped_names; *c != NULL; c++)
                if (strlen(*c) == i + 1 - st && strncmp(code + st, *c, i + 1 - st) == 0)
                    capped = true;
        }
    }
    free(code);
    return capped || mul > FUZZ_JQ_MAX_MUL || add > FUZZ_JQ_MAX_ADD;
}

bool
fuzz_json_has_big_number(const char *json)
{
    if (json == NULL || caps_off())
        return false;
    size_t n = strlen(json);
    char *code = malloc(n + 1);
    if (code == NULL)
        fuzz_fail("out of memory");
    /* JSON strings: blank them (no interpolation in JSON; escapes alike). */
    bool in_str = false;
    for (size_t i = 0; i <= n; i++) {
        char c = json[i];
        code[i] = in_str && c != '\0' ? ' ' : c;
        if (in_str && c == '\\' && json[i + 1] != '\0') {
            code[++i] = ' ';
        } else if (c == '"') {
            in_str = !in_str;
        }
    }
    bool big = big_numbers(code);
    free(code);
    return big;
}

/* ---- replacing capped programs ----------------------------------------------------- */

static const char *
cap(const char *src)
{
    return fuzz_jq_unbounded(src) ? FUZZ_JQ_NEUTRAL : src;
}

void
fuzz_jq_cap_message(ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    char *base = (char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue;
        size_t n = 1;
        void **items = (void **)(base + f->offset);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)(base + f->quantifier_offset);
            items = *(void ***)(base + f->offset);
        }
        for (size_t k = 0; k < n; k++) {
            if (items[k] == NULL)
                continue;
            if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                fuzz_jq_cap_message(items[k]);
            else if (strcmp(f->name, "guard") == 0 || strcmp(f->name, "ids_expression") == 0 ||
                     strcmp(f->name, "due_expression") == 0)
                items[k] = (void *)cap(items[k]);
        }
    }
}

void
fuzz_jq_cap_net(wf_net *net)
{
    for (size_t i = 0; i < net->n_arcs; i++)
        net->arcs[i].guard = cap(net->arcs[i].guard);
    for (size_t i = 0; i < net->n_transitions; i++) {
        wf_transition *t = &net->transitions[i];
        t->assignee.ids_expression = cap(t->assignee.ids_expression);
        t->due_expression = cap(t->due_expression);
    }
}
