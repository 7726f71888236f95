/*
 * defcache: content hash -> parsed net (see defcache.h).
 *
 * A small open hash table under one mutex. Each entry owns an arena with
 * the parsed net; entries live until wf_defcache_clear. Parsing happens
 * outside the lock, so two threads may parse the same content at once;
 * the first to insert wins and the other's copy is dropped.
 */
#include "defcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char hash[65];
    wf_arena *arena;
    const wf_net *net;
} entry;

#define SLOTS (WF_DEFCACHE_MAX * 2)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *slots[SLOTS];
static size_t count;

static size_t
slot_of(const char *hash)
{
    /* The hash is hex of SHA-256: its first digits are uniform. */
    size_t h = 0;
    for (int i = 0; i < 12 && hash[i] != '\0'; i++)
        h = h * 16 + (size_t)(hash[i] <= '9' ? hash[i] - '0' : (hash[i] | 0x20) - 'a' + 10);
    return h % SLOTS;
}

/* Slot holding hash, or the empty slot where it would go. Caller holds mu. */
static size_t
find(const char *hash)
{
    size_t i = slot_of(hash);
    while (slots[i] != NULL && strcmp(slots[i]->hash, hash) != 0)
        i = (i + 1) % SLOTS;
    return i;
}

static const wf_net *
lookup(const char *hash)
{
    pthread_mutex_lock(&mu);
    entry *e = slots[find(hash)];
    const wf_net *net = e != NULL ? e->net : NULL;
    pthread_mutex_unlock(&mu);
    return net;
}

/* Parses content into a fresh entry and inserts it; returns the cached net
 * (the winner's, when another thread inserted first), or NULL with *full
 * when the cache is full. */
static wf_code
insert(const char *hash, const char *json, const wf_net **out, bool *full, wf_error *err)
{
    entry *e = calloc(1, sizeof *e);
    wf_arena *a = wf_arena_new();
    wf_net *net = NULL;
    *full = false;
    if (e == NULL || a == NULL) {
        free(e);
        wf_arena_free(a);
        return wf_error_nomem(err);
    }
    wf_code rc = wf_net_from_json(json, a, &net, err);
    if (rc != WF_OK) {
        free(e);
        wf_arena_free(a);
        return rc;
    }
    memcpy(e->hash, hash, 64);
    e->hash[64] = '\0';
    e->arena = a;
    e->net = net;
    pthread_mutex_lock(&mu);
    size_t i = find(hash);
    if (slots[i] != NULL) {
        *out = slots[i]->net;
    } else if (count >= WF_DEFCACHE_MAX) {
        *full = true;
    } else {
        slots[i] = e;
        count++;
        e = NULL;
        *out = net;
    }
    pthread_mutex_unlock(&mu);
    if (e != NULL) {
        wf_arena_free(e->arena);
        free(e);
    }
    return WF_OK;
}

static bool
valid_hash(const char *h)
{
    if (h == NULL || strlen(h) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return false;
    return true;
}

wf_code
wf_defcache_net(const wf_definition_row *row, wf_arena *arena, const wf_net **out, wf_error *err)
{
    wf_net *copy = wf_arena_alloc(arena, sizeof *copy);
    if (copy == NULL)
        return wf_error_nomem(err);
    if (row->content == NULL || row->content_len == 0) {
        /* An AD_HOC definition made by StartInstance: no content. */
        *copy = (wf_net){.key = row->key, .name = row->name};
    } else {
        const wf_net *net = NULL;
        char *json = wf_arena_strndup(arena, (const char *)row->content, row->content_len);
        if (json == NULL)
            return wf_error_nomem(err);
        bool cacheable = valid_hash(row->content_hash);
        if (cacheable)
            net = lookup(row->content_hash);
        if (net == NULL && cacheable) {
            bool full;
            wf_code rc = insert(row->content_hash, json, &net, &full, err);
            if (rc != WF_OK)
                return rc;
        }
        if (net == NULL) {
            wf_net *parsed;
            wf_code rc = wf_net_from_json(json, arena, &parsed, err);
            if (rc != WF_OK)
                return rc;
            net = parsed;
        }
        *copy = *net;
    }
    copy->version = row->version;
    *out = copy;
    return WF_OK;
}

size_t
wf_defcache_size(void)
{
    pthread_mutex_lock(&mu);
    size_t n = count;
    pthread_mutex_unlock(&mu);
    return n;
}

void
wf_defcache_clear(void)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < SLOTS; i++) {
        if (slots[i] != NULL) {
            wf_arena_free(slots[i]->arena);
            free(slots[i]);
            slots[i] = NULL;
        }
    }
    count = 0;
    pthread_mutex_unlock(&mu);
}
