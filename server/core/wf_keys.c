/*
 * wf_keys: the API key set, behind a reader-writer lock that prefers the
 * writer (calls read it all the time; a reload must not wait for a gap),
 * the file it came from and the thread that reads that file again.
 *
 * Keys are secrets: they are scrubbed before their memory is given back,
 * and never written to a message or the log (a key's id, a hash prefix,
 * is).
 */
#include "wf_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wf_config.h"
#include "wf_id.h"
#include "wf_log.h"

/* A file larger than this is refused: a key file holds a few lines. */
#define MAX_FILE_BYTES (1024 * 1024)
/* A changed file is read a second time this much later and used only when
 * both reads agree, so that a file rewritten in place is not taken
 * half-written. */
#define SETTLE_MS 100

typedef struct api_key {
    char *key;
    char *tenant; /* NULL: the key may act in any tenant */
    char key_id[9];
} api_key;

typedef struct key_set {
    api_key *keys;
    size_t n;
} key_set;

struct wf_keys {
    pthread_rwlock_t lock; /* guards set */
    key_set set;
    /* The file (NULL for a set from the environment) and what the last
     * read found, used by the reloading thread only. */
    char *path;
    char *seen; /* the content last read (it holds keys: scrubbed when freed) */
    size_t seen_len;
    int seen_errno; /* the error the last read failed with, 0 when it did not */
    /* The watcher. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool watching;
    bool stop;
    int interval_ms;
};

static void
scrub(char *p, size_t n)
{
    volatile char *v = p;
    for (size_t i = 0; p != NULL && i < n; i++)
        v[i] = '\0';
}

static void
scrub_free(char *p, size_t n)
{
    scrub(p, n);
    free(p);
}

static void
set_free(key_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->keys[i].key != NULL)
            scrub(s->keys[i].key, strlen(s->keys[i].key));
        free(s->keys[i].key);
        free(s->keys[i].tenant);
    }
    free(s->keys);
    s->keys = NULL;
    s->n = 0;
}

/* FNV-1a, only to derive a short non-secret key id for logs. */
static void
key_id_of(const char *key, char out[9])
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        out[i] = hex[(h >> (28 - 4 * i)) & 0xf];
    out[8] = '\0';
}

/* A key a client can send as it is: printable ASCII, no blanks (HTTP trims
 * them at the ends of a header value). */
static bool
key_ok(const char *key)
{
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return false;
    return true;
}

/* What is wrong with entry [a, b) ("key" or "key=tenant"), or NULL; fills
 * *k when nothing is. The entry may hold any byte, NUL included. */
static const char *
entry_parse(const char *a, const char *b, api_key *k)
{
    const char *eq = memchr(a, '=', (size_t)(b - a));
    const char *kend = eq != NULL ? eq : b;
    if (memchr(a, '\0', (size_t)(b - a)) != NULL)
        return "must have a key of printable ASCII without spaces";
    k->key = strndup(a, (size_t)(kend - a));
    if (eq != NULL)
        k->tenant = strndup(eq + 1, (size_t)(b - eq - 1));
    if (k->key == NULL || (eq != NULL && k->tenant == NULL))
        return "could not be read: out of memory";
    key_id_of(k->key, k->key_id);
    if (k->key[0] == '\0' || (k->tenant != NULL && k->tenant[0] == '\0'))
        return "must be \"key\" or \"key=tenant\"";
    if (!key_ok(k->key))
        return "must have a key of printable ASCII without spaces";
    if (k->tenant != NULL && !wf_id_tenant_valid(k->tenant, strlen(k->tenant)))
        return "must name a tenant of 1 to 64 letters, digits, \".\", \"_\" or \"-\"";
    return NULL;
}

/* The position of entry i for messages: "entry 2", and its line in a
 * file. */
static void
entry_name(char *buf, size_t cap, const char *what, size_t i, size_t line, bool lines)
{
    if (lines)
        snprintf(buf, cap, "%s entry %zu (line %zu)", what, i, line);
    else
        snprintf(buf, cap, "%s entry %zu", what, i);
}

static bool
is_separator(char c)
{
    return c == ',' || c == '\n' || c == '\r';
}

/* Parses len bytes of text into *out: entries separated by commas or line
 * breaks, blanks around them ignored, empty ones skipped. lines: name the
 * line of a bad entry (a file). */
static bool
parse_set(const char *text, size_t len, const char *what, bool lines, key_set *out, wf_error *err)
{
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += is_separator(text[i]);
    key_set s = {calloc(cap, sizeof(api_key)), 0};
    if (s.keys == NULL)
        return wf_error_nomem(err), false;
    const char *p = text, *end = text + len;
    size_t line = 1;
    char name[96];
    while (p < end) {
        const char *e = p;
        while (e < end && !is_separator(*e))
            e++;
        const char *a = p, *b = e;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            api_key *k = &s.keys[s.n++];
            const char *bad = entry_parse(a, b, k);
            entry_name(name, sizeof name, what, s.n, line, lines);
            for (size_t j = 0; bad == NULL && j + 1 < s.n; j++)
                if (strcmp(s.keys[j].key, k->key) == 0) {
                    wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s repeats the key of entry %zu",
                                 name, j + 1);
                    set_free(&s);
                    return false;
                }
            if (bad != NULL) {
                wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s %s", name, bad);
                set_free(&s);
                return false;
            }
        }
        line += e < end && *e == '\n';
        p = e < end ? e + 1 : e;
    }
    *out = s;
    return true;
}

