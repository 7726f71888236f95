/*
 * store_test.h: the store contract suite, parametrised by a factory.
 *
 * test_store_contract.c holds ONE list of cases; test_store_memory.c runs
 * it on the memory store and test_store_pg.c on Postgres (plus its own
 * Postgres-only cases). Check runs each case in a forked child, so the
 * factory is a process-wide pointer set by main() before srunner_run.
 */
#ifndef WF_STORE_TEST_H
#define WF_STORE_TEST_H

#include <check.h>
#include <pthread.h>

#include "store.h"
#include "test_list.h"

typedef struct store_factory {
    const char *name;
    /* A fresh, empty store with pool_size connections (ignored by the
     * memory store); aborts the test on failure. */
    wf_store *(*open)(int pool_size);
    /* Frees the store and whatever open created for it. */
    void (*close)(wf_store *st);
} store_factory;

extern const store_factory *contract_factory;

/* A listener callback that records what it hears (thread-safe). Keep it
 * in static storage: the store may call it until wf_store_free. */
#define NOTES_MAX 512
typedef struct notes {
    pthread_mutex_t mu;
    int n; /* recorded so far (at most NOTES_MAX are kept) */
    struct {
        char channel[32];
        char payload[64];
    } v[NOTES_MAX];
} notes;

void notes_init(notes *nt);
/* wf_store_listen_fn: arg is a notes. */
void notes_fn(void *arg, const char *channel, const char *payload);
int notes_count(notes *nt);
/* Index of the first note at or after from matching (channel, payload),
 * waiting up to timeout_ms for it; -1 when none came. */
int notes_wait(notes *nt, int from, const char *channel, const char *payload, int timeout_ms);
/* Index of the first matching note in [from, to), without waiting; -1. */
int notes_find(notes *nt, int from, int to, const char *channel, const char *payload);

/* The contract cases, run against contract_factory. */
Suite *store_contract_suite(const char *name);

/* Runs a suite in fork mode and returns the process exit status. */
int store_run_suite(Suite *s);

#endif /* WF_STORE_TEST_H */
