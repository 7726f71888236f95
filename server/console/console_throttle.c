/*
 * console_throttle: the login's brake on guessing, per source address.
 *
 * The first FREE_FAILURES refused logins of an address cost nothing; each
 * further one bars the address from logging in for 1 s, then 2 s, 4 s, ...
 * at most MAX_WAIT_S. An address's count is forgotten WINDOW_MS after its
 * last refusal, and at a successful login. The table is fixed: when it is
 * full, an address that is not barred makes room, the one refused longest
 * ago first; barred ones go only when every slot bars, the one whose bar
 * ends first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "console_int.h"

#define SLOTS 1024
#define FREE_FAILURES 5
#define MAX_WAIT_S 60
#define WINDOW_MS (15 * 60 * 1000LL)

typedef struct slot {
    char addr[48]; /* "" = free */
    int failures;
    int64_t last_ms;  /* the last refusal */
    int64_t until_ms; /* no attempt before this */
} slot;

struct wf_console__throttle {
    pthread_mutex_t mu;
    slot slots[SLOTS];
};

wf_console__throttle *
wf_console__throttle_new(void)
{
    wf_console__throttle *t = calloc(1, sizeof *t);
    if (t != NULL)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void
wf_console__throttle_free(wf_console__throttle *t)
{
    if (t == NULL)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The live slot of addr, or NULL (a slot past its window is freed). */
static slot *
find(wf_console__throttle *t, const char *addr, int64_t now_ms)
{
    for (int i = 0; i < SLOTS; i++) {
        slot *s = &t->slots[i];
        if (s->addr[0] == '\0' || strcmp(s->addr, addr) != 0)
            continue;
        if (now_ms - s->last_ms > WINDOW_MS && now_ms >= s->until_ms) {
            memset(s, 0, sizeof *s);
            return NULL;
        }
        return s;
    }
    return NULL;
}

/* True when slot a should make room before slot b: one that bars nobody
 * before one that does, then the one refused longest ago (or, both
 * barring, the one whose bar ends first). */
static bool
evict_before(const slot *a, const slot *b, int64_t now_ms)
{
    bool abar = a->until_ms > now_ms, bbar = b->until_ms > now_ms;
    if (abar != bbar)
        return !abar;
    return abar ? a->until_ms < b->until_ms : a->last_ms < b->last_ms;
}

/* A slot for addr: a free one, else the one evict_before picks. */
static slot *
claim(wf_console__throttle *t, const char *addr, int64_t now_ms)
{
    slot *pick = &t->slots[0];
    for (int i = 0; i < SLOTS; i++) {
        slot *s = &t->slots[i];
        if (s->addr[0] == '\0') {
            pick = s;
            break;
        }
        if (evict_before(s, pick, now_ms))
            pick = s;
    }
    memset(pick, 0, sizeof *pick);
    snprintf(pick->addr, sizeof pick->addr, "%s", addr);
    return pick;
}

int
wf_console__throttle_wait(wf_console__throttle *t, const char *addr, int64_t now_ms)
{
    pthread_mutex_lock(&t->mu);
    slot *s = find(t, addr, now_ms);
    int64_t left = s != NULL ? s->until_ms - now_ms : 0;
    pthread_mutex_unlock(&t->mu);
    return left > 0 ? (int)((left + 999) / 1000) : 0;
}

int
wf_console__throttle_failed(wf_console__throttle *t, const char *addr, int64_t now_ms)
{
    pthread_mutex_lock(&t->mu);
    slot *s = find(t, addr, now_ms);
    if (s == NULL)
        s = claim(t, addr, now_ms);
    s->failures++;
    s->last_ms = now_ms;
    int over = s->failures - FREE_FAILURES;
    int wait_s = over <= 0 ? 0 : over > 6 ? MAX_WAIT_S : 1 << (over - 1);
    if (wait_s > MAX_WAIT_S)
        wait_s = MAX_WAIT_S;
    if (wait_s > 0)
        s->until_ms = now_ms + wait_s * 1000LL;
    pthread_mutex_unlock(&t->mu);
    return wait_s;
}

void
wf_console__throttle_passed(wf_console__throttle *t, const char *addr, int64_t now_ms)
{
    pthread_mutex_lock(&t->mu);
    slot *s = find(t, addr, now_ms);
    if (s != NULL)
        memset(s, 0, sizeof *s);
    pthread_mutex_unlock(&t->mu);
}
