/*
 * wfctl_jobs: `wfctl jobs TYPE -- COMMAND [ARGS...]`, a job worker.
 *
 * Loop: a StreamActivatedJobs stream (credit --max, default --concurrency)
 * pushes jobs; for each job run COMMAND with the job's variables on stdin
 * and the job's identity in the environment, up to --concurrency commands
 * at once in one poll loop over their pipes (no threads); exit 0 with a JSON
 * object (or nothing) on stdout completes the job with those variables,
 * exit 100 fails it for good (retryable=false), anything else fails it
 * (retryable) with the tail of COMMAND's stderr. Either report gives the
 * stream its credit back. While a command runs, its lease is renewed
 * (ExtendJobLease) every third of the lease; when the server answers
 * JOB_LEASE_LOST the command is killed and the job not reported. The stream
 * is read in waits of at most 250 ms (20 ms while commands run) so that
 * SIGINT and SIGTERM are honoured promptly: the first finishes the running
 * jobs and exits 0, a second terminates the commands (and a third kills
 * them). With --once: one ActivateJobs long poll (in slices of at most 5 s)
 * and its batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workflow/v1/workflow.pb-c.h"
#include "wfctl.h"

extern char **environ;

#define SLICE_MS 5000       /* longest single ActivateJobs long-poll */
#define OUT_MAX (16u << 20) /* stdout kept for the job's variables */
#define TAIL_MAX 3000       /* stderr tail sent as error_message */

/* COMMAND's exit status that fails its job for good (FailJob with
 * retryable=false: no retry, the instance stops FAILED with an incident). */
#define WFCTL_JOB_EXIT_PERMANENT 100

static volatile sig_atomic_t stop_requests;

static void
on_signal(int sig)
{
    (void)sig;
    static const char first[] = "wfctl jobs: stopping after the current job or batch (signal "
                                "again to abort a running command)\n";
    static const char again[] = "wfctl jobs: aborting\n";
    ssize_t w =
        stop_requests == 0 ? write(2, first, sizeof first - 1) : write(2, again, sizeof again - 1);
    (void)w;
    if (stop_requests < 10)
        stop_requests = stop_requests + 1;
}

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps, returning early when a signal arrives. */
static void
nap(int seconds)
{
    struct timespec ts = {seconds, 0};
    nanosleep(&ts, NULL);
}

/* ---- running COMMAND ------------------------------------------------------ */

struct run_result {
    int status; /* waitpid status */
    char *out;
    size_t outlen;
    int out_overflow;
    char tail[TAIL_MAX];
    size_t taillen;
    int aborted; /* terminated on a second stop signal */
};

static void
tail_append(struct run_result *r, const char *d, size_t n)
{
    if (n >= TAIL_MAX) {
        memcpy(r->tail, d + n - TAIL_MAX, TAIL_MAX);
        r->taillen = TAIL_MAX;
        return;
    }
    if (r->taillen + n > TAIL_MAX) {
        size_t drop = r->taillen + n - TAIL_MAX;
        memmove(r->tail, r->tail + drop, r->taillen - drop);
        r->taillen -= drop;
    }
    memcpy(r->tail + r->taillen, d, n);
    r->taillen += n;
}

static void
out_append(struct run_result *r, const char *d, size_t n)
{
    if (r->out_overflow || r->outlen + n > OUT_MAX) {
        r->out_overflow = 1;
        return;
    }
    char *b = realloc(r->out, r->outlen + n + 1);
    if (b == NULL) {
        r->out_overflow = 1;
        return;
    }
    memcpy(b + r->outlen, d, n);
    r->out = b;
    r->outlen += n;
    r->out[r->outlen] = '\0';
}

static void
close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}
/* The environment of COMMAND: wfctl's, with the job's WF_* variables. */
static const char *const job_vars[] = {
    "WF_JOB_KEY",          "WF_JOB_ID",           "WF_JOB_TYPE",         "WF_JOB_ATTEMPT",
    "WF_JOB_MAX_ATTEMPTS", "WF_INSTANCE_ID",      "WF_ROOT_INSTANCE_ID", "WF_TRANSITION_ID",
    "WF_IDEMPOTENCY_KEY",  "WF_JOB_COMPENSATION", "WF_NEXT_STEP_FILE",
};
#define NJOBVARS (sizeof job_vars / sizeof job_vars[0])

