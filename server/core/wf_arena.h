/*
 * wf_arena: a bump allocator for request-scoped memory.
 *
 * Each RPC owns one arena. Everything that lives only as long as the call
 * (the unpacked request, response messages, copied metadata, JSON scratch)
 * is allocated from it and released at once by wf_arena_free(). Nothing
 * allocated from an arena is ever freed on its own.
 *
 * Not thread-safe: an arena belongs to one call, handled by one thread.
 */
#ifndef WF_ARENA_H
#define WF_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct wf_arena wf_arena;

/* Creates an empty arena; NULL when out of memory. */
wf_arena *wf_arena_new(void);

/* Frees the arena and everything allocated from it. NULL-safe. */
void wf_arena_free(wf_arena *a);

/* Returns n bytes aligned for any type, or NULL when out of memory or when
 * the arena's cap (WF_ARENA_MAX_BYTES) would be exceeded. */
void *wf_arena_alloc(wf_arena *a, size_t n);

/* Like wf_arena_alloc, zero-filled. */
void *wf_arena_calloc(wf_arena *a, size_t count, size_t size);

/* Copies a NUL-terminated string (or the first n bytes of s, for _strndup)
 * into the arena. NULL when out of memory; s == NULL gives NULL. */
char *wf_arena_strdup(wf_arena *a, const char *s);
char *wf_arena_strndup(wf_arena *a, const char *s, size_t n);

/* printf into the arena. NULL when out of memory. */
char *wf_arena_printf(wf_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True once any allocation from a has returned NULL; it stays true. A
 * builder that makes many allocations may skip the NULL checks of values it
 * only stores (the struct it fills must tolerate NULL strings until then) and
 * check this once before it uses the result.
 * Map it to wf_error_nomem(). */
bool wf_arena_failed(const wf_arena *a);

/* Bytes handed out so far (for tests and metrics). */
size_t wf_arena_used(const wf_arena *a);

/* Upper bound on what one arena may hold: a request is at most
 * WF_MAX_MESSAGE_BYTES on the wire, and its decoded form plus the response
 * stays well within this. */
#define WF_ARENA_MAX_BYTES ((size_t)256 * 1024 * 1024)

#endif /* WF_ARENA_H */