static wf_keys *
keys_new(void)
{
    wf_keys *k = calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&k->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    return k;
}

wf_keys *
wf_keys_from_list(const char *list, const char *what, wf_error *err)
{
    wf_keys *k = keys_new();
    if (k == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    if (!parse_set(list, strlen(list), what, false, &k->set, err)) {
        wf_keys_free(k);
        return NULL;
    }
    return k;
}

/* Reads the whole file at path into a new buffer: 0, or the errno of the
 * failure (EFBIG above MAX_FILE_BYTES, EISDIR for anything but a regular
 * file). Opened without blocking, so that a FIFO put there cannot stall the
 * reader; a regular file reads as usual. */
static int
read_whole(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno;
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EISDIR : 0;
    size_t cap = 4096, n = 0;
    char *buf = rc == 0 ? malloc(cap) : NULL;
    if (rc == 0 && buf == NULL)
        rc = ENOMEM;
    while (rc == 0) {
        if (n == cap) {
            char *bigger = cap > MAX_FILE_BYTES ? NULL : malloc(cap * 2);
            rc = cap > MAX_FILE_BYTES ? EFBIG : bigger == NULL ? ENOMEM : 0;
            if (bigger != NULL) {
                memcpy(bigger, buf, n);
                scrub_free(buf, n);
                buf = bigger;
                cap *= 2;
            }
            continue;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? errno : n > MAX_FILE_BYTES ? EFBIG : 0;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        scrub_free(buf, n);
        return rc;
    }
    *out = buf;
    *len = n;
    return 0;
}

static const char *
read_problem(int e, char *buf, size_t cap)
{
    if (e == EFBIG)
        return "it is larger than 1 MiB";
    if (e == EISDIR)
        return "it is not a regular file";
    if (strerror_r(e, buf, cap) != 0)
        snprintf(buf, cap, "error %d", e);
    return buf;
}

/* Parses a file's content into *out: its rules, and at least one key. */
static bool
parse_file(const char *text, size_t len, key_set *out, wf_error *err)
{
    if (!parse_set(text, len, "WF_API_KEYS_FILE", true, out, err))
        return false;
    if (out->n == 0) {
        set_free(out);
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_API_KEYS_FILE holds no key");
        return false;
    }
    return true;
}

wf_keys *
wf_keys_from_file(const char *path, wf_error *err)
{
    wf_keys *k = keys_new();
    if (k == NULL || (k->path = strdup(path)) == NULL) {
        wf_keys_free(k);
        wf_error_nomem(err);
        return NULL;
    }
    char why[128];
    int e = read_whole(path, &k->seen, &k->seen_len);
    if (e != 0) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_API_KEYS_FILE \"%s\" cannot be read: %s", path,
                     read_problem(e, why, sizeof why));
        wf_keys_free(k);
        return NULL;
    }
    if (!parse_file(k->seen, k->seen_len, &k->set, err)) {
        wf_keys_free(k);
        return NULL;
    }
    return k;
}

size_t
wf_keys_count(wf_keys *k)
{
    pthread_rwlock_rdlock(&k->lock);
    size_t n = k->set.n;
    pthread_rwlock_unlock(&k->lock);
    return n;
}

int
wf_secret_equal(const char *presented, size_t presented_len, const char *expected)
{
    size_t n = strlen(expected);
    unsigned char diff = (unsigned char)(presented_len != n);
    for (size_t i = 0; i < n; i++) {
        /* Read a byte of the presented key even past its end (index wraps),
         * so the loop's cost does not depend on where the keys differ. */
        unsigned char p = presented_len ? (unsigned char)presented[i % presented_len] : 0;
        diff |= (unsigned char)(p ^ (unsigned char)expected[i]);
    }
    return diff == 0;
}

bool
wf_keys_find(wf_keys *k, const char *key, size_t klen, wf_key_match *out)
{
    const api_key *match = NULL;
    pthread_rwlock_rdlock(&k->lock);
    for (size_t i = 0; i < k->set.n; i++)
        if (wf_secret_equal(key, klen, k->set.keys[i].key) && match == NULL)
            match = &k->set.keys[i];
    if (match != NULL) {
        memcpy(out->key_id, match->key_id, sizeof out->key_id);
        snprintf(out->tenant, sizeof out->tenant, "%s", match->tenant ? match->tenant : "");
    }
    pthread_rwlock_unlock(&k->lock);
    return match != NULL;
}

