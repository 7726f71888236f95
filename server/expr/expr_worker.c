/*
 * expr_worker: expressions evaluated in worker processes (expr.h, "Bounds").
 *
 * The pool. Workers are started lazily with posix_spawn of /proc/self/exe
 * (the running binary, whatever its path) and WF_EXPR_WORKER_ARG, reused by
 * one caller at a time, and replaced after recycle_after evaluations, which
 * also bounds libjq's own leaks. A worker that does a bulkhead's work (a
 * check, an evaluation past its budget) runs at nice 10 from then on and is
 * kept for such work (see "The budget" below). Callers never share a worker, so any number
 * of threads evaluate at once, up to `workers`; more wait for one to come
 * back. A worker that misses its deadline is killed (SIGKILL) and reaped at
 * once; one that dies is reaped when its caller sees the socket close. No
 * worker outlives the server: each reads its socket until it closes.
 *
 * The protocol, over a socketpair (send() with MSG_NOSIGNAL, so a dead
 * worker is an error, not a SIGPIPE in the server). Every frame is a
 * native-endian uint32 length, then that many bytes:
 *
 *   request  op (wf_expr_op), uint32 program length, program, variables JSON
 *            (CHECK: the program is uint32 n, then n x (uint32 len, bytes)
 *            sources, and no variables)
 *   started  'S': the program is compiled (or was cached); evaluating
 *   result   'R', uint32 wf_code, then the message on error, or:
 *            BOOL uint8; TIME int64 µs; STRINGS uint32 n, n x (uint32 len,
 *            bytes); COMPILE nothing; CHECK n x (uint32 wf_code, uint32
 *            len, message)
 *
 * The caller allows WF_EXPR_COMPILE_MS until 'S' and timeout_ms from 'S'
 * to the result (COMPILE and CHECK: the compile budget for the result, a
 * CHECK 20 ms more per source). Both are the worker's CPU time, read from
 * its CPU clock when the wall clock says a budget is spent: a program that
 * runs away uses its CPU and is stopped as soon as it has, while one that
 * only waited for a core on a loaded machine goes on, up to WALL_FACTOR
 * times its budget in wall-clock time. The worker itself runs under an
 * address-space limit (RLIMIT_AS: what it maps at start plus memory_mb, so
 * libjq's allocations fail and it aborts), no core dumps, and a CPU-time
 * alarm (ITIMER_PROF) of both budgets twice over, should the server be
 * unable to kill it.
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np */

#include "expr.h"
#include "expr_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wf_bulkhead.h"
#include "wf_log.h"
#include "wf_time.h"

#define MAX_WORKERS 256
/* A check's compile budget per source, beyond WF_EXPR_COMPILE_MS. */
#define CHECK_MS_PER_SOURCE 20
/* A budget is CPU time; the wall clock bounds it at this many times. */
#define WALL_FACTOR 10

/* The niceness of a worker that did a bulkhead's work (a check, an
 * evaluation past its budget): behind the server's threads for CPU. An
 * unprivileged process cannot raise it back, so such a worker stays among
 * the workers for that work, and the others run at the server's own
 * priority. */
#define WF_EXPR_BULKHEAD_NICE 10
/* Programs a worker keeps compiled (oldest dropped first). */
#define WORKER_CACHE 64
/* Largest request: op, program, variables and their lengths. */
#define MAX_REQUEST (WF_EXPR_MAX_INPUT + WF_EXPR_MAX_SOURCE + 64)
/* Largest result: WF_EXPR_MAX_RESULTS ids within WF_EXPR_MAX_OUTPUT bytes. */
#define MAX_RESULT (WF_EXPR_MAX_OUTPUT + WF_EXPR_MAX_JSON + 8 * WF_EXPR_MAX_RESULTS + 1024)

typedef struct worker {
    pid_t pid;
    int fd;
    int uses;
    unsigned gen; /* configuration it was started for */
    bool behind;  /* lowered to WF_EXPR_BULKHEAD_NICE: kept for bulkheads' work */
} worker;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a worker came back or ended */
    wf_expr_options o;
    unsigned gen;
    worker *idle[MAX_WORKERS]; /* at the server's priority */
    int nidle;
    worker *behind_idle[MAX_WORKERS]; /* behind it (bulkheads' work) */
    int nbehind;
    int live;    /* started and not yet ended, idle or busy */
    int waiting; /* callers waiting for a worker (bounded by o.max_queued) */
} pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
    .o = {WF_EXPR_INLINE, 1000, 256, 4, 1000, 8, 50},
};

static _Thread_local int64_t call_deadline_ms;

void
wf_expr_set_call_deadline(int64_t deadline_ms)
{
    call_deadline_ms = deadline_ms;
}

static atomic_bool isolated;

bool
wf_expr__isolated(void)
{
    return atomic_load(&isolated);
}

/* ---- the caller's side ----------------------------------------------------- */

static void
end_worker(worker *w)
{
    close(w->fd);
    kill(w->pid, SIGKILL);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    free(w);
}

/* Sanitizer settings reach the worker (it is the same binary); nothing
 * else of the server's environment does, its secrets included. HOME points
 * nowhere, so libjq links no ~/.jq into the programs. */