static int
is_job_var(const char *entry)
{
    for (size_t i = 0; i < NJOBVARS; i++) {
        size_t n = strlen(job_vars[i]);
        if (strncmp(entry, job_vars[i], n) == 0 && entry[n] == '=')
            return 1;
    }
    return 0;
}

static char **
job_env(const Workflow__V1__Job *j, const char *next_step_file, char **owned)
{
    char attempt[16], max[16];
    snprintf(attempt, sizeof attempt, "%d", j->attempt);
    snprintf(max, sizeof max, "%d", j->max_attempts);
    const char *values[NJOBVARS] = {j->key,
                                    j->id,
                                    j->job_type,
                                    attempt,
                                    max,
                                    j->instance_id,
                                    j->root_instance_id,
                                    j->transition_id,
                                    j->idempotency_key,
                                    j->compensation ? "1" : "0",
                                    next_step_file};
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + NJOBVARS + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_job_var(environ[i]))
            env[k++] = environ[i];
    for (size_t i = 0; i < NJOBVARS; i++) {
        size_t len = strlen(job_vars[i]) + strlen(values[i]) + 2;
        owned[i] = malloc(len);
        if (owned[i] != NULL) {
            snprintf(owned[i], len, "%s=%s", job_vars[i], values[i]);
            env[k++] = owned[i];
        }
    }
    env[k] = NULL;
    return env;
}

/* ---- one job -------------------------------------------------------------- */

static void
trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* "exit status 3: <stderr tail>" */
static void
failure_message(const struct run_result *r, const char *why, char *msg, size_t n)
{
    size_t off = 0;
    while (off < r->taillen && ((unsigned char)r->tail[off] & 0xC0) == 0x80)
        off++; /* do not start inside a UTF-8 sequence */
    char tail[TAIL_MAX + 1];
    memcpy(tail, r->tail + off, r->taillen - off);
    tail[r->taillen - off] = '\0';
    trim(tail);
    char head[128];
    if (why != NULL)
        snprintf(head, sizeof head, "%s", why);
    else if (r->aborted)
        snprintf(head, sizeof head, "aborted: the worker was stopped");
    else if (WIFSIGNALED(r->status))
        snprintf(head, sizeof head, "killed by signal %d (%s)", WTERMSIG(r->status),
                 strsignal(WTERMSIG(r->status)));
    else
        snprintf(head, sizeof head, "exit status %d", WEXITSTATUS(r->status));
    snprintf(msg, n, "%s%s%s", head, tail[0] != '\0' ? ": " : "", tail);
}

static void
report(const Workflow__V1__Job *j, const char *outcome, const char *error, const char *next_step,
       int reported)
{
    if (g_wfctl.json) {
        json_t *o = json_object();
        json_object_set_new(o, "job_id", json_string(j->id));
        json_object_set_new(o, "job_key", json_string(j->key));
        json_object_set_new(o, "job_type", json_string(j->job_type));
        json_object_set_new(o, "instance_id", json_string(j->instance_id));
        json_object_set_new(o, "attempt", json_integer(j->attempt));
        json_object_set_new(o, "outcome", json_string(outcome));
        if (error != NULL)
            json_object_set_new(o, "error_message", json_string_nocheck(error));
        if (next_step != NULL && next_step[0] != '\0')
            json_object_set_new(o, "next_step", json_string_nocheck(next_step));
        json_object_set_new(o, "reported", json_boolean(reported));
        json_print_line(stdout, o);
        json_decref(o);
    } else {
        int len = error != NULL ? (int)strcspn(error, "\n") : 0;
        int goto_ = next_step != NULL && next_step[0] != '\0';
        printf("job %s (%s, attempt %d/%d, instance %s): %s%s%.*s%s%s%s\n", j->id, j->job_type,
               j->attempt, j->max_attempts, j->instance_id, outcome, error ? ": " : "", len,
               error ? error : "", goto_ ? ", next step " : "", goto_ ? next_step : "",
               reported ? "" : " (not reported)");
    }
    fflush(stdout);
}

/* An empty file for COMMAND to write the step to go to (a worker's goto,
 * CompleteJobRequest.next_step) into; its path in path, or "" when none
 * could be made (WF_NEXT_STEP_FILE is then empty). */
static void
next_step_file(char *path, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/wfctl-next-step-XXXXXX", dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        path[0] = '\0';
    else
        close(fd);
}

