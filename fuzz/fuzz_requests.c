/*
 * fuzz_requests: request decoding + validation + engine rules, on the
 * memory store, the way the rpc layer runs a call (rpc_call.c dispatch).
 *
 * Input: byte 0 selects the route, wf_routes[byte0 % nroutes]; when
 * (byte0 / nroutes) is odd and the route does not require an actor, the
 * call has no x-actor-id (actor NULL), else actor "fuzz". The remaining
 * bytes are the request: protobuf_c_message_unpack with the method's input
 * descriptor (from workflow__v1__workflow_service__descriptor) and the
 * arena allocator (expressions that libjq could not evaluate in bounded
 * time and memory are replaced, fuzz_jq.h); a message that does not unpack is what the rpc layer
 * answers INVALID_ARGUMENT without calling a handler, so it ends here.
 * Then the handler runs (streams: open + a few next steps) in tenant "t"
 * with a deadline 3 s ahead; every response is packed and unpacked again;
 * the arena is freed and the expression cache emptied (fuzz_app.h,
 * fuzz_input_done). The store persists across inputs and is recreated
 * every FUZZ_RECYCLE inputs (fuzz_app.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_app.h"
#include "fuzz_jq.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_app_init();
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    wf_app *app = fuzz_app_next_input();
    const fuzz_route *routes;
    size_t n = fuzz_routes(&routes);
    const fuzz_route *r = &routes[data[0] % n];
    const char *actor = FUZZ_ACTOR;
    if ((data[0] / n) % 2 == 1 && !(r->route->flags & WF_ROUTE_ACTOR))
        actor = NULL;

    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        fuzz_fail("out of memory");
    ProtobufCAllocator alloc = wf_arena_pb_allocator(arena);
    /* As rpc_call.c: the wire check, then protobuf-c. */
    ProtobufCMessage *req =
        fuzz_wire_ok(r->method->input, data + 1, size - 1, arena)
            ? protobuf_c_message_unpack(r->method->input, &alloc, size - 1, data + 1)
            : NULL;
    if (req != NULL) {
        wf_error err;
        fuzz_jq_cap_message(req); /* libjq's unbounded programs (fuzz_jq.h) */
        fuzz_dispatch(app, arena, r, req, actor, NULL, &err);
    }
    wf_arena_free(arena);
    fuzz_input_done();
    return 0;
}
