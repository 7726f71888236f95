/*
 * defcache: parsed NET definitions, shared between calls.
 *
 * A definition version is immutable, and its stored content is the
 * canonical JSON of its net (net.h), identified by the SHA-256 content
 * hash. The cache maps that hash to the wf_net parsed from the content, so
 * a unit of work that has read a definition row parses it once per process
 * instead of once per call. Keying by the content hash (not by key and
 * version) keeps the cache correct with any number of stores in one
 * process (tests) and needs no invalidation.
 *
 * Entries are never freed while the process runs (nets handed out stay
 * valid for ever); the cache holds at most WF_DEFCACHE_MAX entries, and
 * beyond that a net is parsed into the caller's arena instead.
 * Thread-safe.
 */
#ifndef WF_DEFCACHE_H
#define WF_DEFCACHE_H

#include <stddef.h>

#include "net.h"
#include "store.h"

#define WF_DEFCACHE_MAX 1024

/* The net of a definition row (kind NET or AD_HOC). Rows written by the
 * net runtime carry canonical JSON and its hash: the cached net is
 * returned (parsed on first use). A row without content (an AD_HOC
 * definition created by StartInstance) gives a net with only key and
 * name, in arena. version is set from the row on the copy handed out, so
 * the result lives in arena (a shallow copy; arrays are shared). */
wf_code wf_defcache_net(const wf_definition_row *row, wf_arena *arena, const wf_net **out,
                        wf_error *err);

/* Number of cached nets; emptying (tests only: no net handed out may be
 * in use). */
size_t wf_defcache_size(void);
void wf_defcache_clear(void);

#endif /* WF_DEFCACHE_H */