/* The step COMMAND wrote into path (first line, trimmed; "" = none), into
 * out[n]; the file is removed. */
static void
read_next_step(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    if (path[0] == '\0')
        return;
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fgets(out, (int)n, f) == NULL)
            out[0] = '\0';
        fclose(f);
    }
    unlink(path);
    out[strcspn(out, "\r\n")] = '\0';
    trim(out);
}

/* ---- the pool of running commands ------------------------------------------ */

/* One job whose COMMAND runs (or ran and is not reported yet). */
struct slot {
    int used;
    Workflow__V1__Job *job; /* owned by the slot */
    pid_t pid;
    int fds[3]; /* COMMAND's stdin (write end), stdout, stderr (read ends) */
    size_t inoff;
    int killed; /* the stop level the process group was signalled for */
    int exited; /* waitpid collected r.status */
    int lost;   /* ExtendJobLease answered JOB_LEASE_LOST: terminated, not reported */
    struct run_result r;
    char next_path[4096];
    long long lease_ms;    /* the lease renewed each time */
    long long next_extend; /* now_ms() of the next ExtendJobLease */
};

struct pool {
    struct slot *slots;
    int n;       /* --concurrency */
    int running; /* used slots */
    char **argv;
    long long lease_ms; /* --lease, 0 = the job's own (from lease_expires_at) */
    int failed_reports;
};

static const char *
job_input(const Workflow__V1__Job *j)
{
    return j->variables_json[0] ? j->variables_json : "{}";
}

/* The lease a job runs under: --lease, or what its lease_expires_at leaves
 * at activation (at least 1 s). */
static long long
job_lease_ms(const struct pool *p, const Workflow__V1__Job *j)
{
    if (p->lease_ms > 0)
        return p->lease_ms;
    long long left = 0;
    if (j->lease_expires_at != NULL) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        left = (j->lease_expires_at->seconds - (long long)ts.tv_sec) * 1000 +
               (j->lease_expires_at->nanos - ts.tv_nsec) / 1000000;
    }
    return left > 1000 ? left : 1000;
}

/* Starts COMMAND for job j in a free slot (which takes j). 0, or -1 (errno
 * set) when it cannot start: j is then still the caller's. */
static int
slot_start(struct pool *p, Workflow__V1__Job *j)
{
    struct slot *sl = NULL;
    for (int i = 0; i < p->n && sl == NULL; i++)
        if (!p->slots[i].used)
            sl = &p->slots[i];
    if (sl == NULL) {
        errno = EBUSY;
        return -1;
    }
    memset(sl, 0, sizeof *sl);
    sl->fds[0] = sl->fds[1] = sl->fds[2] = -1;
    next_step_file(sl->next_path, sizeof sl->next_path);
    char *owned[NJOBVARS] = {0};
    char **envp = job_env(j, sl->next_path, owned);
    int fds[6] = {-1, -1, -1, -1, -1, -1}; /* stdin r/w, stdout r/w, stderr r/w */
    int rc = envp == NULL ? ENOMEM : 0;
    if (rc == 0 && (pipe(fds) != 0 || pipe(fds + 2) != 0 || pipe(fds + 4) != 0))
        rc = errno;
    if (rc == 0) {
        for (int i = 0; i < 6; i++)
            fcntl(fds[i], F_SETFD, FD_CLOEXEC); /* the other slots' children */
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
        posix_spawn_file_actions_adddup2(&fa, fds[3], 1);
        posix_spawn_file_actions_adddup2(&fa, fds[5], 2);
        /* Its own process group: a terminal's Ctrl-C reaches wfctl only,
         * which decides (first signal: let the job finish). Default signal
         * handling and an empty mask, whatever wfctl has set. */
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t def, none;
        sigemptyset(&def);
        sigaddset(&def, SIGINT);
        sigaddset(&def, SIGTERM);
        sigaddset(&def, SIGPIPE);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(&at, &def);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                          POSIX_SPAWN_SETSIGMASK);
        rc = posix_spawnp(&sl->pid, p->argv[0], &fa, &at, p->argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
    }
    free(envp);
    for (size_t i = 0; i < NJOBVARS; i++)
        free(owned[i]);
    close_fd(&fds[0]);
    close_fd(&fds[3]);
    close_fd(&fds[5]);
    if (rc != 0) {
        close_fd(&fds[1]);
        close_fd(&fds[2]);
        close_fd(&fds[4]);
        if (sl->next_path[0] != '\0')
            unlink(sl->next_path);
        errno = rc;
        return -1;
    }
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    sl->fds[0] = fds[1];
    sl->fds[1] = fds[2];
    sl->fds[2] = fds[4];
    sl->job = j;
    sl->used = 1;
    sl->lease_ms = job_lease_ms(p, j);
    sl->next_extend = now_ms() + sl->lease_ms / 3;
    p->running++;
    return 0;
}