static char **
worker_env(char **buf, size_t cap)
{
    static const char *const keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
    size_t n = 0;
    buf[n++] = "HOME=/nonexistent";
    buf[n++] = "LC_ALL=C";
    for (size_t k = 0; k < sizeof keep / sizeof keep[0] && n + 1 < cap; k++) {
        const char *v = getenv(keep[k]);
        if (v != NULL) {
            size_t len = strlen(keep[k]) + strlen(v) + 2;
            char *s = malloc(len);
            if (s != NULL) {
                snprintf(s, len, "%s=%s", keep[k], v);
                buf[n++] = s;
            }
        }
    }
    buf[n] = NULL;
    return buf;
}

static worker *
spawn_worker(const wf_expr_options *o, unsigned gen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return NULL;
    char mem[24], alarm_ms[24];
    snprintf(mem, sizeof mem, "%d", o->memory_mb);
    snprintf(alarm_ms, sizeof alarm_ms, "%d", 2 * (WF_EXPR_COMPILE_MS + o->timeout_ms));
    char *argv[] = {"workflowd", WF_EXPR_WORKER_ARG, mem, alarm_ms, NULL};
    char *envbuf[8];
    char **envp = worker_env(envbuf, 8);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* Nothing else of the server (client sockets, Postgres connections,
     * other workers' sockets) reaches a worker. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    /* The server blocks SIGTERM/SIGINT and ignores SIGPIPE; a worker does
     * neither (a closed socket ends it). */
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGPROF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    /* Its own process group: a Ctrl-C meant for the server does not end
     * the workers under it. */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    for (size_t i = 2; envp[i] != NULL; i++)
        free(envp[i]);
    close(sv[1]);
    worker *w = rc == 0 ? calloc(1, sizeof *w) : NULL;
    if (w == NULL) {
        WF_LOG(WF_LOG_ERROR, "expr_worker", "could not start an expression worker: %s",
               strerror(rc != 0 ? rc : ENOMEM));
        if (rc == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        close(sv[0]);
        return NULL;
    }
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    *w = (worker){.pid = pid, .fd = sv[0], .gen = gen};
    return w;
}

/* ---- the budget ----------------------------------------------------------- */

/* A request may use slow_ms of a shared thread (the wait for a worker and
 * the evaluation; a worker's compile of a program it has not seen may take
 * COMPILE_BUDGETS times as long besides); then its call joins the
 * expression bulkhead (core/wf_bulkhead.h), whose
 * threads stand beside the shared ones, or, when that is full, the
 * request is ended (its worker killed) with WF_E_BULKHEAD_FULL. The
 * sources whose evaluation itself went past the budget are remembered (a
 * few, newest first): their next evaluation joins the bulkhead before it
 * starts, so a full one refuses it at once instead of after spending the
 * budget. One that comes back within the budget is forgotten. */
typedef struct budget {
    int64_t at;       /* monotonic ms when the budget runs out; 0: no budget (any more) */
    uint64_t hash;    /* of the source */
    bool evaluating;  /* the worker has compiled the program ('S') */
    int64_t left;     /* of the budget, while the worker compiles */
    bool joined;      /* the call went into the bulkhead */
    struct worker *w; /* the worker of the request, once there is one */
    wf_error *err;    /* the refusal */
} budget;

#define KNOWN_SLOW 64

static struct {
    pthread_mutex_t mu;
    uint64_t hash[KNOWN_SLOW];
    size_t next;
} known_slow = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t
hash_of(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h | 1; /* 0 marks a free entry */
}

/* Finds h (forget: and drops it); true when it was there. */
static bool
slow_find(uint64_t h, bool forget)
{
    bool found = false;
    pthread_mutex_lock(&known_slow.mu);
    for (size_t i = 0; i < KNOWN_SLOW && !found; i++)
        if (known_slow.hash[i] == h) {
            found = true;
            if (forget)
                known_slow.hash[i] = 0;
        }
    pthread_mutex_unlock(&known_slow.mu);
    return found;
}

static void
slow_note(uint64_t h)
{
    if (slow_find(h, false))
        return;
    pthread_mutex_lock(&known_slow.mu);
    known_slow.hash[known_slow.next] = h;
    known_slow.next = (known_slow.next + 1) % KNOWN_SLOW;
    pthread_mutex_unlock(&known_slow.mu);
}

/* Puts w behind the server's threads for CPU: it does a bulkhead's work. */
static void
put_behind(worker *w)
{
    if (w == NULL || w->behind)
        return;
    w->behind = true;
    if (setpriority(PRIO_PROCESS, (id_t)w->pid, WF_EXPR_BULKHEAD_NICE) != 0) {
        /* best effort: the bulkhead's bound still holds */
    }
}

/* The budget ran out: the call joins the expression bulkhead. False when
 * that is full (b->err says so). */
static bool
budget_over(budget *b)
{
    b->at = 0;
    if (b->evaluating)
        slow_note(b->hash);
    b->joined = wf_bulkhead_enter(WF_BULKHEAD_EXPR, b->err) == WF_OK;
    if (b->joined)
        put_behind(b->w);
    return b->joined;
}

/* The worker compiles first (unless it has the program already): that
 * phase may take COMPILE_BUDGETS budgets of its own, and the time left of
 * the request's budget resumes once it is over. */
#define COMPILE_BUDGETS 10

static void
budget_compiling(budget *b, const wf_expr_options *o)
{
    if (b->at == 0)
        return;
    int64_t now = wf_mono_ms();
    b->left = b->at > now ? b->at - now : 0;
    b->at = now + (int64_t)COMPILE_BUDGETS * o->slow_ms;
}

static void
budget_evaluating(budget *b)
{
    b->evaluating = true;
    if (b->at != 0)
        b->at = wf_mono_ms() + b->left;
}

/* The earlier of deadline_ms and the end of the budget. */
static int64_t
until_of(int64_t deadline_ms, const budget *b)
{
    return b != NULL && b->at != 0 && b->at < deadline_ms ? b->at : deadline_ms;
}

/* Called where a wait ended at until_of(): 1 when the budget ran out and
 * the call joined the bulkhead (wait on), -1 when it was refused, 0 when
 * the budget is not over. */
static int
check_budget(budget *b, int64_t now)
{
    if (b == NULL || b->at == 0 || now < b->at)
        return 0;
    return budget_over(b) ? 1 : -1;
}

/* ---- the caller's side: a worker ------------------------------------------------- */

/* Why acquire found no worker. */
typedef enum { ACQ_NONE, ACQ_FULL, ACQ_DEADLINE, ACQ_REFUSED } acq_fail;

/* Waits on the pool's condition until until_ms (pool.mu held). */
static void
pool_wait(int64_t until_ms)
{
    int64_t left = until_ms - wf_mono_ms();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&pool.cv, &pool.mu, &ts);
}

/* An idle worker of the kind asked for (behind: one for a bulkhead's work,
 * which the caller puts behind), else of the other kind, or NULL (pool.mu
 * held). A worker behind the server's threads is not given to other work
 * while a new one may be started; at the pool's limit it is ended, to make
 * room for one (*swap). */
static worker *
take_idle(bool behind, worker **swap)
{
    *swap = NULL;
    if (behind && pool.nbehind > 0)
        return pool.behind_idle[--pool.nbehind];
    if (pool.nidle > 0)
        return pool.idle[--pool.nidle];
    if (!behind && pool.nbehind > 0 && pool.live >= pool.o.workers) {
        *swap = pool.behind_idle[--pool.nbehind];
        pool.live--;
    }
    return NULL;
}

/* A worker that was idle or is started now (pool.mu held on entry, not
 * on return); NULL when none could be started. */
static worker *
take_worker(bool queued, bool behind, wf_expr_options *o)
{
    worker *swap;
    worker *w = take_idle(behind, &swap);
    if (queued)
        pool.waiting--;
    if (w != NULL) {
        pthread_mutex_unlock(&pool.mu);
        return w;
    }
    unsigned gen = pool.gen;
    pool.live++;
    pthread_mutex_unlock(&pool.mu);
    if (swap != NULL)
        end_worker(swap);
    w = spawn_worker(o, gen);
    if (w == NULL) {
        pthread_mutex_lock(&pool.mu);
        pool.live--;
        pthread_cond_signal(&pool.cv);
        pthread_mutex_unlock(&pool.mu);
    }
    return w;
}

/* An idle worker, a new one, or NULL when none came free before
 * deadline_ms or the call's deadline (*why ACQ_DEADLINE when the call's
 * came first), when max_queued callers already wait (ACQ_FULL), when the
 * budget ran out with the bulkhead full (ACQ_REFUSED), or when none could
 * be started. *o receives the options. */
static worker *
acquire(int64_t deadline_ms, wf_expr_options *o, budget *b, bool behind, acq_fail *why)
{
    *why = ACQ_NONE;
    bool queued = false;
    int64_t call_dl = call_deadline_ms;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        *o = pool.o;
        if (pool.nidle > 0 || pool.nbehind > 0 || pool.live < pool.o.workers)
            return take_worker(queued, behind || (b != NULL && b->joined), o);
        if (!queued) {
            if (pool.waiting >= pool.o.max_queued) {
                *why = ACQ_FULL;
                break;
            }
            pool.waiting++;
            queued = true;
        }
        int64_t until = deadline_ms;
        if (call_dl > 0 && call_dl < until)
            until = call_dl;
        int64_t now = wf_mono_ms();
        if (until - now <= 0) {
            if (until == call_dl && call_dl < deadline_ms)
                *why = ACQ_DEADLINE;
            break;
        }
        if (b != NULL && b->at != 0 && now >= b->at) {
            pthread_mutex_unlock(&pool.mu); /* the hand-off takes the server's locks */
            bool joined = budget_over(b);
            pthread_mutex_lock(&pool.mu);
            if (!joined) {
                *why = ACQ_REFUSED;
                break;
            }
            continue;
        }
        pool_wait(until_of(until, b));
    }
    if (queued)
        pool.waiting--;
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

/* Gives w back (to the idle workers of its kind), or ends it when it
 * failed, is used up or belongs to an earlier configuration. */
static void
release(worker *w, bool healthy)
{
    pthread_mutex_lock(&pool.mu);
    bool keep = healthy && w->gen == pool.gen && ++w->uses < pool.o.recycle_after &&
                pool.nidle + pool.nbehind < MAX_WORKERS;
    if (keep && w->behind) {
        pool.behind_idle[pool.nbehind++] = w;
    } else if (keep) {
        pool.idle[pool.nidle++] = w;
    } else {
        pool.live--;
    }
    pthread_cond_signal(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    if (!keep)
        end_worker(w);
}

/* The end of one phase of a request (see "The caller allows" above). */
typedef struct deadline {
    int64_t at_ms;       /* when to look again (monotonic) */
    int64_t wall_end_ms; /* never later than this */
    bool cpu;            /* clk is the worker's CPU clock */
    clockid_t clk;
    int64_t cpu_end_ns; /* the worker's CPU time at which the budget is spent */
} deadline;

static int64_t
cpu_ns(clockid_t clk)
{
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
        return INT64_MAX;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A phase of budget_ms of w's CPU time from now. */
static deadline
deadline_of(const worker *w, int64_t budget_ms)
{
    int64_t now = wf_mono_ms();
    deadline d = {.at_ms = now + budget_ms, .wall_end_ms = now + WALL_FACTOR * budget_ms};
    d.cpu = clock_getcpuclockid(w->pid, &d.clk) == 0;
    if (d.cpu)
        d.cpu_end_ns = cpu_ns(d.clk) + budget_ms * 1000000;
    return d;
}

/* True when d has passed at now; otherwise d->at_ms is when to look
 * again (later, when the worker has CPU time of its budget left). */
static bool
deadline_passed(deadline *d, int64_t now)
{
    if (now < d->at_ms)
        return false;
    if (!d->cpu || now >= d->wall_end_ms)
        return true;
    int64_t left_ns = d->cpu_end_ns - cpu_ns(d->clk);
    if (left_ns <= 0)
        return true;
    int64_t next = now + left_ns / 1000000 + 1;
    d->at_ms = next < d->wall_end_ms ? next : d->wall_end_ms;
    return false;
}

/* Waits for fd to be ready for events until d passes, or the end of the
 * budget: 0 to go on, 1 when d passed, 2 when the budget ran out and the
 * bulkhead refused the call. */
static int
wait_fd(int fd, short events, deadline *d, budget *b)
{
    int64_t now = wf_mono_ms();
    if (deadline_passed(d, now))
        return 1;
    int over = check_budget(b, now);
    if (over < 0)
        return 2;
    if (over > 0)
        return 0;
    struct pollfd pfd = {.fd = fd, .events = events};
    poll(&pfd, 1, (int)(until_of(d->at_ms, b) - now));
    return 0;
}

/* 0 on success, -1 when the peer is gone, 1 when d passed, 2 when the
 * bulkhead refused the call (wait_fd). */
static int
send_all(int fd, const void *buf, size_t n, deadline *d, budget *b)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        int rc = wait_fd(fd, POLLOUT, d, b);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int
recv_all(int fd, void *buf, size_t n, deadline *d, budget *b)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EINTR))
            return -1;
        int rc = wait_fd(fd, POLLIN, d, b);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Reads one frame into a malloc'ed buffer (*out, *len). */
static int
recv_frame(int fd, uint8_t **out, uint32_t *len, deadline *d, budget *b)
{
    int rc = recv_all(fd, len, sizeof *len, d, b);
    if (rc != 0)
        return rc;
    if (*len == 0 || *len > MAX_RESULT)
        return -1;
    *out = malloc(*len);
    if (*out == NULL)
        return -1;
    rc = recv_all(fd, *out, *len, d, b);
    if (rc != 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

static bool
take(const uint8_t **p, const uint8_t *end, void *dst, size_t n)
{
    if ((size_t)(end - *p) < n)
        return false;
    memcpy(dst, *p, n);
    *p += n;
    return true;
}

/* Decodes the results of a CHECK: per source a uint32 wf_code, a uint32
 * length and the message. */
static bool
decode_checks(const uint8_t *p, const uint8_t *end, wf_expr_result *r)
{
    for (size_t i = 0; i < r->nerrs; i++) {
        uint32_t c, len;
        if (!take(&p, end, &c, sizeof c) || c >= WF_CODE_COUNT_ ||
            !take(&p, end, &len, sizeof len) || (size_t)(end - p) < len)
            return false;
        wf_error_clear(&r->errs[i]);
        if (c != WF_OK)
            wf_error_set(&r->errs[i], (wf_code)c, "%.*s", (int)len, (const char *)p);
        p += len;
    }
    return p == end;
}

/* Decodes a result frame; false when it is malformed. */
static bool
decode_result(wf_expr_op op, const uint8_t *buf, uint32_t len, wf_arena *a, wf_expr_result *r,
              wf_code *code, wf_error *err)
{
    const uint8_t *p = buf + 1, *end = buf + len;
    uint32_t c;
    if (buf[0] != 'R' || !take(&p, end, &c, sizeof c) || c >= WF_CODE_COUNT_)
        return false;
    *code = (wf_code)c;
    if (c != WF_OK) {
        wf_error_set(err, *code, "%.*s", (int)(end - p), (const char *)p);
        return true;
    }
    switch (op) {
    case WF_EXPR_OP_BOOL: {
        uint8_t b;
        if (!take(&p, end, &b, 1))
            return false;
        r->yes = b != 0;
        return true;
    }
    case WF_EXPR_OP_TIME:
    case WF_EXPR_OP_INT:
        return take(&p, end, &r->us, sizeof r->us);
    case WF_EXPR_OP_STRINGS:
    case WF_EXPR_OP_JSON: {
        uint32_t n;
        if (!take(&p, end, &n, sizeof n) || n > WF_EXPR_MAX_RESULTS)
            return false;
        r->strs = n > 0 ? wf_arena_alloc(a, n * sizeof *r->strs) : NULL;
        if (n > 0 && r->strs == NULL) {
            *code = wf_error_nomem(err);
            return true;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t sl;
            if (!take(&p, end, &sl, sizeof sl) || (size_t)(end - p) < sl)
                return false;
            if ((r->strs[i] = wf_arena_strndup(a, (const char *)p, sl)) == NULL) {
                *code = wf_error_nomem(err);
                return true;
            }
            p += sl;
        }
        r->nstrs = n;
        return true;
    }
    case WF_EXPR_OP_CHECK:
        return decode_checks(p, end, r);
    case WF_EXPR_OP_COMPILE:
        return true;
    }
    return false;
}

/* ---- the caller's side: one request ---------------------------------------------- */

/* One request: op, the program (src, slen bytes: for CHECK the packed
 * sources) and the variables. */
typedef struct request {
    wf_expr_op op;
    const char *src;
    size_t slen;
    const char *vars;
    size_t vlen;
} request;

/* Sends q to w within dl (0 or what send_all returns). */
static int
send_request(worker *w, const request *q, deadline *dl, budget *b)
{
    uint32_t flen = (uint32_t)(1 + 4 + q->slen + q->vlen), sl = (uint32_t)q->slen;
    uint8_t head[9];
    memcpy(head, &flen, 4);
    head[4] = (uint8_t)q->op;
    memcpy(head + 5, &sl, 4);
    int rc = send_all(w->fd, head, sizeof head, dl, b);
    if (rc == 0)
        rc = send_all(w->fd, q->src, q->slen, dl, b);
    if (rc == 0 && q->vlen > 0)
        rc = send_all(w->fd, q->vars, q->vlen, dl, b);
    return rc;
}

/* Why a worker was ended, for the log; NULL when it was not. */
static const char *
failure_of(int rc)
{
    return rc == 0 ? NULL : rc == 2 ? "was refused a bulkhead" : rc > 0 ? "timed out" : "died";
}

/* The answer to q from w: 'S' within the compile budget (evaluations),
 * then the result within the evaluation's deadline (or, for COMPILE and
 * CHECK, within the compile budget). *done: the request was answered (its
 * code in the return value). Otherwise the return value is what
 * recv_frame gave, or -1 for garbage. */
static int
receive(worker *w, const request *q, const wf_expr_options *o, deadline *dl, budget *b, wf_arena *a,
        wf_expr_result *r, wf_code *code, wf_error *err)
{
    uint8_t *buf = NULL;
    uint32_t len = 0;
    int rc = 0;
    if (q->op != WF_EXPR_OP_COMPILE && q->op != WF_EXPR_OP_CHECK) {
        rc = recv_frame(w->fd, &buf, &len, dl, b);
        if (rc == 0 && (len != 1 || buf[0] != 'S')) {
            /* a compile error comes instead of 'S' */
            bool ok = decode_result(q->op, buf, len, a, r, code, err) && *code != WF_OK;
            free(buf);
            return ok ? 0 : -1;
        }
        free(buf);
        buf = NULL;
        *dl = deadline_of(w, o->timeout_ms);
        if (b != NULL)
            budget_evaluating(b);
    }
    if (rc == 0)
        rc = recv_frame(w->fd, &buf, &len, dl, b);
    if (rc == 0 && !decode_result(q->op, buf, len, a, r, code, err))
        rc = -1;
    free(buf);
    return rc;
}

/* What a worker may take to compile q's program: WF_EXPR_COMPILE_MS, and
 * for a check of many sources a little more per source. */
static int64_t
compile_budget_ms(const request *q)
{
    if (q->op != WF_EXPR_OP_CHECK || q->slen < 4)
        return WF_EXPR_COMPILE_MS;
    uint32_t n;
    memcpy(&n, q->src, 4);
    return WF_EXPR_COMPILE_MS + CHECK_MS_PER_SOURCE * (int64_t)n;
}

/* A request through one worker: 0 when answered (*code), else what went
 * wrong (-1, 1, 2 as in send_all; 3: the worker died on the first send,
 * ask another). */
static int
attempt(worker *w, const request *q, const wf_expr_options *o, budget *b, bool first, wf_arena *a,
        wf_expr_result *r, wf_code *code, wf_error *err)
{
    deadline dl = deadline_of(w, compile_budget_ms(q));
    if (b != NULL) {
        b->w = w;
        if (b->joined)
            put_behind(w);
        budget_compiling(b, o);
    }
    if (q->op == WF_EXPR_OP_CHECK)
        put_behind(w); /* the compile bulkhead's work */
    int rc = send_request(w, q, &dl, b);
    /* A worker that died while idle (killed from outside) fails on the
     * send: that is no fault of this request, so a fresh one gets it. */
    if (rc < 0 && first && w->uses > 0)
        rc = 3;
    else if (rc == 0)
        rc = receive(w, q, o, &dl, b, a, r, code, err);
    if (b != NULL)
        b->w = NULL; /* the worker goes back: the budget no longer reaches it */
    return rc;
}

static wf_code
fail(int rc, const request *q, const wf_expr_options *o, budget *b, wf_error *err)
{
    if (rc == 2)
        return b->err->code;
    if (rc > 0 && (q->op == WF_EXPR_OP_COMPILE || q->op == WF_EXPR_OP_CHECK))
        return wf_error_set(err, WF_E_EXPRESSION_LIMIT,
                            "compiling the expressions exceeded its time limit (%lld ms)",
                            (long long)compile_budget_ms(q));
    if (rc > 0)
        return wf_error_set(err, WF_E_EXPRESSION_LIMIT,
                            "expression evaluation exceeded its time limit (%d ms)", o->timeout_ms);
    return wf_error_set(err, WF_E_EXPRESSION_LIMIT,
                        "expression evaluation exceeded its memory limit (%d MiB) or crashed",
                        o->memory_mb);
}

static wf_code
refused(acq_fail why, const wf_expr_options *o, budget *b, wf_error *err)
{
    if (why == ACQ_REFUSED)
        return b->err->code;
    if (why == ACQ_FULL)
        return wf_error_set(err, WF_E_EXPRESSION_LIMIT,
                            "the expression queue is full (%d workers busy, %d waiting)",
                            o->workers, o->max_queued);
    if (why == ACQ_DEADLINE)
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for an expression worker");
    return wf_error_set(err, WF_E_EXPRESSION_LIMIT, "no expression worker is available (limit %d)",
                        o->workers);
}

static wf_code
run_request(const request *q, wf_arena *a, wf_expr_result *r, wf_error *err)
{
    wf_expr_options o;
    int64_t start = wf_mono_ms();
    pthread_mutex_lock(&pool.mu);
    int64_t wait_until = start + WF_EXPR_COMPILE_MS + 2 * (int64_t)pool.o.timeout_ms;
    budget b = {.at = start + pool.o.slow_ms, .hash = hash_of(q->src, q->slen), .err = err};
    pthread_mutex_unlock(&pool.mu);
    budget *bp = q->op == WF_EXPR_OP_CHECK ? NULL : &b; /* a check is the compile bulkhead's */
    /* A source whose evaluation ran past the budget before joins the
     * bulkhead first. */
    if (bp != NULL && q->op != WF_EXPR_OP_COMPILE && slow_find(b.hash, false)) {
        b.evaluating = true;
        if (!budget_over(bp))
            return err->code;
    }
    for (int first = 1; first >= 0; first--) {
        acq_fail why;
        worker *w = acquire(wait_until, &o, bp, q->op == WF_EXPR_OP_CHECK, &why);
        if (w == NULL)
            return refused(why, &o, bp, err);
        wf_code code = WF_OK;
        int rc = attempt(w, q, &o, bp, first, a, r, &code, err);
        if (rc == 3) {
            release(w, false);
            continue;
        }
        const char *why_ended = failure_of(rc);
        if (why_ended == NULL) {
            release(w, true);
            if (bp != NULL && wf_mono_ms() - start < o.slow_ms)
                slow_find(b.hash, true); /* within its budget this time */
            return code;
        }
        pid_t pid = w->pid;
        release(w, false);
        WF_LOG(rc == 2 ? WF_LOG_INFO : WF_LOG_WARN, "expr_worker",
               "expression worker %d %s after %lld ms and was ended: %.80s", (int)pid, why_ended,
               (long long)(wf_mono_ms() - start),
               q->op == WF_EXPR_OP_CHECK ? "(a check of many expressions)" : q->src);
        return fail(rc, q, &o, bp, err);
    }
    return wf_error_set(err, WF_E_EXPRESSION_LIMIT, "no expression worker could be started");
}

wf_code
wf_expr__remote(wf_expr_op op, const char *src, const char *vars_json, wf_arena *a,
                wf_expr_result *r, wf_error *err)
{
    request q = {op, src, strlen(src), vars_json, vars_json != NULL ? strlen(vars_json) : 0};
    return run_request(&q, a, r, err);
}

/* Sources per CHECK message, and bytes: compiled joined, they stay
 * within libjq's bytecode limit and the compile budget (a joined compile
 * takes about linear time in its text's length). */
#define CHECK_SOURCES 256
#define CHECK_BYTES (8 * 1024)

/* Packs srcs[0..n) for a CHECK: uint32 count, then each as uint32 length
 * and bytes. *len its length; NULL when out of memory. */
static char *
pack_sources(const char *const *srcs, size_t n, size_t *len)
{
    size_t total = 4;
    for (size_t i = 0; i < n; i++)
        total += 4 + strlen(srcs[i]);
    char *buf = malloc(total);
    if (buf == NULL)
        return NULL;
    uint32_t c = (uint32_t)n;
    memcpy(buf, &c, 4);
    size_t at = 4;
    for (size_t i = 0; i < n; i++) {
        uint32_t sl = (uint32_t)strlen(srcs[i]);
        memcpy(buf + at, &sl, 4);
        memcpy(buf + at + 4, srcs[i], sl);
        at += 4 + sl;
    }
    *len = total;
    return buf;
}

wf_code
wf_expr__remote_check(const char *const *srcs, size_t n, wf_error *errs, wf_error *err)
{
    for (size_t i = 0; i < n;) {
        size_t k = 0, bytes = 0;
        while (i + k < n && k < CHECK_SOURCES && (k == 0 || bytes < CHECK_BYTES))
            bytes += strlen(srcs[i + k++]) + 4;
        size_t len;
        char *packed = pack_sources(srcs + i, k, &len);
        if (packed == NULL)
            return wf_error_nomem(err);
        request q = {WF_EXPR_OP_CHECK, packed, len, NULL, 0};
        wf_expr_result r = {.errs = errs + i, .nerrs = k};
        wf_code rc = run_request(&q, NULL, &r, err);
        free(packed);
        if (rc != WF_OK)
            return rc;
        i += k;
    }
    return WF_OK;
}

void
wf_expr_configure(const wf_expr_options *o)
{
    wf_expr_options v = *o;
    if (v.timeout_ms < 1)
        v.timeout_ms = 1;
    if (v.memory_mb < 16)
        v.memory_mb = 16;
    if (v.workers < 1)
        v.workers = 1;
    if (v.workers > MAX_WORKERS)
        v.workers = MAX_WORKERS;
    if (v.recycle_after < 1)
        v.recycle_after = 1;
    if (v.max_queued < 1)
        v.max_queued = 2 * v.workers;
    if (v.slow_ms < 1)
        v.slow_ms = 50;
    pthread_mutex_lock(&pool.mu);
    pool.o = v;
    pthread_mutex_unlock(&pool.mu);
    wf_expr_shutdown(); /* idle workers of the old options */
    atomic_store(&isolated, v.isolation == WF_EXPR_PROCESS);
    /* Cached expressions were compiled for the old mode. */
    wf_expr_cache_clear();
}

void
wf_expr_shutdown(void)
{
    worker *old[2 * MAX_WORKERS];
    pthread_mutex_lock(&pool.mu);
    pool.gen++; /* busy workers end when they come back */
    int n = pool.nidle;
    memcpy(old, pool.idle, (size_t)n * sizeof *old);
    memcpy(old + n, pool.behind_idle, (size_t)pool.nbehind * sizeof *old);
    n += pool.nbehind;
    pool.nidle = pool.nbehind = 0;
    pool.live -= n;
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < n; i++)
        end_worker(old[i]);
}

/* ---- the worker's side ----------------------------------------------------- */

typedef struct cached_prog {
    char *src;
    jq_state *jq;
} cached_prog;

static int
read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k == 0 || (k < 0 && errno != EINTR))
            return -1;
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        }
    }
    return 0;
}

