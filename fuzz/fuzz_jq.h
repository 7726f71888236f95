/*
 * fuzz_jq: what the harnesses do about libjq 1.6 (README.md, "libjq").
 *
 *   - Known finding K2: jq_compile leaks when it fails while a string
 *     literal is open. The fuzz binaries interpose jq_compile (fuzz_jq.c)
 *     and compile such programs with LeakSanitizer disabled.
 *   - expr.h's residual risk: libjq cannot be interrupted, and a short
 *     program can allocate without bound ("x" * 1e8, .[1e9] = 1, string
 *     doubling). The harnesses keep such programs away from evaluation:
 *     fuzz_expr does not evaluate them, the definition and request
 *     targets replace them before the engine sees them.
 */
#ifndef WF_FUZZ_JQ_H
#define WF_FUZZ_JQ_H

#include <stdbool.h>

#include <protobuf-c/protobuf-c.h>

#include "net.h"

/* True when libjq 1.6 may leak compiling src: it has a string
 * interpolation, or it ends inside a string literal or interpolation. */
bool fuzz_jq_may_leak(const char *src);

/* The harness caps on evaluated programs. True when src (outside its
 * string literals) has a number literal above FUZZ_JQ_MAX_NUMBER, more
 * than FUZZ_JQ_MAX_MUL "*" or FUZZ_JQ_MAX_ADD "+", or names a builtin
 * that makes large numbers or accumulates over the input (pow, exp10,
 * now, tonumber, reduce, foreach, ...). Always false with
 * FUZZ_NO_JQ_CAPS=1 (to reproduce a finding of that class). */
#define FUZZ_JQ_MAX_NUMBER 10000.0
#define FUZZ_JQ_MAX_MUL 1
#define FUZZ_JQ_MAX_ADD 4
bool fuzz_jq_unbounded(const char *src);

/* True when the JSON text has a number above FUZZ_JQ_MAX_NUMBER (in
 * magnitude) outside its strings; false with FUZZ_NO_JQ_CAPS=1. */
bool fuzz_json_has_big_number(const char *json);

/* What replaces a program the harness keeps from the engine: it does not
 * compile, so validation reports it. */
#define FUZZ_JQ_NEUTRAL "(fuzz: capped"

/* Replaces every expression field (guard, ids_expression, due_expression)
 * of m and its nested messages that fuzz_jq_unbounded flags. m lives in an
 * arena; the replacement is a static string. */
void fuzz_jq_cap_message(ProtobufCMessage *m);

/* The same for the expressions of a net. */
void fuzz_jq_cap_net(wf_net *net);

#endif /* WF_FUZZ_JQ_H */
