/*
 * diagram_render: DOT text → SVG through Graphviz's libgvc, in process, on
 * a thread of its own.
 *
 * Owns the one Graphviz context of the process and the render thread that
 * alone uses it: libgvc and cgraph keep global state (the error sink, the
 * attribute dictionaries of the root graph), so one layout runs at a time,
 * from parsing to freeing. The context is made on first use with no
 * built-in plugins and no demand loading, then the two plugin libraries it
 * needs, linked at build time, are added: the dot layout and the core
 * renderers (svg). So nothing is read from Graphviz's configuration file,
 * which a server image need not have.
 *
 * Callers queue a job and wait for it at most until their deadline; a job
 * whose text is queued or being laid out already is shared (one layout
 * for every caller of a version). A caller that gives up leaves a started
 * layout to finish, and its result still reaches the cache. The thread
 * runs at a lower CPU priority (nice 10) than the server's threads, so
 * that a layout competes with cheap calls for CPU as little as it can, and
 * hands the memory of a layout back to the system when done. It lives as
 * long as the process.
 *
 * Must not: hold anything but its own lock while it runs (the caller has
 * finished its reads), or write on stderr (Graphviz's messages are kept
 * for the error of the call).
 */
#define _GNU_SOURCE /* gettid */

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <gvc.h>
#include <gvplugin.h>

#include "diagram_int.h"
#include "wf_time.h"

/* The plugin libraries' descriptors, exported by libgvplugin_dot_layout
 * and libgvplugin_core. */
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;

/* Graphviz's state: the render thread's only. */
static GVC_t *gv_context;    /* made once, kept for the process */
static char gv_message[256]; /* Graphviz's first message of the current layout */

/* Graphviz's error sink: keeps the first message of a layout. */
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

/* The context, made on first use. */
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

/* Lays dot out and renders it: *out (malloc'ed, *len bytes) or err. */
static wf_code
render(const char *dot, char **out, size_t *len, wf_error *err)
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
        *out = malloc((size_t)n + 1);
        if (*out == NULL) {
            rc = wf_error_nomem(err);
        } else {
            memcpy(*out, svg, n);
            (*out)[n] = '\0';
            *len = n;
        }
    }
    if (svg != NULL)
        gvFreeRenderData(svg);
    gvFreeLayout(gvc, g);
    agclose(g);
    return rc;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

/* A DOT text to lay out, and the callers waiting for it. */
typedef struct job {
    char *dot;
    uint64_t hash;
    size_t nnodes; /* markers to index */
    bool cached;   /* looked up in and added to the cache */
    int refs;      /* waiting callers, plus one while queued or laid out */
    bool done;
    wf_diagram_layout *out; /* done: the layout, or NULL with err */
    wf_error err;
    struct job *next;
} job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was queued */
    pthread_cond_t done; /* a job is done */
    job *head, *tail;    /* queued, oldest first */
    job *current;        /* being laid out */
    bool started;
} rq = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static void
job_free(job *j)
{
    wf_diagram__layout_unref(j->out);
    free(j->dot);
    free(j);
}

/* Drops one reference to j (under rq.mu); frees it on the last. */
static void
job_unref_locked(job *j)
{
    if (--j->refs == 0)
        job_free(j);
}

/* Lays out j's text (or finds it in the cache) into a layout. */
static void
run_job(job *j, wf_diagram_layout **out, wf_error *err)
{
    *out = j->cached ? wf_diagram__cache_get(j->dot, j->hash, false) : NULL;
    if (*out != NULL)
        return;
    char *svg = NULL;
    size_t len = 0;
    if (render(j->dot, &svg, &len, err) != WF_OK)
        return;
    wf_diagram__count_layout();
    *out = wf_diagram__layout_new(j->dot, j->hash, svg, len, j->nnodes);
    free(svg);
    if (*out == NULL)
        wf_error_nomem(err);
    else if (j->cached)
        wf_diagram__cache_put(*out);
    /* Graphviz's memory back to the system: a layout can take a hundred
     * megabytes that would stay with this thread otherwise. */
    malloc_trim(0);
}

static void *
render_main(void *arg)
{
    (void)arg;
    /* Behind the server's threads for CPU (raising one's own niceness
     * needs no privilege; on Linux it holds for this thread only). */
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), 10) != 0) {
        /* best effort: the layout runs at the usual priority */
    }
    pthread_mutex_lock(&rq.mu);
    for (;;) {
        while (rq.head == NULL)
            pthread_cond_wait(&rq.work, &rq.mu);
        job *j = rq.head;
        rq.head = j->next;
        if (rq.head == NULL)
            rq.tail = NULL;
        rq.current = j;
        pthread_mutex_unlock(&rq.mu);
        wf_diagram_layout *out = NULL;
        wf_error err;
        wf_error_clear(&err);
        run_job(j, &out, &err);
        pthread_mutex_lock(&rq.mu);
        rq.current = NULL;
        j->out = out;
        j->err = err;
        j->done = true;
        pthread_cond_broadcast(&rq.done);
        job_unref_locked(j);
    }
    return NULL;
}