/* Reports a finished job (CompleteJob, or FailJob: retryable unless COMMAND
 * exited with WFCTL_JOB_EXIT_PERMANENT) and frees its slot. */
static void
slot_finish(struct pool *p, struct slot *sl)
{
    const Workflow__V1__Job *j = sl->job;
    struct run_result *r = &sl->r;
    char next_step[256];
    read_next_step(sl->next_path, next_step, sizeof next_step);
    if (sl->lost) {
        report(j, "lease_lost", "the lease was lost: the command was terminated", NULL, 0);
    } else {
        char msg[TAIL_MAX + 256];
        const char *vars = NULL;
        int exited = !r->aborted && WIFEXITED(r->status);
        int permanent = exited && WEXITSTATUS(r->status) == WFCTL_JOB_EXIT_PERMANENT;
        if (exited && WEXITSTATUS(r->status) == 0) {
            if (r->out_overflow) {
                failure_message(r, "command output exceeds 16 MiB", msg, sizeof msg);
            } else {
                char *out = r->out != NULL ? r->out : "";
                while (*out == ' ' || *out == '\n' || *out == '\r' || *out == '\t')
                    out++;
                trim(out);
                char err[256];
                json_t *v = out[0] != '\0' ? json_parse_text(out, err, sizeof err) : NULL;
                if (out[0] == '\0' || json_is_object(v)) {
                    vars = out;
                } else {
                    char why[300];
                    snprintf(why, sizeof why, "command output is not a JSON object%s%s",
                             v == NULL ? ": " : "", v == NULL ? err : "");
                    failure_message(r, why, msg, sizeof msg);
                }
                json_decref(v);
            }
        } else {
            failure_message(r, NULL, msg, sizeof msg);
        }
        wf_client_status st;
        ProtobufCMessage *resp = NULL;
        int rc;
        if (vars != NULL) {
            Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
            req.job_key = j->key;
            req.variables_json = (char *)vars;
            req.next_step = next_step;
            rc = wfctl_call("CompleteJob", &req.base,
                            &workflow__v1__complete_job_response__descriptor, &resp, 0, &st);
        } else {
            Workflow__V1__FailJobRequest req = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
            req.job_key = j->key;
            req.error_message = msg;
            req.retryable_presence_case =
                WORKFLOW__V1__FAIL_JOB_REQUEST__RETRYABLE_PRESENCE_RETRYABLE;
            req.retryable = !permanent; /* said explicitly, also when true (the default) */
            rc = wfctl_call("FailJob", &req.base, &workflow__v1__fail_job_response__descriptor,
                            &resp, 0, &st);
        }
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        report(j,
               vars != NULL ? "completed"
               : permanent  ? "failed_permanently"
                            : "failed",
               vars != NULL ? NULL : msg, vars != NULL ? next_step : NULL, rc == 0);
        if (rc != 0) {
            wfctl_fail(&st);
            p->failed_reports++;
        }
    }
    free(r->out);
    protobuf_c_message_free_unpacked(&sl->job->base, NULL);
    memset(sl, 0, sizeof *sl);
    sl->fds[0] = sl->fds[1] = sl->fds[2] = -1;
    p->running--;
}

/* Renews the lease of a running job; on JOB_LEASE_LOST (the job was given
 * to another worker or ended) terminates its COMMAND, which is then not
 * reported. Other failures are retried a little later. */
