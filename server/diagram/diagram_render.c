/*
 * diagram_render: DOT text → SVG through Graphviz's libgvc, in process.
 *
 * Owns the one Graphviz context of the process and the mutex around it:
 * libgvc and cgraph keep global state (the error sink, the attribute
 * dictionaries of the root graph), so every call, from parsing to freeing
 * the layout, runs under the lock. The context is made on first use with
 * no built-in plugins and no demand loading, then the two plugin libraries
 * it needs, linked at build time, are added: the dot layout and the core
 * renderers (svg). So nothing is read from Graphviz's configuration file,
 * which a server image need not have.
 *
 * A call waits for the lock at most until its deadline, so that diagrams
 * queued behind a slow layout give their server threads back instead of
 * piling up on it.
 *
 * Must not: hold anything but its own lock while it runs (the caller has
 * finished its reads), or write on stderr (Graphviz's messages are kept
 * for the error of the call).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <gvc.h>
#include <gvplugin.h>

#include "diagram.h"
#include "wf_time.h"

/* The plugin libraries' descriptors, exported by libgvplugin_dot_layout
 * and libgvplugin_core. */
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *gv_context;    /* under gv_lock; made once, kept for the process */
static char gv_message[256]; /* under gv_lock: Graphviz's last message of the call */

/* Graphviz's error sink (under gv_lock): keeps the first message of a call. */
static int
gv_sink(char *msg)
{
    if (gv_message[0] == '\0' && msg != NULL) {
        snprintf(gv_message, sizeof gv_message, "%s", msg);
        size_t n = strlen(gv_message);
        while (n > 0 && (gv_message[n - 1] == '\n' || gv_message[n - 1] == ' '))
            gv_message[--n] = '\0';
    }
    return 0;
}

/* The context (under gv_lock), made on first use. */
static GVC_t *
context(void)
{
    static const lt_symlist_t no_builtins[] = {{NULL, NULL}};
    if (gv_context != NULL)
        return gv_context;
    agseterrf(gv_sink);
    gv_context = gvContextPlugins(no_builtins, 0);
    if (gv_context == NULL)
        return NULL;
    gvAddLibrary(gv_context, &gvplugin_dot_layout_LTX_library);
    gvAddLibrary(gv_context, &gvplugin_core_LTX_library);
    return gv_context;
}

static wf_code
render_locked(const char *dot, wf_arena *a, char **out, size_t *len, wf_error *err)
{
    GVC_t *gvc = context();
    if (gvc == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "diagram: Graphviz did not start");
    gv_message[0] = '\0';
    agreseterrors();
    Agraph_t *g = agmemread(dot);
    if (g == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "diagram: Graphviz refused the DOT text: %s",
                            gv_message[0] != '\0' ? gv_message : "syntax error");
    wf_code rc = WF_OK;
    if (gvLayout(gvc, g, "dot") != 0) {
        rc = wf_error_set(err, WF_E_INTERNAL, "diagram: the layout failed: %s",
                          gv_message[0] != '\0' ? gv_message : "no detail");
        agclose(g);
        return rc;
    }
    char *svg = NULL;
    unsigned int n = 0;
    if (gvRenderData(gvc, g, "svg", &svg, &n) != 0 || svg == NULL) {
        rc = wf_error_set(err, WF_E_INTERNAL, "diagram: SVG rendering failed: %s",
                          gv_message[0] != '\0' ? gv_message : "no detail");
    } else {
        *out = wf_arena_strndup(a, svg, n);
        *len = n;
        if (*out == NULL)
            rc = wf_error_nomem(err);
    }
    if (svg != NULL)
        gvFreeRenderData(svg);
    gvFreeLayout(gvc, g);
    agclose(g);
    return rc;
}

/* Takes gv_lock, waiting at most until deadline_ms (monotonic ms, 0 =
 * without bound). */
static wf_code
lock_until(int64_t deadline_ms, wf_error *err)
{
    if (deadline_ms == 0) {
        pthread_mutex_lock(&gv_lock);
        return WF_OK;
    }
    int64_t left = deadline_ms - wf_mono_ms();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (left > 0) {
        until.tv_sec += (time_t)(left / 1000);
        until.tv_nsec += (long)(left % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    if (pthread_mutex_timedlock(&gv_lock, &until) == 0)
        return WF_OK;
    return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                        "the deadline passed while other diagrams were laid out");
}

wf_code
wf_diagram_svg(const char *dot, int64_t deadline_ms, wf_arena *a, char **out, size_t *len,
               wf_error *err)
{
    wf_code rc = lock_until(deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = render_locked(dot, a, out, len, err);
    pthread_mutex_unlock(&gv_lock);
    return rc;
}
