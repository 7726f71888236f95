/*
 * pg/errors.c: SQLSTATE -> wf_code, in one place.
 *
 * Owns the decision of what a Postgres failure means to a client:
 * connection trouble, server shutdown and a server that takes no writes
 * (a standby) are STORE_UNAVAILABLE (retry),
 * serialization failures, deadlocks and unique violations are CONFLICT
 * (retry), statement_timeout is DEADLINE_EXCEEDED. The SQLSTATE and the
 * server's primary message (never its DETAIL, which quotes row values) go
 * to the log only, unique violations at debug level; err->msg never
 * carries library or SQL text. Must not: decide anything about the connection beyond "broken".
 */
#include "pg/pool.h"

#include <string.h>

#include "wf_log.h"

static bool
starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

wf_code
wf_store_pg__map_error(PGconn *pg, const PGresult *res, const char *stmt, const char *what,
                       bool quiet, bool *broken, wf_error *err)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    /* The primary message only: the DETAIL of a constraint violation
     * quotes the row's key or the whole failing row (tenant, signal ids,
     * request ids, variables), which is the callers' data, not the log's. */
    const char *text = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (text == NULL || text[0] == '\0')
        text = pg != NULL ? PQerrorMessage(pg) : "no connection";
    bool conn_bad = pg == NULL || PQstatus(pg) != CONNECTION_OK;
    if (state == NULL)
        state = "";

    wf_code code;
    if (conn_bad || state[0] == '\0' || starts(state, "08") || starts(state, "57P") ||
        starts(state, "53")) {
        /* 08: connection exception; 57P01-03: admin/crash shutdown,
         * cannot connect now; 53: out of resources (too many
         * connections, disk full). No SQLSTATE at all means libpq lost
         * the connection. */
        *broken = true;
        code = wf_error_set(err, WF_E_STORE_UNAVAILABLE, "could not reach the database");
    } else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
               strcmp(state, "55P03") == 0 || strcmp(state, "23505") == 0) {
        /* Serialization failure, deadlock, lock not available, unique
         * violation: another transaction won a race; retrying is safe. */
        code = wf_error_set(err, WF_E_CONFLICT,
                            "could not write %s: a concurrent transaction interfered", what);
    } else if (strcmp(state, "22012") == 0 && strcmp(stmt, "update_instance_checked") == 0) {
        /* The checked instance update divides by the rows it updated:
         * none means the version it names is stale (pg/store.c). */
        code = wf_error_set(err, WF_E_CONFLICT, "%s was changed concurrently", what);
    } else if (strcmp(state, "25006") == 0) {
        /* read_only_sql_transaction: the session is on a server that
         * takes no writes (a standby, or a primary demoted or made
         * read-only during a failover). Dropping the connection lets the
         * next one look for the primary again (target_session_attrs, a
         * name that moved); the call may be retried. */
        *broken = true;
        code = wf_error_set(err, WF_E_STORE_UNAVAILABLE,
                            "could not write to the database: the server is read-only");
    } else if (strcmp(state, "57014") == 0) {
        /* statement_timeout, set from the call's deadline. */
        code = wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for the store");
    } else if (starts(state, "22")) {
        code = wf_error_set(err, WF_E_INVALID_ARGUMENT, "invalid value for %s", what);
    } else {
        code = wf_error_set(err, WF_E_INTERNAL, "could not access %s", what);
    }
    /* A unique violation is a race the engine expects to lose now and
     * then (a signal id or a request id recorded first by another call, a
     * version deployed concurrently): it re-reads and answers, so the
     * failure is worth a debug line only. */
    wf_log_level level = code == WF_E_INTERNAL         ? WF_LOG_ERROR
                         : strcmp(state, "23505") == 0 ? WF_LOG_DEBUG
                                                       : WF_LOG_WARN;
    WF_LOG(quiet ? WF_LOG_DEBUG : level, "db_error", "statement=%s sqlstate=%s code=%s detail=%s",
           stmt, state[0] ? state : "none", wf_code_reason(code), text);
    return code;
}