static void
slot_extend(struct slot *sl)
{
    Workflow__V1__ExtendJobLeaseRequest req = WORKFLOW__V1__EXTEND_JOB_LEASE_REQUEST__INIT;
    Google__Protobuf__Duration lease = GOOGLE__PROTOBUF__DURATION__INIT;
    lease.seconds = sl->lease_ms / 1000;
    lease.nanos = (int32_t)(sl->lease_ms % 1000) * 1000000;
    req.job_key = sl->job->key;
    req.lease = &lease;
    wf_client_status st;
    ProtobufCMessage *resp = NULL;
    int timeout = (int)(sl->lease_ms / 3 > 1000 ? sl->lease_ms / 3 : 1000);
    long long now = now_ms();
    if (wfctl_call("ExtendJobLease", &req.base,
                   &workflow__v1__extend_job_lease_response__descriptor, &resp, timeout,
                   &st) == 0) {
        protobuf_c_message_free_unpacked(resp, NULL);
        sl->next_extend = now + sl->lease_ms / 3;
        return;
    }
    if (strcmp(st.reason, "JOB_LEASE_LOST") == 0 || strcmp(st.reason, "JOB_NOT_FOUND") == 0) {
        fprintf(stderr, "wfctl jobs: job %s: %s (%s); terminating the command\n", sl->job->id,
                st.message, st.reason);
        sl->lost = 1;
        kill(-sl->pid, SIGKILL);
        close_fd(&sl->fds[0]);
        return;
    }
    wfctl_fail(&st);
    sl->next_extend = now + sl->lease_ms / 10; /* try again well before it runs out */
}

/* Serves the running commands for at most wait_ms: feeds stdin, collects
 * stdout, passes stderr through, renews leases, honours stop requests and
 * reports the commands that ended. */
static void
pool_pump(struct pool *p, int wait_ms)
{
    struct pollfd pf[3 * 64];
    int map[3 * 64][2], n = 0;
    long long now = now_ms();
    for (int i = 0; i < p->n; i++) {
        struct slot *sl = &p->slots[i];
        if (!sl->used || sl->exited)
            continue;
        if (stop_requests >= 2 && sl->killed < stop_requests - 1) {
            kill(-sl->pid, stop_requests >= 3 ? SIGKILL : SIGTERM);
            sl->killed = stop_requests - 1;
            sl->r.aborted = 1;
            close_fd(&sl->fds[0]);
        }
        if (!sl->lost && now >= sl->next_extend)
            slot_extend(sl);
        for (int k = 0; k < 3 && n < 3 * 64; k++)
            if (sl->fds[k] >= 0) {
                pf[n] = (struct pollfd){sl->fds[k], k == 0 ? POLLOUT : POLLIN, 0};
                map[n][0] = i;
                map[n++][1] = k;
            }
    }
    if (n > 0 && poll(pf, (nfds_t)n, wait_ms) > 0) {
        char buf[16384];
        for (int i = 0; i < n; i++) {
            if (pf[i].revents == 0)
                continue;
            struct slot *sl = &p->slots[map[i][0]];
            int *fd = &sl->fds[map[i][1]];
            if (map[i][1] == 0) {
                const char *input = job_input(sl->job);
                size_t inlen = strlen(input);
                ssize_t w =
                    sl->inoff < inlen ? write(*fd, input + sl->inoff, inlen - sl->inoff) : 0;
                if (w > 0)
                    sl->inoff += (size_t)w;
                if (sl->inoff >= inlen || (w < 0 && errno != EAGAIN && errno != EINTR))
                    close_fd(fd); /* all written, or COMMAND closed its stdin */
                continue;
            }
            ssize_t got = read(*fd, buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close_fd(fd);
                continue;
            }
            if (map[i][1] == 1) {
                out_append(&sl->r, buf, (size_t)got);
            } else {
                fwrite(buf, 1, (size_t)got, stderr);
                tail_append(&sl->r, buf, (size_t)got);
            }
        }
    } else if (n == 0 && p->running > 0) {
        struct timespec ts = {0, 20 * 1000000}; /* only waiting for exits */
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < p->n; i++) {
        struct slot *sl = &p->slots[i];
        if (!sl->used)
            continue;
        if (!sl->exited && sl->fds[1] < 0 && sl->fds[2] < 0) {
            close_fd(&sl->fds[0]);
            pid_t w = waitpid(sl->pid, &sl->r.status, WNOHANG);
            if (w == sl->pid || (w < 0 && errno == ECHILD))
                sl->exited = 1;
        }
        if (sl->exited)
            slot_finish(p, sl);
    }
}

/* Serves the running commands until at most `until` of them run. */
static void
pool_drain(struct pool *p, int until)
{
    while (p->running > until)
        pool_pump(p, 250);
}

