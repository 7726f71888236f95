/*
 * console_html: escaping and the page frame. Every value a page shows goes
 * through wf_console__esc (text and attributes); ids in links through
 * wf_console__url.
 */
#include <string.h>
#include <time.h>

#include "console_int.h"
#include "wf_id.h"

void
wf_console__esc(FILE *out, const char *s)
{
    if (s == NULL)
        return;
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

void
wf_console__url(FILE *out, const char *s)
{
    if (s == NULL)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~')
            fputc(*p, out);
        else
            fprintf(out, "%%%02X", *p);
    }
}

bool
wf_console__own_path(const char *path)
{
    if (path[0] != '/' || path[1] == '/' || path[1] == '\\')
        return false;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return false;
    return true;
}

void
wf_console__json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void
wf_console__enum(FILE *out, const ProtobufCEnumDescriptor *d, int v)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, v);
    if (ev == NULL) {
        fprintf(out, "%d", v);
        return;
    }
    /* "INSTANCE_STATUS_RUNNING" less the enum's prefix: the name of the
     * UNSPECIFIED value (index 0) up to "UNSPECIFIED". */
    const char *name = ev->name;
    const char *zero = d->values[0].name;
    const char *u = strstr(zero, "UNSPECIFIED");
    size_t plen = u != NULL ? (size_t)(u - zero) : 0;
    if (plen > 0 && strncmp(name, zero, plen) == 0 && name[plen] != '\0')
        name += plen;
    wf_console__esc(out, name);
}

void
wf_console__time(FILE *out, const Google__Protobuf__Timestamp *t)
{
    if (t == NULL) {
        fputs("—", out);
        return;
    }
    time_t s = (time_t)t->seconds;
    struct tm tm;
    char buf[32];
    gmtime_r(&s, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fputs(buf, out);
}

void
wf_console__page_begin(wf_console__ctx *x, const char *title)
{
    FILE *o = x->out;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<link rel=\"stylesheet\" href=\"/static/console.css\">"
          "<script src=\"/static/console.js\" defer></script><title>",
          o);
    wf_console__esc(o, title);
    fputs(" · workflow console</title></head><body>\n<header><nav>"
          "<a href=\"/definitions\">Definitions</a> <a href=\"/instances\">Instances</a> "
          "<a href=\"/incidents\">Incidents</a> <a href=\"/inbox\">Inbox</a> "
          "<a href=\"/batches\">Batches</a></nav>"
          "<div class=\"who\">tenant <b>",
          o);
    wf_console__esc(o, x->tenant);
    fputs("</b> · ", o);
    if (x->actor != NULL) {
        fputs("acting as <b id=\"actor\">", o);
        wf_console__esc(o, x->actor);
        fputs("</b> as <b id=\"role\">", o);
        fputs(wf_console__role_name(x->role), o);
        fputs("</b> ", o);
        wf_console__form_begin(x, "/logout", "inline");
        fputs("<button type=\"submit\">Log out</button></form>", o);
    } else {
        fputs("<a href=\"/login\">name an actor to act</a>", o);
    }
    fputs("</div></header>\n<main>\n<h1>", o);
    wf_console__esc(o, title);
    fputs("</h1>\n", o);
}

bool
wf_console__may(const wf_console__ctx *x, const char *action)
{
    return x->csrf != NULL && x->role >= wf_console__action_role(action);
}

void
wf_console__page_end(wf_console__ctx *x)
{
    fputs("</main></body></html>\n", x->out);
}

void
wf_console__page_error(wf_console__ctx *x, const wf_error *err)
{
    switch (err->code) {
    case WF_E_DEFINITION_NOT_FOUND:
    case WF_E_INSTANCE_NOT_FOUND:
    case WF_E_TASK_NOT_FOUND:
    case WF_E_JOB_NOT_FOUND:
    case WF_E_BATCH_OPERATION_NOT_FOUND:
        x->status = 404;
        break;
    case WF_E_STORE_UNAVAILABLE:
    case WF_E_OVERLOADED:
    case WF_E_BULKHEAD_FULL:
    case WF_E_DEADLINE_EXCEEDED:
        x->status = 503;
        break;
    case WF_E_INTERNAL:
    case WF_E_NOMEM:
        x->status = 500;
        break;
    default:
        x->status = 409;
    }
    fprintf(x->out, "<p class=\"error\">Refused: <code class=\"reason\">");
    wf_console__esc(x->out, wf_code_reason(err->code));
    fputs("</code> ", x->out);
    wf_console__esc(x->out, err->msg);
    fputs("</p>\n", x->out);
}

void
wf_console__form_begin(wf_console__ctx *x, const char *action, const char *cls)
{
    char rid[WF_UUID_LEN + 1];
    wf_uuid7(rid);
    FILE *o = x->out;
    fputs("<form method=\"post\" action=\"", o);
    wf_console__esc(o, action);
    fputs("\" class=\"", o);
    wf_console__esc(o, cls);
    fputs("\"><input type=\"hidden\" name=\"csrf\" value=\"", o);
    wf_console__esc(o, x->csrf);
    fputs("\"><input type=\"hidden\" name=\"request_id\" value=\"", o);
    wf_console__esc(o, rid);
    fputs("\">", o);
}
