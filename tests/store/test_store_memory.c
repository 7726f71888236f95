/*
 * test_store_memory.c: the store contract suite on the memory store.
 * Always runs (no external dependency), so "ran no test" never happens.
 */
#include "store_test.h"

#include <stdlib.h>

static wf_store *
mem_open(int pool_size)
{
    (void)pool_size;
    wf_error err = {0};
    wf_store *st = wf_store_memory_new(&err);
    ck_assert_msg(st != NULL, "memory store: %s", err.msg);
    return st;
}

static void
mem_close(wf_store *st)
{
    wf_store_free(st);
}

static const store_factory memory_factory = {"memory", mem_open, mem_close};

int
main(void)
{
    contract_factory = &memory_factory;
    return store_run_suite(store_contract_suite("store_memory"));
}
