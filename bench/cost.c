/*
 * What a measured phase cost: CPU of workflowd, of Postgres (the postmaster
 * and its children, with the ones already reaped) and of the load
 * generator, read from /proc and getrusage at both ends of the phase; the
 * server's own count of its calls' round trips, statements and
 * transactions, scraped from its /metrics; and the commits Postgres
 * counted (pg_stat_database.xact_commit). Every figure is divided by the
 * units the phase did.
 *
 * Postgres publishes its counts lazily (a backend flushes them at most
 * once a second while busy), so the commits are counted between two
 * samples taken while the load runs, over the units done between the same
 * two samples, rather than from the ends of the phase.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "bench.h"

/* Reads utime + stime (and, when children is not NULL, cutime + cstime)
 * of pid in clock ticks, and its parent's pid; -1 when unreadable. */
static long long
proc_ticks(int pid, long long *children, int *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name is in parentheses and may hold spaces: the fields
     * after it start at the last ')'. */
    const char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    char state;
    int pp;
    unsigned long long ut, st;
    long long cut, cst;
    if (sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &state, &pp,
               &ut, &st, &cut, &cst) != 6)
        return -1;
    if (ppid != NULL)
        *ppid = pp;
    if (children != NULL)
        *children = cut + cst;
    return (long long)(ut + st);
}

/* The postmaster, its live children, and (through its cutime) the children
 * it has reaped: every backend that ran, ended or not. */
static long long
postgres_ticks(int pm)
{
    long long reaped = 0;
    long long total = proc_ticks(pm, &reaped, NULL);
    if (total < 0)
        return -1;
    total += reaped;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        int pid = atoi(e->d_name), ppid = 0;
        if (pid == pm)
            continue;
        long long t = proc_ticks(pid, NULL, &ppid);
        if (t >= 0 && ppid == pm)
            total += t;
    }
    closedir(d);
    return total;
}

static double
tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void
cost_mark_cpu(const bench *b, cost_mark *m)
{
    m->t = bench_now();
    m->srv_ticks = b->server_pid > 0 ? proc_ticks(b->server_pid, NULL, NULL) : -1;
    m->pg_ticks = b->pg_pid > 0 ? postgres_ticks(b->pg_pid) : -1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    m->gen_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
    getrusage(RUSAGE_CHILDREN, &ru);
    m->child_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

/* ---- /metrics ------------------------------------------------------------ */

/* GET /metrics over HTTP/1.0 from b->metrics (127.0.0.1:PORT); the body in
 * a malloc'd string, or NULL. */
static char *
scrape(const bench *b)
{
    const char *colon = strrchr(b->metrics, ':');
    if (colon == NULL)
        return NULL;
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - b->metrics), b->metrics);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return NULL;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char *body = NULL;
    size_t cap = 1 << 16, len = 0, max = 16 << 20;
    char req[128];
    int rl = snprintf(req, sizeof req, "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n", b->metrics);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl)
        goto out;
    body = malloc(cap);
    /* Bounded by the cap on the size and by the receive timeout. */
    while (body != NULL) {
        if (len + 1 >= cap) {
            char *nb = cap * 2 <= max ? realloc(body, cap * 2) : NULL;
            if (nb == NULL) {
                free(body);
                body = NULL;
                break;
            }
            body = nb;
            cap *= 2;
        }
        ssize_t n = recv(fd, body + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(body);
            body = NULL;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (body != NULL) {
        body[len] = '\0';
        if (strncmp(body, "HTTP/1.", 7) != 0 || strncmp(body + 8, " 200", 4) != 0) {
            free(body);
            body = NULL;
        }
    }
out:
    close(fd);
    return body;
}

/* The value of the unlabelled series name in exposition text; -1. */
static long long
metric(const char *text, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
            return atoll(p + nl + 1);
    return -1;
}

void
cost_mark_server(const bench *b, cost_mark *m)
{
    m->rt = m->stmts = m->txns = -1;
    if (b->metrics == NULL)
        return;
    char *text = scrape(b);
    if (text == NULL)
        return;
    m->rt = metric(text, "workflow_db_round_trips_total");
    m->stmts = metric(text, "workflow_db_statements_total");
    m->txns = metric(text, "workflow_db_transactions_total");
    free(text);
}

/* ---- Postgres's commits ---------------------------------------------------- */

struct pg_conn *
cost_pg_open(const bench *b)
{
    if (b->dsn == NULL)
        return NULL;
    PGconn *c = PQconnectdb(b->dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

void
cost_pg_close(struct pg_conn *c)
{
    if (c != NULL)
        PQfinish(c);
}

long long
cost_pg_value(struct pg_conn *c, const char *sql)
{
    if (c == NULL)
        return -1;
    PGresult *r = PQexec(c, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) >= 1)
        v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

long long
cost_pg_commits(struct pg_conn *c)
{
    return cost_pg_value(c, "SELECT xact_commit FROM pg_stat_database "
                            "WHERE datname = current_database()");
}

void
cost_commit_sample(cost_window *w, double t, uint64_t units, long long commits, int own)
{
    if (commits < 0)
        return;
    if (w->n == 0) {
        w->t0 = t;
        w->u0 = units;
        w->c0 = commits;
    } else {
        w->own += own;
    }
    w->t1 = t;
    w->u1 = units;
    w->c1 = commits;
    w->n++;
}

/* ---- per unit ------------------------------------------------------------- */

static double
per(long long a, long long z, double scale, uint64_t units)
{
    if (a < 0 || z < 0 || z < a || units == 0)
        return -1;
    return (double)(z - a) * scale / (double)units;
}

void
cost_per_unit(const cost_mark *a, const cost_mark *z, uint64_t units, const cost_window *w,
              cost *out)
{
    double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);
    memset(out, 0, sizeof *out);
    out->has = units > 0;
    out->srv_us = per(a->srv_ticks, z->srv_ticks, tick_us, units);
    out->pg_us = per(a->pg_ticks, z->pg_ticks, tick_us, units);
    out->gen_us = units > 0 ? (z->gen_s - a->gen_s) * 1e6 / (double)units : -1;
    out->rt = per(a->rt, z->rt, 1, units);
    out->stmts = per(a->stmts, z->stmts, 1, units);
    out->txns = per(a->txns, z->txns, 1, units);
    out->commits = -1;
    /* Less the harness's own queries between the samples. */
    if (w != NULL && w->n >= 2 && w->t1 - w->t0 >= 0.9 && w->u1 > w->u0 && w->c1 >= w->c0)
        out->commits = (double)(w->c1 - w->c0 - w->own) / (double)(w->u1 - w->u0);
}

void
cost_scale(cost *c, double f)
{
    double *v[] = {&c->srv_us, &c->pg_us, &c->gen_us, &c->rt, &c->stmts, &c->txns, &c->commits};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (*v[i] >= 0)
            *v[i] *= f;
}
