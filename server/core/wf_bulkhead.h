/*
 * wf_bulkhead: bounded classes of expensive work, so that a few slow calls
 * cannot take the threads every other call needs.
 *
 * A class (a bulkhead) bounds how many calls do its kind of work at once:
 * diagram layouts (server/diagram), compiles of expressions no cache has
 * seen (server/expr, for DeployDefinition), and expression evaluations that
 * ran past their budget (server/expr). A call joins a class when it is
 * about to do such work (wf_bulkhead_enter) and stays in it until the call
 * ends (wf_bulkhead_call_end). Joining a full class fails at once with
 * WF_E_BULKHEAD_FULL: the caller is told to retry later instead of waiting.
 *
 * Threads. The server runs a call on one of its shared worker threads and
 * installs a hand-off for the call (wf_bulkhead_call_begin). When the call
 * joins its first class, the hand-off gives the thread's place among the
 * shared threads to a spare thread: the shared threads keep serving every
 * other call while this one does its slow work, and a thread comes back to
 * the shared ones only once its call has ended. The threads outside the
 * shared ones are bounded by the classes' limits. Outside a call (the
 * scheduler, a module's own tests) joining always succeeds and counts
 * nothing.
 *
 * Thread-safe; the call state is per thread.
 */
#ifndef WF_BULKHEAD_H
#define WF_BULKHEAD_H

#include <stdbool.h>

#include "wf_error.h"

typedef enum wf_bulkhead_class {
    WF_BULKHEAD_DIAGRAM, /* "diagram": Graphviz layouts */
    WF_BULKHEAD_COMPILE, /* "compile": expressions compiled for a definition's validation */
    WF_BULKHEAD_EXPR,    /* "expression": evaluations past their budget */
    WF_BULKHEAD_COUNT_
} wf_bulkhead_class;

/* Limits used until wf_bulkhead_configure is called. */
#define WF_BULKHEAD_DEFAULT_LIMIT 2

/* Sets the limit of every class (each at least 1). Calls already in a
 * class stay; the new limit holds for the next ones. */
void wf_bulkhead_configure(const int limits[WF_BULKHEAD_COUNT_]);

/* The class's name as sent in ErrorInfo.metadata ("bulkhead") and in the
 * metrics: "diagram", "compile", "expression". */
const char *wf_bulkhead_name(wf_bulkhead_class c);

/* The calling thread starts serving a call: hand_off(arg) (may be NULL)
 * runs when the call first joins a class, on this thread. */
void wf_bulkhead_call_begin(void (*hand_off)(void *arg), void *arg);

/* The call ends: it leaves every class it joined. */
void wf_bulkhead_call_end(void);

/* The calling thread's call joins class c (a no-op when it is in c already
 * or when the thread serves no call). WF_E_BULKHEAD_FULL when c is full,
 * with a message that names the class as `bulkhead "<name>"`. */
wf_code wf_bulkhead_enter(wf_bulkhead_class c, wf_error *err);

/* True when the calling thread's call has joined c. */
bool wf_bulkhead_joined(wf_bulkhead_class c);

/* One class's figures, for the metrics. */
typedef struct wf_bulkhead_stats {
    int limit;
    int active;                 /* calls in the class now */
    unsigned long long joined;  /* calls that joined it so far */
    unsigned long long refused; /* calls refused because it was full */
} wf_bulkhead_stats;

void wf_bulkhead_get_stats(wf_bulkhead_class c, wf_bulkhead_stats *out);

#endif /* WF_BULKHEAD_H */
