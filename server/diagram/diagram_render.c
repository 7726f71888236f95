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
 * Must not: hold anything but its own lock while it runs (the caller has
 * finished its reads), or write on stderr (Graphviz's messages are kept
 * for the error of the call).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <gvc.h>
#include <gvplugin.h>

#include "diagram.h"

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

wf_code
wf_diagram_svg(const char *dot, wf_arena *a, char **out, size_t *len, wf_error *err)
{
    pthread_mutex_lock(&gv_lock);
    wf_code rc = render_locked(dot, a, out, len, err);
    pthread_mutex_unlock(&gv_lock);
    return rc;
}
