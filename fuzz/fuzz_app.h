/*
 * fuzz_app: what the libFuzzer harnesses share.
 *
 *   - one long-lived wf_app over the memory store, built from a fixed
 *     development configuration (no grpc, no network, no Postgres), primed
 *     with a deployed net, instances, tasks and jobs so that list and
 *     activation handlers see data, and recreated every FUZZ_RECYCLE inputs
 *     so memory stays bounded;
 *   - the method table: each row of wf_routes with its protobuf-c method
 *     descriptor from workflow__v1__workflow_service__descriptor;
 *   - fuzz_dispatch: one call driven the way rpc/rpc_call.c dispatch()
 *     drives it (a unary handler, or a stream's open + a few next steps),
 *     every response packed as the rpc layer would, and the handler
 *     contract of handler.h checked. A broken contract aborts with a line
 *     starting "FUZZ CONTRACT:" so libFuzzer records the input as a crash.
 *
 * Not thread-safe: libFuzzer runs one input at a time per process.
 */
#ifndef WF_FUZZ_APP_H
#define WF_FUZZ_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "handler.h"

/* Inputs between two recreations of the store (env FUZZ_RECYCLE overrides;
 * 1 = a fresh, primed store for every input, for reproducing). */
#define FUZZ_RECYCLE_DEFAULT 5000
/* Steps asked of a stream after a successful open. */
#define FUZZ_STREAM_STEPS 4
/* The call's deadline, ahead of now (the fuzzers run with -timeout=5). */
#define FUZZ_DEADLINE_MS 3000
#define FUZZ_TENANT "t"
#define FUZZ_ACTOR "fuzz"

typedef struct fuzz_route {
    const wf_route *route;
    const ProtobufCMethodDescriptor *method; /* input and output descriptors */
} fuzz_route;

/* Builds the app once (LLVMFuzzerInitialize). Exits the process when the
 * configuration or the store cannot be built. */
void fuzz_app_init(void);

/* The app for the next input; every FUZZ_RECYCLE inputs the store is
 * closed, the process-wide caches (definitions, expressions) emptied and a
 * new primed store opened. */
wf_app *fuzz_app_next_input(void);

/* Ends an input: empties the expression cache. libjq 1.6 keeps its
 * interpreter stack through a pointer one past the end of the block
 * (exec_stack.h: mem_end), which LeakSanitizer does not count as a
 * reference, so every cached expression that has run would be reported as
 * a leak; a freed expression (jq_teardown) frees its stack. See README.md. */
void fuzz_input_done(void);

/* Every row of wf_routes with its method descriptor, in table order. */
size_t fuzz_routes(const fuzz_route **out);

/* The route of a method name, NULL when there is none. */
const fuzz_route *fuzz_route_named(const char *method);

/* Runs req (a message of r->method->input, in arena) as one call in
 * tenant FUZZ_TENANT for actor (NULL: no x-actor-id), with a deadline
 * FUZZ_DEADLINE_MS ahead. On WF_OK, *resp (when resp is non-NULL) is the
 * unary response, in arena (NULL for a stream: its messages live in
 * per-step scratch arenas and are only checked). Returns the handler's
 * code; err says why. With FUZZ_DEBUG=1 in the environment each call is
 * printed to stderr with its outcome. */
wf_code fuzz_dispatch(wf_app *app, wf_arena *arena, const fuzz_route *r,
                      const ProtobufCMessage *req, const char *actor, ProtobufCMessage **resp,
                      wf_error *err);

/* The rpc layer's check before unpacking (rpc_wire.h: nesting depth, UTF-8
 * and NUL bytes of every string field, wire types, Duration and Timestamp
 * ranges): true when the request passes the door. A refused field must
 * come with the violation naming it. */
bool fuzz_wire_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
                  wf_arena *arena);

/* Known findings (README.md "Known findings"): reports id at where once
 * per process on stderr ("FUZZ KNOWN ..."), for run.sh's summary. The
 * caller tolerates the finding unless fuzz_strict() (FUZZ_STRICT=1). */
void fuzz_known(const char *id, const char *where, const char *what);
bool fuzz_strict(void);

/* True when FUZZ_DEBUG=1: the harnesses print what each input did. */
bool fuzz_debug(void);

/* Reports a broken contract and aborts (a libFuzzer crash). */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Packs msg as the rpc layer does (protobuf_c_message_pack into a buffer
 * of get_packed_size bytes) and unpacks it again with desc, as a client
 * would; a message that does not survive is a broken contract. */
void fuzz_check_packs(const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *desc,
                      const char *what);

#endif /* WF_FUZZ_APP_H */
