/*
 * wfctl_jobs: `wfctl jobs TYPE -- COMMAND [ARGS...]`, a job worker.
 *
 * Loop: a StreamActivatedJobs stream (credit --max) pushes jobs; for each
 * job run COMMAND with the job's variables on stdin and the job's identity
 * in the environment; exit 0 with a JSON object (or nothing) on stdout
 * completes the job with those variables, anything else fails it
 * (retryable) with the tail of COMMAND's stderr. Either report gives the
 * stream its credit back. The stream is read in waits of at most 250 ms so
 * that SIGINT and SIGTERM are honoured promptly: the first finishes the
 * current job and exits 0, a second terminates COMMAND (and a third kills
 * it). With --once: one ActivateJobs long poll (in slices of at most 5 s)
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

/* Runs argv with envp, feeding input on stdin; collects stdout, passes
 * stderr through and keeps its tail. -1 (errno set) when it cannot start. */
static int
run_command(char **argv, char **envp, const char *input, struct run_result *r)
{
    int fds[6] = {-1, -1, -1, -1, -1, -1}; /* stdin r/w, stdout r/w, stderr r/w */
    if (pipe(fds) != 0 || pipe(fds + 2) != 0 || pipe(fds + 4) != 0) {
        int e = errno;
        for (int i = 0; i < 6; i++)
            close_fd(&fds[i]);
        errno = e;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fds[3], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[5], 2);
    for (int i = 0; i < 6; i++)
        posix_spawn_file_actions_addclose(&fa, fds[i]);
    /* Its own process group: a terminal's Ctrl-C reaches wfctl only, which
     * decides (first signal: let the job finish). Default signal handling
     * and an empty mask, whatever wfctl has set. */
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
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close_fd(&fds[0]);
    close_fd(&fds[3]);
    close_fd(&fds[5]);
    if (rc != 0) {
        close_fd(&fds[1]);
        close_fd(&fds[2]);
        close_fd(&fds[4]);
        errno = rc;
        return -1;
    }
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    size_t inlen = strlen(input), inoff = 0;
    int killed = 0;
    char buf[16384];
    while (fds[1] >= 0 || fds[2] >= 0 || fds[4] >= 0) {
        if (stop_requests >= 2 && killed < stop_requests - 1) {
            kill(-pid, stop_requests >= 3 ? SIGKILL : SIGTERM);
            killed = stop_requests - 1;
            r->aborted = 1;
            close_fd(&fds[1]);
        }
        struct pollfd p[3];
        int map[3], n = 0;
        if (fds[1] >= 0) {
            p[n] = (struct pollfd){fds[1], POLLOUT, 0};
            map[n++] = 1;
        }
        if (fds[2] >= 0) {
            p[n] = (struct pollfd){fds[2], POLLIN, 0};
            map[n++] = 2;
        }
        if (fds[4] >= 0) {
            p[n] = (struct pollfd){fds[4], POLLIN, 0};
            map[n++] = 4;
        }
        if (poll(p, (nfds_t)n, 250) <= 0)
            continue; /* timeout or EINTR: look at stop_requests again */
        for (int i = 0; i < n; i++) {
            if (p[i].revents == 0)
                continue;
            int *fd = &fds[map[i]];
            if (map[i] == 1) {
                ssize_t w = inoff < inlen ? write(*fd, input + inoff, inlen - inoff) : 0;
                if (w > 0)
                    inoff += (size_t)w;
                if (inoff >= inlen || (w < 0 && errno != EAGAIN && errno != EINTR))
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
            if (map[i] == 2) {
                out_append(r, buf, (size_t)got);
            } else {
                fwrite(buf, 1, (size_t)got, stderr);
                tail_append(r, buf, (size_t)got);
            }
        }
    }
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
        if (stop_requests >= 2 && killed < stop_requests - 1) {
            kill(-pid, stop_requests >= 3 ? SIGKILL : SIGTERM);
            killed = stop_requests - 1;
            r->aborted = 1;
        }
    return 0;
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

/* Runs one job and reports it. 0 done, 1 the report failed, -1 COMMAND
 * cannot be started (fatal for the worker). */
static int
handle_job(const Workflow__V1__Job *j, char **argv)
{
    char *owned[NJOBVARS] = {0};
    char next_path[4096], next_step[256];
    next_step_file(next_path, sizeof next_path);
    char **env = job_env(j, next_path, owned);
    struct run_result r;
    memset(&r, 0, sizeof r);
    int started = env != NULL
                      ? run_command(argv, env, j->variables_json[0] ? j->variables_json : "{}", &r)
                      : -1;
    int e = errno;
    free(env);
    for (size_t i = 0; i < NJOBVARS; i++)
        free(owned[i]);
    read_next_step(next_path, next_step, sizeof next_step);
    if (started != 0) {
        fprintf(stderr, "wfctl jobs: cannot run %s: %s (job %s left to its lease expiry)\n",
                argv[0], strerror(e), j->id);
        free(r.out);
        return -1;
    }

    char msg[TAIL_MAX + 256];
    const char *vars = NULL;
    if (!r.aborted && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
        if (r.out_overflow) {
            failure_message(&r, "command output exceeds 16 MiB", msg, sizeof msg);
        } else {
            char *out = r.out != NULL ? r.out : "";
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
                failure_message(&r, why, msg, sizeof msg);
            }
            json_decref(v);
        }
    } else {
        failure_message(&r, NULL, msg, sizeof msg);
    }

    wf_client_status st;
    ProtobufCMessage *resp = NULL;
    int rc;
    if (vars != NULL) {
        Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
        req.job_key = j->key;
        req.variables_json = (char *)vars;
        req.next_step = next_step;
        rc = wfctl_call("CompleteJob", &req.base, &workflow__v1__complete_job_response__descriptor,
                        &resp, 0, &st);
    } else {
        Workflow__V1__FailJobRequest req = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
        req.job_key = j->key;
        req.error_message = msg;
        req.retryable_presence_case = WORKFLOW__V1__FAIL_JOB_REQUEST__RETRYABLE_PRESENCE_RETRYABLE;
        req.retryable = 1; /* the default, said explicitly */
        rc = wfctl_call("FailJob", &req.base, &workflow__v1__fail_job_response__descriptor, &resp,
                        0, &st);
    }
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    report(j, vars != NULL ? "completed" : "failed", vars != NULL ? NULL : msg,
           vars != NULL ? next_step : NULL, rc == 0);
    free(r.out);
    if (rc != 0) {
        wfctl_fail(&st);
        return 1;
    }
    return 0;
}

/* ---- the loop ------------------------------------------------------------- */

static int
transient(int code)
{
    /* DEADLINE_EXCEEDED, ABORTED, INTERNAL, UNAVAILABLE */
    return code == 4 || code == 10 || code == 13 || code == 14;
}

/* The stream loop: jobs as the server pushes them, one after another. */
static int
stream_loop(const Workflow__V1__ActivateJobsRequest *areq, char **argv)
{
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = areq->job_type;
    req.worker = areq->worker;
    req.lease = areq->lease;
    req.credit = areq->max_jobs > 0 ? areq->max_jobs : 1;
    wf_client_call_opts o = {0};
    o.no_deadline = 1;
    int rc = WFCTL_OK, backoff = 1;
    while (!stop_requests) {
        wf_client_stream *s = wf_client_stream_jobs(g_wfctl.client, &req, &o);
        wf_client_status st;
        memset(&st, 0, sizeof st);
        int r = -1;
        Workflow__V1__Job *job = NULL;
        while (s != NULL && !stop_requests) {
            r = wf_client_next_job(s, 250, &job, &st);
            if (r < 0)
                continue;
            if (r == 0)
                break;
            backoff = 1;
            int h = handle_job(job, argv);
            protobuf_c_message_free_unpacked(&job->base, NULL);
            if (h < 0) {
                wf_client_stream_close(s);
                return WFCTL_FAILED;
            }
        }
        wf_client_stream_close(s);
        if (stop_requests)
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
    return rc;
}

int
wfctl_jobs(struct wfctl_args *a)
{
    if (a->nrest == 0)
        return wfctl_usage_error("jobs: missing COMMAND (wfctl jobs TYPE [options] -- COMMAND "
                                 "[ARGS...])");
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

    struct sigaction sa, old_int, old_term, old_pipe;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a signal interrupts waits */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    stop_requests = 0;

    int rc = WFCTL_OK, backoff = 1;
    if (!once) {
        rc = stream_loop(req, a->rest);
        goto done;
    }
    while (!stop_requests) {
        /* One activation: long-poll in slices until jobs come, the wait
         * passes, or a stop is requested. */
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
                if (once || !transient(st.code)) {
                    rc = wfctl_fail(&st);
                    goto done;
                }
                wfctl_fail(&st);
                fprintf(stderr, "wfctl jobs: retrying in %ds\n", backoff);
                nap(backoff);
                backoff = backoff < 30 ? backoff * 2 : 30;
                if (stop_requests)
                    goto done;
                continue;
            }
            backoff = 1;
            resp = (void *)r;
            if (resp->n_jobs > 0 || stop_requests || now_ms() >= deadline)
                break;
            protobuf_c_message_free_unpacked(r, NULL);
            resp = NULL;
        }
        size_t njobs = resp->n_jobs;
        for (size_t i = 0; i < njobs; i++) {
            if (stop_requests >= 2) {
                fprintf(stderr,
                        "wfctl jobs: stopped; %zu activated job(s) left to their lease "
                        "expiry\n",
                        njobs - i);
                break;
            }
            int h = handle_job(resp->jobs[i], a->rest);
            if (h < 0) {
                if (i + 1 < njobs)
                    fprintf(stderr,
                            "wfctl jobs: %zu more activated job(s) left to their lease "
                            "expiry\n",
                            njobs - i - 1);
                rc = WFCTL_FAILED;
                protobuf_c_message_free_unpacked(&resp->base, NULL);
                goto done;
            }
            if (h > 0)
                rc = WFCTL_FAILED;
        }
        protobuf_c_message_free_unpacked(&resp->base, NULL);
        if (once) {
            if (njobs == 0 && !g_wfctl.json)
                printf("no %s jobs activated\n", req->job_type);
            break;
        }
        if (njobs == 0 && wait_ms == 0)
            nap(1); /* no long poll: do not spin */
        if (!once)
            rc = WFCTL_OK; /* a failed report does not stop the loop */
    }
done:
    if (stop_requests)
        fprintf(stderr, "wfctl jobs: stopped\n");
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}
