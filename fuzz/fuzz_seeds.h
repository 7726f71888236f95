/*
 * fuzz_seeds: small valid inputs, used twice: gen_corpus.c writes them as
 * the seed corpora of fuzz/corpus/, and fuzz_app.c runs some of them to
 * prime each new memory store (a deployed net with instances, tasks, jobs
 * and timers for the list and activation handlers to find).
 */
#ifndef WF_FUZZ_SEEDS_H
#define WF_FUZZ_SEEDS_H

#include <stddef.h>

#include "wf_arena.h"
#include "workflow/v1/workflow.pb-c.h"

/* The key of the seed NET definition, and of the ad-hoc one. */
#define FUZZ_NET_KEY "fuzz-net"
#define FUZZ_ADHOC_KEY "fuzz-adhoc"

/* The seed NET definition: one START and one END place, a USER task for
 * FUZZ_ACTOR, a silent AUTO router with a guarded arc and a default arc,
 * an AUTO job "ship" with a retry policy, a TIME and a MSG transition in
 * deferred choice. Valid: no ERROR finding. In a. */
Workflow__V1__Definition *fuzz_seed_definition(wf_arena *a);

/* One seed request: the method it is for and the file name stem. */
typedef struct fuzz_seed {
    const char *method;
    const char *name;
    ProtobufCMessage *msg;
} fuzz_seed;

/* The seed requests (several routes, unary and streams), in a. */
const fuzz_seed *fuzz_seed_requests(wf_arena *a, size_t *n);

/* Net JSON documents for fuzz_definition (NULL-terminated): the seed net
 * in canonical form plus variants with expressions and a USERS join. */
extern const char *const fuzz_seed_net_json[];

/* The variables the definition harness starts cases with. */
#define FUZZ_START_VARS                                                                            \
    "{\"amount\":150,\"approved\":true,\"region\":\"eu\",\"reviewers\":[\"alice\",\"bob\"],"       \
    "\"due\":\"2030-01-01T00:00:00Z\"}"

#endif /* WF_FUZZ_SEEDS_H */