static int
write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno != EINTR)
            return -1;
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        }
    }
    return 0;
}

/* A growing reply: the length prefix is filled in by reply_send. */
typedef struct reply {
    uint8_t *b;
    size_t n, cap;
    bool oom;
} reply;

static void
put(reply *r, const void *p, size_t n)
{
    if (r->n + n > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->n + n)
            cap *= 2;
        uint8_t *b = realloc(r->b, cap);
        if (b == NULL) {
            r->oom = true;
            return;
        }
        r->b = b;
        r->cap = cap;
    }
    memcpy(r->b + r->n, p, n);
    r->n += n;
}

static int
reply_send(int fd, reply *r)
{
    if (r->oom)
        return -1;
    uint32_t len = (uint32_t)(r->n - 4);
    memcpy(r->b, &len, 4);
    return write_full(fd, r->b, r->n);
}

static void
reply_result(reply *r, wf_code code)
{
    uint32_t c = (uint32_t)code;
    r->n = 0;
    put(r, "\0\0\0\0R", 5);
    put(r, &c, sizeof c);
}

static void
set_alarm(int ms)
{
    struct itimerval it = {.it_value = {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_PROF, &it, NULL);
}

/* What the process maps before it evaluates anything (shared libraries;
 * a sanitizer's shadow memory), in bytes. */
static rlim_t
mapped_now(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
}

static jq_state *
program(cached_prog *cache, size_t *next, const char *src, wf_error *err)
{
    for (size_t i = 0; i < WORKER_CACHE; i++)
        if (cache[i].src != NULL && strcmp(cache[i].src, src) == 0)
            return cache[i].jq;
    jq_state *jq;
    if (wf_expr__jq_compile(src, &jq, err) != WF_OK)
        return NULL;
    cached_prog *c = &cache[*next];
    *next = (*next + 1) % WORKER_CACHE;
    if (c->src != NULL) {
        free(c->src);
        jq_teardown(&c->jq);
    }
    c->src = strdup(src);
    c->jq = jq;
    if (c->src == NULL) {
        jq_teardown(&c->jq);
        wf_error_nomem(err);
        return NULL;
    }
    return jq;
}

/* Unpacks a CHECK's sources (pack_sources) into *srcs (malloc'ed, each
 * pointing into buf, which is modified to end them); the count, or -1
 * when malformed. */
static long
unpack_sources(char *buf, size_t len, char ***srcs)
{
    uint32_t n;
    if (len < 4)
        return -1;
    memcpy(&n, buf, 4);
    if (n > (len - 4) / 4)
        return -1;
    char **v = malloc((n + 1) * sizeof *v);
    if (v == NULL)
        return -1;
    size_t at = 4;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sl;
        if (len - at < 4 || (memcpy(&sl, buf + at, 4), sl > len - at - 4)) {
            free(v);
            return -1;
        }
        /* The length field ends the source before it. */
        memmove(buf + at, buf + at + 4, sl);
        buf[at + sl] = '\0';
        v[i] = buf + at;
        at += 4 + sl;
        if (i + 1 == n && at != len) {
            free(v);
            return -1;
        }
    }
    *srcs = v;
    return (long)n;
}

