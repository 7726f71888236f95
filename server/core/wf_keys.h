/*
 * wf_keys: the API keys a call may present, from WF_API_KEYS or from the
 * file WF_API_KEYS_FILE names.
 *
 * Both hold "key" or "key=tenant" entries separated by commas or line
 * breaks, with the same rules: a key is printable ASCII without spaces and
 * appears once, a tenant is a valid tenant id. A set read from a file is
 * replaced as a whole when the file's content changes (wf_keys_reload, run
 * every second by wf_keys_watch): a call sees the old set or the new one,
 * never a mix. A content that breaks a rule, or holds no key, leaves the
 * set as it was, and the refusal is logged once, naming the entry, never
 * a key.
 *
 * The file is opened by its path at every read, so a file replaced by a
 * rename or by a symbolic link swapped over it (Kubernetes' Secret
 * volumes swap the link "..data") is read whole, never half of each.
 */
#ifndef WF_KEYS_H
#define WF_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "wf_error.h"

typedef struct wf_keys wf_keys;

/* What a presented key matched, copied out: it stays valid when the set
 * is replaced. */
typedef struct wf_key_match {
    char key_id[9];  /* first 8 hex digits of a hash of the key: loggable, not secret */
    char tenant[65]; /* the tenant the key is bound to; "" when it may act in any */
} wf_key_match;

/* The keys of list; what names the setting in messages ("WF_API_KEYS").
 * An empty list gives an empty set. NULL and err when an entry breaks a
 * rule (the message names the entry, never the key). */
wf_keys *wf_keys_from_list(const char *list, const char *what, wf_error *err);

/* The keys of the file at path, which wf_keys_reload reads again. NULL and
 * err when it cannot be read, breaks a rule or holds no key. */
wf_keys *wf_keys_from_file(const char *path, wf_error *err);

/* Keys in the set now. */
size_t wf_keys_count(wf_keys *k);

/* The key equal to the presented one (klen bytes, which may hold NULs):
 * true and *out filled, or false. Every key is compared, without early
 * exit, in constant time each. */
bool wf_keys_find(wf_keys *k, const char *key, size_t klen, wf_key_match *out);

/* True while the set still holds a key with m's id and tenant: a console
 * session opened with a key ends when the key is removed. */
bool wf_keys_holds(wf_keys *k, const wf_key_match *m);

typedef enum wf_keys_reload_result {
    WF_KEYS_UNCHANGED, /* from the environment, or the file's content is what was read before */
    WF_KEYS_REPLACED,  /* the file's new content is the set now */
    WF_KEYS_KEPT,      /* the file cannot be read, breaks a rule or holds no key: logged,
                          the set is unchanged */
} wf_keys_reload_result;

/* Reads the file again and replaces the set when its content changed and
 * is valid. One caller at a time (the watcher, or a test). */
wf_keys_reload_result wf_keys_reload(wf_keys *k);

/* Starts a thread that runs wf_keys_reload every interval_ms; nothing for
 * a set from the environment. wf_keys_free stops it. False and err when
 * the thread cannot start. */
bool wf_keys_watch(wf_keys *k, int interval_ms, wf_error *err);

/* Stops the watcher, scrubs the keys and frees the set. NULL-safe. */
void wf_keys_free(wf_keys *k);

#endif /* WF_KEYS_H */