/* The job of dot already queued or being laid out, or NULL (under rq.mu). */
static job *
find_job_locked(const char *dot, uint64_t hash, bool cached)
{
    if (rq.current != NULL && rq.current->hash == hash && rq.current->cached == cached &&
        strcmp(rq.current->dot, dot) == 0)
        return rq.current;
    for (job *j = rq.head; j != NULL; j = j->next)
        if (j->hash == hash && j->cached == cached && strcmp(j->dot, dot) == 0)
            return j;
    return NULL;
}

/* Queues a job for dot, or joins the one of the same text; a reference
 * for the caller. NULL when out of memory or without a render thread. */
static job *
submit(const char *dot, size_t nnodes, bool cached, wf_error *err)
{
    uint64_t hash = wf_diagram__hash(dot);
    pthread_mutex_lock(&rq.mu);
    if (!rq.started) {
        pthread_t th;
        if (pthread_create(&th, NULL, render_main, NULL) != 0) {
            pthread_mutex_unlock(&rq.mu);
            wf_error_set(err, WF_E_INTERNAL, "diagram: the render thread did not start");
            return NULL;
        }
        pthread_detach(th);
        rq.started = true;
    }
    job *j = find_job_locked(dot, hash, cached);
    if (j == NULL) {
        j = calloc(1, sizeof *j);
        if (j == NULL || (j->dot = strdup(dot)) == NULL) {
            free(j);
            pthread_mutex_unlock(&rq.mu);
            wf_error_nomem(err);
            return NULL;
        }
        j->hash = hash;
        j->nnodes = nnodes;
        j->cached = cached;
        j->refs = 1; /* the queue's */
        if (rq.tail != NULL)
            rq.tail->next = j;
        else
            rq.head = j;
        rq.tail = j;
        pthread_cond_signal(&rq.work);
    }
    j->refs++;
    pthread_mutex_unlock(&rq.mu);
    return j;
}

/* Takes j out of the queue (under rq.mu) when it is still there. */
static void
dequeue_locked(job *j)
{
    job **p = &rq.head;
    while (*p != NULL && *p != j)
        p = &(*p)->next;
    if (*p == NULL)
        return;
    *p = j->next;
    if (rq.tail == j) {
        rq.tail = rq.head;
        while (rq.tail != NULL && rq.tail->next != NULL)
            rq.tail = rq.tail->next;
    }
    job_unref_locked(j); /* the queue's */
}

/* Waits for j until deadline_ms; its layout (a new reference) or err.
 * Drops the caller's reference either way. */
static wf_code
await(job *j, int64_t deadline_ms, wf_diagram_layout **out, wf_error *err)
{
    pthread_mutex_lock(&rq.mu);
    while (!j->done) {
        if (deadline_ms == 0) {
            pthread_cond_wait(&rq.done, &rq.mu);
            continue;
        }
        int64_t left = deadline_ms - wf_mono_ms();
        if (left <= 0)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(left / 1000);
        until.tv_nsec += (long)(left % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&rq.done, &rq.mu, &until);
    }
    wf_code rc;
    if (!j->done) {
        rc = wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                          "the deadline passed while other diagrams were laid out");
        if (j->refs == 2 && rq.current != j)
            dequeue_locked(j); /* nobody else waits for it: it need not run */
    } else if (j->out == NULL) {
        rc = j->err.code != WF_OK ? j->err.code : WF_E_INTERNAL;
        wf_error_set(err, rc, "%s", j->err.msg);
    } else {
        wf_diagram__layout_ref(j->out);
        *out = j->out;
        rc = WF_OK;
    }
    job_unref_locked(j);
    pthread_mutex_unlock(&rq.mu);
    return rc;
}

wf_code
wf_diagram__layout(const char *dot, size_t nnodes, int64_t deadline_ms, wf_diagram_layout **out,
                   wf_error *err)
{
    *out = wf_diagram__cache_get(dot, wf_diagram__hash(dot), false);
    if (*out != NULL)
        return WF_OK;
    job *j = submit(dot, nnodes, true, err);
    if (j == NULL)
        return err->code;
    return await(j, deadline_ms, out, err);
}

wf_code
wf_diagram_svg(const char *dot, int64_t deadline_ms, wf_arena *a, char **out, size_t *len,
               wf_error *err)
{
    job *j = submit(dot, 0, false, err);
    if (j == NULL)
        return err->code;
    wf_diagram_layout *l = NULL;
    wf_code rc = await(j, deadline_ms, &l, err);
    if (rc != WF_OK)
        return rc;
    *out = wf_arena_strndup(a, l->svg, l->svg_len);
    *len = l->svg_len;
    wf_diagram__layout_unref(l);
    return *out != NULL ? WF_OK : wf_error_nomem(err);
}