/* Starts job j, or on failure to start COMMAND says so and frees j: -1. */
static int
pool_start(struct pool *p, Workflow__V1__Job *j)
{
    if (slot_start(p, j) == 0)
        return 0;
    int e = errno;
    wfctl_fail_local("jobs: cannot run %s: %s (job %s left to its lease expiry)", p->argv[0],
                     strerror(e), j->id);
    protobuf_c_message_free_unpacked(&j->base, NULL);
    return -1;
}

/* ---- the loop ------------------------------------------------------------- */

static int
transient(int code)
{
    /* DEADLINE_EXCEEDED, ABORTED, INTERNAL, UNAVAILABLE */
    return code == 4 || code == 10 || code == 13 || code == 14;
}

/* The stream loop: jobs as the server pushes them, up to --concurrency
 * commands at once; the stream's credit is --max (default: --concurrency),
 * so the server pushes a job whenever one is reported. */
static int
stream_loop(const Workflow__V1__ActivateJobsRequest *areq, struct pool *p)
{
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = areq->job_type;
    req.worker = areq->worker;
    req.lease = areq->lease;
    req.credit = areq->max_jobs > 0 ? areq->max_jobs : p->n;
    wf_client_call_opts o = {0};
    o.no_deadline = 1;
    int rc = WFCTL_OK, backoff = 1, fatal = 0;
    /* Jobs pushed while every slot is busy (a credit above --concurrency). */
    Workflow__V1__Job **held = calloc((size_t)req.credit + 1, sizeof *held);
    size_t nheld = 0;
    if (held == NULL)
        return wfctl_fail_local("out of memory");
    while (!stop_requests && !fatal) {
        wf_client_stream *s = wf_client_stream_jobs(g_wfctl.client, &req, &o);
        wf_client_status st;
        memset(&st, 0, sizeof st);
        while (s != NULL && !stop_requests && !fatal) {
            while (nheld > 0 && p->running < p->n) {
                Workflow__V1__Job *j = held[0];
                memmove(held, held + 1, --nheld * sizeof *held);
                if (pool_start(p, j) != 0)
                    fatal = 1;
            }
            if (fatal)
                break;
            if (p->running >= p->n || nheld >= (size_t)req.credit) {
                pool_pump(p, 250);
                continue;
            }
            Workflow__V1__Job *job = NULL;
            int r = wf_client_next_job(s, p->running > 0 ? 20 : 250, &job, &st);
            if (p->running > 0)
                pool_pump(p, 20);
            if (r < 0)
                continue;
            if (r == 0)
                break;
            backoff = 1;
            held[nheld++] = job;
        }
        wf_client_stream_close(s);
        /* The commands that run finish (a first stop request lets them). */
        while (nheld > 0 && p->running < p->n && !stop_requests && !fatal) {
            Workflow__V1__Job *j = held[0];
            memmove(held, held + 1, --nheld * sizeof *held);
            if (pool_start(p, j) != 0)
                fatal = 1;
            pool_drain(p, p->n - 1);
        }
        pool_drain(p, 0);
        if (stop_requests || fatal)
            break;
        if (s == NULL) {
            st.code = 14;
            snprintf(st.message, sizeof st.message, "could not open the job stream");
        }
        /* A server going away ends streams with UNAVAILABLE (or CANCELLED
         * when the call raced its shutdown): reopen. */
        if (st.code != 0 && st.code != 1 && !transient(st.code)) {
            rc = wfctl_fail(&st);
            break;
        }
        if (st.code != 0)
            wfctl_fail(&st);
        fprintf(stderr, "wfctl jobs: the job stream ended; reopening in %ds\n", backoff);
        nap(backoff);
        backoff = backoff < 30 ? backoff * 2 : 30;
    }
    pool_drain(p, 0);
    if (nheld > 0)
        fprintf(stderr, "wfctl jobs: %zu pushed job(s) left to their lease expiry\n", nheld);
    for (size_t i = 0; i < nheld; i++)
        protobuf_c_message_free_unpacked(&held[i]->base, NULL);
    free(held);
    return fatal ? WFCTL_FAILED : rc;
}

