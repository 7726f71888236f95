/*
 * diagram_cache: laid-out diagrams of definition versions, kept so that
 * Graphviz lays a version out once, whoever asks and however often.
 *
 * The key is the layout DOT itself (diagram_int.h): a version's DOT never
 * changes, and two requests that would lay out the same text share one
 * layout, whatever the tenant, since each only ever gets the SVG of a
 * text it made itself. Entries are looked up by hash, then compared in
 * full. The cache holds at most its byte bound (WF_DIAGRAM_CACHE_BYTES:
 * the DOT, the SVG and the index of each entry) and evicts the least
 * recently used first; a layout larger than the whole bound is served and
 * not kept. A layout is shared by reference: eviction only drops the
 * cache's, a reader keeps its own until it has drawn.
 */
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "diagram_int.h"

static struct {
    pthread_mutex_t mu;
    wf_diagram_layout *head, *tail; /* most recently used first */
    size_t entries, bytes, cap;
    unsigned long long hits, misses, layouts;
} cache = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cap = WF_DIAGRAM_CACHE_DEFAULT_BYTES,
};

uint64_t
wf_diagram__hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

wf_diagram_layout *
wf_diagram__layout_new(const char *dot, uint64_t hash, const char *svg, size_t svg_len,
                       size_t nnodes)
{
    wf_diagram_layout *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    size_t dot_len = strlen(dot);
    l->dot = malloc(dot_len + 1);
    l->svg = malloc(svg_len + 1);
    l->nodes = calloc(nnodes + 1, sizeof *l->nodes);
    if (l->dot == NULL || l->svg == NULL || l->nodes == NULL) {
        free(l->dot);
        free(l->svg);
        free(l->nodes);
        free(l);
        return NULL;
    }
    memcpy(l->dot, dot, dot_len + 1);
    memcpy(l->svg, svg, svg_len);
    l->svg[svg_len] = '\0';
    l->svg_len = svg_len;
    l->hash = hash;
    l->nnodes = nnodes;
    l->bytes = sizeof *l + dot_len + svg_len + (nnodes + 1) * sizeof *l->nodes;
    atomic_init(&l->refs, 1);
    wf_diagram__index(l);
    return l;
}

void
wf_diagram__layout_ref(wf_diagram_layout *l)
{
    atomic_fetch_add(&l->refs, 1);
}

void
wf_diagram__layout_unref(wf_diagram_layout *l)
{
    if (l == NULL || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    free(l->dot);
    free(l->svg);
    free(l->nodes);
    free(l);
}

static void
unlink_locked(wf_diagram_layout *l)
{
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        cache.head = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    else
        cache.tail = l->prev;
    l->prev = l->next = NULL;
    cache.entries--;
    cache.bytes -= l->bytes;
}

static void
push_front_locked(wf_diagram_layout *l)
{
    l->prev = NULL;
    l->next = cache.head;
    if (cache.head != NULL)
        cache.head->prev = l;
    cache.head = l;
    if (cache.tail == NULL)
        cache.tail = l;
    cache.entries++;
    cache.bytes += l->bytes;
}

static wf_diagram_layout *
find_locked(const char *dot, uint64_t hash)
{
    for (wf_diagram_layout *l = cache.head; l != NULL; l = l->next)
        if (l->hash == hash && strcmp(l->dot, dot) == 0)
            return l;
    return NULL;
}

wf_diagram_layout *
wf_diagram__cache_get(const char *dot, uint64_t hash, bool count)
{
    pthread_mutex_lock(&cache.mu);
    wf_diagram_layout *l = find_locked(dot, hash);
    if (l != NULL) {
        unlink_locked(l);
        push_front_locked(l);
        wf_diagram__layout_ref(l);
    }
    if (count && l != NULL)
        cache.hits++;
    else if (count)
        cache.misses++;
    pthread_mutex_unlock(&cache.mu);
    return l;
}

/* Drops least recently used entries until need more bytes fit (under
 * the lock); the dropped ones go to *gone for unref outside it. */
static void
evict_locked(size_t need, wf_diagram_layout **gone)
{
    while (cache.tail != NULL && cache.bytes + need > cache.cap) {
        wf_diagram_layout *l = cache.tail;
        unlink_locked(l);
        l->next = *gone;
        *gone = l;
    }
}

static void
unref_all(wf_diagram_layout *gone)
{
    while (gone != NULL) {
        wf_diagram_layout *next = gone->next;
        wf_diagram__layout_unref(gone);
        gone = next;
    }
}

void
wf_diagram__cache_put(wf_diagram_layout *l)
{
    wf_diagram_layout *gone = NULL;
    pthread_mutex_lock(&cache.mu);
    if (l->bytes <= cache.cap && find_locked(l->dot, l->hash) == NULL) {
        evict_locked(l->bytes, &gone);
        wf_diagram__layout_ref(l);
        push_front_locked(l);
    }
    pthread_mutex_unlock(&cache.mu);
    unref_all(gone);
}

void
wf_diagram__count_layout(void)
{
    pthread_mutex_lock(&cache.mu);
    cache.layouts++;
    pthread_mutex_unlock(&cache.mu);
}

void
wf_diagram_configure(size_t cache_bytes)
{
    wf_diagram_layout *gone = NULL;
    pthread_mutex_lock(&cache.mu);
    cache.cap = cache_bytes;
    evict_locked(0, &gone);
    pthread_mutex_unlock(&cache.mu);
    unref_all(gone);
}

void
wf_diagram_cache_clear(void)
{
    wf_diagram_layout *gone = NULL;
    pthread_mutex_lock(&cache.mu);
    size_t cap = cache.cap;
    cache.cap = 0;
    evict_locked(0, &gone);
    cache.cap = cap;
    pthread_mutex_unlock(&cache.mu);
    unref_all(gone);
}

void
wf_diagram_get_stats(wf_diagram_stats *out)
{
    pthread_mutex_lock(&cache.mu);
    out->entries = cache.entries;
    out->bytes = cache.bytes;
    out->cap = cache.cap;
    out->hits = cache.hits;
    out->misses = cache.misses;
    out->layouts = cache.layouts;
    pthread_mutex_unlock(&cache.mu);
}