bool
wf_keys_holds(wf_keys *k, const wf_key_match *m)
{
    bool found = false;
    pthread_rwlock_rdlock(&k->lock);
    for (size_t i = 0; i < k->set.n && !found; i++) {
        const api_key *a = &k->set.keys[i];
        found = strcmp(a->key_id, m->key_id) == 0 &&
                strcmp(a->tenant != NULL ? a->tenant : "", m->tenant) == 0;
    }
    pthread_rwlock_unlock(&k->lock);
    return found;
}

/* Logs the ids of the set now in place (not secret), as many as fit. */
static void
log_replaced(const wf_keys *k, const key_set *s)
{
    char ids[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < s->n && used + 11 < sizeof ids; i++)
        used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%s", i ? " " : "",
                                 s->keys[i].key_id);
    WF_LOG(WF_LOG_INFO, "api_keys", "WF_API_KEYS_FILE \"%s\" changed: %zu key%s now (ids %s)",
           k->path, s->n, s->n == 1 ? "" : "s", ids);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Reads the file; false (logged once per kind of failure) when it cannot. */
static bool
reload_read(wf_keys *k, char **text, size_t *len)
{
    int e = read_whole(k->path, text, len);
    if (e != 0 && e != k->seen_errno) {
        char why[128];
        size_t n = wf_keys_count(k);
        WF_LOG(WF_LOG_WARN, "api_keys",
               "WF_API_KEYS_FILE \"%s\" cannot be read: %s; keeping the %zu key%s read before",
               k->path, read_problem(e, why, sizeof why), n, n == 1 ? "" : "s");
    }
    k->seen_errno = e;
    return e == 0;
}

/* True when text is what was read before. */
static bool
seen_before(const wf_keys *k, const char *text, size_t len)
{
    return k->seen != NULL && len == k->seen_len && memcmp(text, k->seen, len) == 0;
}

wf_keys_reload_result
wf_keys_reload(wf_keys *k)
{
    char *text = NULL, *again = NULL;
    size_t len = 0, again_len = 0;
    if (k->path == NULL || !reload_read(k, &text, &len))
        return k->path == NULL ? WF_KEYS_UNCHANGED : WF_KEYS_KEPT;
    if (seen_before(k, text, len)) {
        scrub_free(text, len);
        return WF_KEYS_UNCHANGED;
    }
    /* Changed: read once more a moment later; a writer still at work
     * leaves it for the next reload. */
    sleep_ms(SETTLE_MS);
    bool settled =
        reload_read(k, &again, &again_len) && again_len == len && memcmp(again, text, len) == 0;
    scrub_free(again, again_len);
    if (!settled) {
        scrub_free(text, len);
        return WF_KEYS_UNCHANGED;
    }
    scrub_free(k->seen, k->seen_len);
    k->seen = text;
    k->seen_len = len;
    key_set s;
    wf_error err;
    wf_error_clear(&err);
    if (!parse_file(text, len, &s, &err)) {
        size_t n = wf_keys_count(k);
        WF_LOG(WF_LOG_WARN, "api_keys",
               "the new content of WF_API_KEYS_FILE \"%s\" is refused: %s; keeping the %zu key%s "
               "read before",
               k->path, err.msg, n, n == 1 ? "" : "s");
        return WF_KEYS_KEPT;
    }
    pthread_rwlock_wrlock(&k->lock);
    key_set old = k->set;
    k->set = s;
    pthread_rwlock_unlock(&k->lock);
    set_free(&old);
    log_replaced(k, &s);
    return WF_KEYS_REPLACED;
}

static void *
watch_main(void *arg)
{
    wf_keys *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += k->interval_ms / 1000;
        until.tv_nsec += (long)(k->interval_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!k->stop && pthread_cond_timedwait(&k->cv, &k->mu, &until) != ETIMEDOUT)
            ;
        if (k->stop)
            break;
        pthread_mutex_unlock(&k->mu);
        wf_keys_reload(k);
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

bool
wf_keys_watch(wf_keys *k, int interval_ms, wf_error *err)
{
    if (k->path == NULL || k->watching)
        return true;
    k->interval_ms = interval_ms > 0 ? interval_ms : 1000;
    int rc = pthread_create(&k->thread, NULL, watch_main, k);
    if (rc != 0) {
        wf_error_set(err, WF_E_INTERNAL, "cannot start the WF_API_KEYS_FILE watcher: %s",
                     strerror(rc));
        return false;
    }
    k->watching = true;
    return true;
}

void
wf_keys_free(wf_keys *k)
{
    if (k == NULL)
        return;
    if (k->watching) {
        pthread_mutex_lock(&k->mu);
        k->stop = true;
        pthread_cond_signal(&k->cv);
        pthread_mutex_unlock(&k->mu);
        pthread_join(k->thread, NULL);
    }
    set_free(&k->set);
    scrub_free(k->seen, k->seen_len);
    free(k->path);
    pthread_rwlock_destroy(&k->lock);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}
