/*
 * rpc_reflection: grpc.reflection.v1 and v1alpha (wire-identical) from the
 * descriptor set embedded at build time, so grpcurl, Postman and other
 * dynamic clients work without the .proto files.
 */
#ifndef WF_RPC_REFLECTION_H
#define WF_RPC_REFLECTION_H

#include <stddef.h>

#include "grpc/reflection/v1/reflection.pb-c.h"
#include "wf_arena.h"
#include "wf_error.h"

typedef struct wf_reflection wf_reflection;

/* Indexes the serialized FileDescriptorSet (len bytes, borrowed for the
 * index's lifetime) and the list of service names to announce. NULL and
 * err when the set does not parse. */
wf_reflection *wf_reflection_new(const unsigned char *set, size_t len, const char *const *services,
                                 size_t nservices, wf_error *err);

void wf_reflection_free(wf_reflection *r);

/* Answers one request; the response lives in the arena. Unknown files or
 * symbols get an ErrorResponse with NOT_FOUND, as the protocol asks. NULL
 * and WF_E_NOMEM in err when the arena has failed (wf_arena_failed). */
Grpc__Reflection__V1__ServerReflectionResponse *
wf_reflection_answer(const wf_reflection *r,
                     const Grpc__Reflection__V1__ServerReflectionRequest *req, wf_arena *arena,
                     wf_error *err);

#endif /* WF_RPC_REFLECTION_H */