/* Answers a CHECK of the sources packed in buf: per source its code and
 * message. 0 when answered, 1 when the socket broke, 2 when buf is
 * malformed. */
static int
answer_check(reply *r, char *buf, size_t len, int alarm_ms)
{
    char **srcs = NULL;
    long n = unpack_sources(buf, len, &srcs);
    if (n < 0)
        return 2;
    set_alarm(alarm_ms + 2 * CHECK_MS_PER_SOURCE * (int)n); /* twice the caller's budget */
    wf_error *errs = calloc((size_t)n + 1, sizeof *errs);
    if (errs == NULL) {
        free(srcs);
        return 2;
    }
    wf_expr__jq_check_all((const char *const *)srcs, (size_t)n, errs);
    reply_result(r, WF_OK);
    for (long i = 0; i < n; i++) {
        uint32_t c = (uint32_t)errs[i].code, ml = (uint32_t)strlen(errs[i].msg);
        put(r, &c, sizeof c);
        put(r, &ml, sizeof ml);
        put(r, errs[i].msg, ml);
    }
    free(errs);
    free(srcs);
    return reply_send(0, r) != 0 ? 1 : 0;
}

int
wf_expr_worker_main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    long memory_mb = strtol(argv[2], NULL, 10);
    int alarm_ms = (int)strtol(argv[3], NULL, 10);
    wf_expr__init(); /* before the limit: Oniguruma's tables */
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    /* Under a container's memory limit, the kernel's OOM killer picks a
     * worker before the server (raising one's own score needs no rights). */
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "1000", 4) != 4) {
            /* best effort: the address-space limit still holds */
        }
        close(fd);
    }
    if (memory_mb > 0) {
        rlim_t as = mapped_now() + (rlim_t)memory_mb * 1024 * 1024;
        struct rlimit lim = {as, as};
        setrlimit(RLIMIT_AS, &lim);
    }
    static cached_prog cache[WORKER_CACHE];
    size_t next = 0;
    reply r = {0};
    for (;;) {
        uint32_t len;
        if (read_full(0, &len, sizeof len) != 0)
            return 0; /* the server closed the socket */
        if (len < 5 || len > MAX_REQUEST)
            return 2;
        char *req = malloc((size_t)len + 1);
        if (req == NULL || read_full(0, req, len) != 0)
            return 2;
        req[len] = '\0';
        set_alarm(alarm_ms);
        wf_expr_op op = (wf_expr_op)(uint8_t)req[0];
        uint32_t slen;
        memcpy(&slen, req + 1, 4);
        if (slen > len - 5)
            return 2;
        char *src = req + 5, *vars = req + 5 + slen;
        size_t vlen = len - 5 - slen;
        if (op == WF_EXPR_OP_CHECK) {
            int rc = answer_check(&r, src, slen, alarm_ms);
            free(req);
            if (rc != 0)
                return rc == 1 ? 0 : rc;
            set_alarm(0);
            continue;
        }
        char save = *vars;
        *vars = '\0';
        wf_error err;
        wf_error_clear(&err);
        jq_state *jq = program(cache, &next, src, &err);
        *vars = save;
        if (jq == NULL) {
            reply_result(&r, err.code);
            put(&r, err.msg, strlen(err.msg));
        } else if (op == WF_EXPR_OP_COMPILE) {
            reply_result(&r, WF_OK);
        } else {
            if (write_full(0, "\1\0\0\0S", 5) != 0)
                return 0;
            wf_arena *a = wf_arena_new();
            wf_expr_result res = {0};
            wf_code rc = a == NULL ? wf_error_nomem(&err)
                                   : wf_expr__jq_run(jq, op, vars, vlen, a, &res, &err);
            reply_result(&r, rc);
            if (rc != WF_OK) {
                put(&r, err.msg, strlen(err.msg));
            } else if (op == WF_EXPR_OP_BOOL) {
                uint8_t b = res.yes;
                put(&r, &b, 1);
            } else if (op == WF_EXPR_OP_TIME || op == WF_EXPR_OP_INT) {
                put(&r, &res.us, sizeof res.us);
            } else {
                uint32_t n = (uint32_t)res.nstrs;
                put(&r, &n, sizeof n);
                for (size_t i = 0; i < res.nstrs; i++) {
                    uint32_t sl = (uint32_t)strlen(res.strs[i]);
                    put(&r, &sl, sizeof sl);
                    put(&r, res.strs[i], sl);
                }
            }
            if (a != NULL)
                wf_arena_free(a);
        }
        free(req);
        if (reply_send(0, &r) != 0)
            return 0;
        set_alarm(0);
    }
}
