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

#include "store.h"

typedef struct store_factory {
    const char *name;
    /* A fresh, empty store with pool_size connections (ignored by the
     * memory store); aborts the test on failure. */
    wf_store *(*open)(int pool_size);
    /* Frees the store and whatever open created for it. */
    void (*close)(wf_store *st);
} store_factory;

extern const store_factory *contract_factory;

/* The contract cases, run against contract_factory. */
Suite *store_contract_suite(const char *name);

/* Runs a suite in fork mode and returns the process exit status. */
int store_run_suite(Suite *s);

#endif /* WF_STORE_TEST_H */