int
wfctl_jobs(struct wfctl_args *a)
{
    if (a->nrest == 0)
        return wfctl_usage_error("jobs: missing COMMAND (wfctl jobs TYPE [options] -- COMMAND "
                                 "[ARGS...])");
    json_t *cj = json_object_get(a->local, "concurrency");
    long long concurrency = cj != NULL ? json_integer_value(cj) : 1;
    if (concurrency < 1 || concurrency > 64)
        return wfctl_usage_error("--concurrency: %lld is not between 1 and 64", concurrency);
    if (json_object_get(a->req, "wait") == NULL)
        json_object_set_new(a->req, "wait", json_string("30s"));
    if (json_object_get(a->req, "worker") == NULL) {
        char host[64] = "host", name[128];
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(name, sizeof name, "wfctl-%s-%ld", host, (long)getpid());
        json_object_set_new(a->req, "worker", json_string(name));
    }
    char err[1024];
    ProtobufCMessage *m = pbjson_to_message(&workflow__v1__activate_jobs_request__descriptor,
                                            a->req, "", err, sizeof err);
    if (m == NULL)
        return wfctl_usage_error("jobs: %s", err);
    Workflow__V1__ActivateJobsRequest *req = (void *)m;
    long long wait_ms = req->wait->seconds * 1000 + req->wait->nanos / 1000000;
    int once = json_is_true(json_object_get(a->local, "once"));
    struct pool p = {0};
    p.n = (int)concurrency;
    p.argv = a->rest;
    if (req->lease != NULL)
        p.lease_ms = req->lease->seconds * 1000 + req->lease->nanos / 1000000;
    p.slots = calloc((size_t)p.n, sizeof *p.slots);
    if (p.slots == NULL) {
        protobuf_c_message_free_unpacked(m, NULL);
        return wfctl_fail_local("out of memory");
    }

    struct sigaction sa, old_int, old_term, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a signal interrupts waits */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    stop_requests = 0;

    int rc = WFCTL_OK;
    if (!once) {
        rc = stream_loop(req, &p);
        goto done;
    }
    if (req->max_jobs <= 0)
        req->max_jobs = p.n;
    /* One activation: long-poll in slices until jobs come, the wait passes,
     * or a stop is requested. */
    Workflow__V1__ActivateJobsResponse *resp = NULL;
    long long deadline = now_ms() + wait_ms;
    for (;;) {
        long long left = deadline - now_ms();
        long long slice = left < 0 ? 0 : left > SLICE_MS ? SLICE_MS : left;
        req->wait->seconds = slice / 1000;
        req->wait->nanos = (int32_t)(slice % 1000) * 1000000;
        int base = g_wfctl.timeout_ms > 0 ? g_wfctl.timeout_ms : 10000;
        wf_client_status st;
        ProtobufCMessage *r = NULL;
        if (wfctl_call("ActivateJobs", &req->base,
                       &workflow__v1__activate_jobs_response__descriptor, &r, (int)slice + base,
                       &st) != 0) {
            rc = wfctl_fail(&st);
            goto done;
        }
        resp = (void *)r;
        if (resp->n_jobs > 0 || stop_requests || now_ms() >= deadline)
            break;
        protobuf_c_message_free_unpacked(r, NULL);
        resp = NULL;
    }
    /* The batch, up to --concurrency commands at once; the slots take over
     * the jobs from the response. */
    size_t njobs = resp->n_jobs, next = 0;
    for (; next < njobs; next++) {
        pool_drain(&p, p.n - 1);
        if (stop_requests >= 2)
            break;
        Workflow__V1__Job *j = resp->jobs[next];
        resp->jobs[next] = NULL;
        if (pool_start(&p, j) != 0) {
            rc = WFCTL_FAILED;
            next++;
            break;
        }
    }
    pool_drain(&p, 0);
    if (next < njobs)
        fprintf(stderr, "wfctl jobs: %zu activated job(s) left to their lease expiry\n",
                njobs - next);
    {
        size_t k = 0; /* only the jobs not taken are freed with resp */
        for (size_t i = next; i < njobs; i++)
            resp->jobs[k++] = resp->jobs[i];
        resp->n_jobs = k;
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    if (p.failed_reports > 0)
        rc = WFCTL_FAILED;
    if (njobs == 0 && !g_wfctl.json)
        printf("no %s jobs activated\n", req->job_type);
done:
    if (stop_requests)
        fprintf(stderr, "wfctl jobs: stopped\n");
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    free(p.slots);
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}
