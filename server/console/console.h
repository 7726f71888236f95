/*
 * console: the web console, server-rendered HTML over the same handler
 * functions the gRPC routes call (handlers/routes.c), served by wf_http on
 * WF_CONSOLE_ADDR on threads of its own (docs/console.md).
 */
#ifndef WF_CONSOLE_H
#define WF_CONSOLE_H

#include "handler.h"
#include "wf_error.h"

typedef struct wf_console wf_console;

/* Listens on addr and serves the console of app (its configuration says
 * whether keys are required). NULL and err on failure. */
wf_console *wf_console_start(wf_app *app, const char *addr, wf_error *err);

/* Ends the open event streams, stops the listener and joins its threads.
 * NULL-safe. */
void wf_console_stop(wf_console *c);

#endif /* WF_CONSOLE_H */
