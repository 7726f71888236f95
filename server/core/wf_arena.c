/*
 * wf_arena: chunked bump allocator. Small requests are carved out of 8 KiB
 * (then growing) chunks; a request larger than half a chunk gets a chunk of
 * its own, so large blobs do not waste the tail of the current chunk.
 */
#include "wf_arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN ((size_t) _Alignof(max_align_t))
#define FIRST_CHUNK ((size_t)8 * 1024)
#define MAX_CHUNK ((size_t)1024 * 1024)

struct chunk {
    struct chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(max_align_t) unsigned char data[];
};

struct wf_arena {
    struct chunk *head; /* current chunk, newest first */
    size_t next_size;   /* size of the next regular chunk */
    size_t total;       /* bytes handed out */
    bool failed;        /* some allocation returned NULL (sticky) */
};

wf_arena *
wf_arena_new(void)
{
    wf_arena *a = calloc(1, sizeof *a);
    if (a != NULL)
        a->next_size = FIRST_CHUNK;
    return a;
}

void
wf_arena_free(wf_arena *a)
{
    if (a == NULL)
        return;
    struct chunk *c = a->head;
    while (c != NULL) {
        struct chunk *next = c->next;
        free(c);
        c = next;
    }
    free(a);
}

static struct chunk *
chunk_new(size_t size)
{
    struct chunk *c = malloc(sizeof *c + size);
    if (c == NULL)
        return NULL;
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

static void *
arena_alloc(wf_arena *a, size_t n)
{
    if (n == 0)
        n = 1;
    if (n > WF_ARENA_MAX_BYTES || a->total + n > WF_ARENA_MAX_BYTES)
        return NULL;
    n = (n + ALIGN - 1) & ~(ALIGN - 1);
    struct chunk *c = a->head;
    if (c != NULL && c->size - c->used >= n) {
        void *p = c->data + c->used;
        c->used += n;
        a->total += n;
        return p;
    }
    if (n > a->next_size / 2) {
        /* A dedicated chunk, linked behind the current one so the current
         * chunk's free tail stays usable. */
        struct chunk *big = chunk_new(n);
        if (big == NULL)
            return NULL;
        big->used = n;
        if (c != NULL) {
            big->next = c->next;
            c->next = big;
        } else {
            a->head = big;
        }
        a->total += n;
        return big->data;
    }
    c = chunk_new(a->next_size);
    if (c == NULL)
        return NULL;
    if (a->next_size < MAX_CHUNK)
        a->next_size *= 2;
    c->next = a->head;
    a->head = c;
    c->used = n;
    a->total += n;
    return c->data;
}

void *
wf_arena_alloc(wf_arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    if (p == NULL)
        a->failed = true;
    return p;
}

bool
wf_arena_failed(const wf_arena *a)
{
    return a->failed;
}

void *
wf_arena_calloc(wf_arena *a, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        a->failed = true;
        return NULL;
    }
    void *p = wf_arena_alloc(a, count * size);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

char *
wf_arena_strndup(wf_arena *a, const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *p = wf_arena_alloc(a, n + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *
wf_arena_strdup(wf_arena *a, const char *s)
{
    if (s == NULL)
        return NULL;
    return wf_arena_strndup(a, s, strlen(s));
}

char *
wf_arena_printf(wf_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        a->failed = true;
        return NULL;
    }
    char *p = wf_arena_alloc(a, (size_t)n + 1);
    if (p == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

size_t
wf_arena_used(const wf_arena *a)
{
    return a->total;
}
