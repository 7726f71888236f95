/*
 * wf_explain: what a running instance waits for, in one line, read from
 * its GetInstance answer. The one explanation that `wfctl show` prints and
 * the console's instance page shows at its top.
 */
#ifndef WF_EXPLAIN_H
#define WF_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "workflow/v1/workflow.pb-c.h"

/* True while the instance can wait for something: RUNNING or COMPENSATING. */
bool wf_explain_is_waiting(const Workflow__V1__Instance *in);

/* Writes into buf (size bytes, always terminated; a longer text is cut)
 * what r's instance waits for: its open tasks counted, each job by type,
 * each timer by due time (UTC), each awaited signal by name and the
 * running referrals counted, e.g. "1 task, job charge, signal paid".
 * Empty when it waits for none of these. Returns buf. */
char *wf_explain_waiting(const Workflow__V1__GetInstanceResponse *r, char *buf, size_t size);

#endif /* WF_EXPLAIN_H */
