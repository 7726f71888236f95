/*
 * wfctl_json: protobuf-c messages <-> JSON by reflection over the message
 * descriptors, so that every request and response converts with the same
 * code (deploy files, --json output, requests built from flags).
 *
 * The mapping follows proto3 JSON with the choices a CLI wants: proto field
 * names (lowerCamelCase accepted on input), enum values without their type
 * prefix, every scalar printed even when zero, and *_json string fields
 * embedded as JSON values.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "wfctl.h"

#define TIMESTAMP_NAME "google.protobuf.Timestamp"
#define DURATION_NAME "google.protobuf.Duration"

static int
is_message(const ProtobufCMessageDescriptor *d, const char *full_name)
{
    return d != NULL && strcmp(d->name, full_name) == 0;
}

/* A map field is a repeated "XxxEntry" message with fields key and value. */
static int
is_map_entry(const ProtobufCMessageDescriptor *d)
{
    size_t n = strlen(d->name);
    return n > 5 && strcmp(d->name + n - 5, "Entry") == 0 && d->n_fields == 2 &&
           strcmp(d->fields[0].name, "key") == 0 && strcmp(d->fields[1].name, "value") == 0;
}

static int
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ---- times and durations ------------------------------------------------- */

void
wfctl_format_time(int64_t sec, int32_t nanos, int frac, char *buf, size_t n)
{
    time_t t = (time_t)sec;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) {
        snprintf(buf, n, "%" PRId64, sec);
        return;
    }
    size_t len = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac && nanos > 0 && len < n) {
        if (nanos % 1000000 == 0)
            len += (size_t)snprintf(buf + len, n - len, ".%03d", (int)(nanos / 1000000));
        else if (nanos % 1000 == 0)
            len += (size_t)snprintf(buf + len, n - len, ".%06d", (int)(nanos / 1000));
        else
            len += (size_t)snprintf(buf + len, n - len, ".%09d", (int)nanos);
    }
    if (len < n)
        snprintf(buf + len, n - len, "Z");
}

void
wfctl_format_duration(int64_t sec, int32_t nanos, char *buf, size_t n)
{
    const char *sign = sec < 0 || nanos < 0 ? "-" : "";
    uint64_t s = sec < 0 ? (uint64_t)0 - (uint64_t)sec : (uint64_t)sec;
    int32_t ns = nanos < 0 ? -nanos : nanos;
    if (ns == 0)
        snprintf(buf, n, "%s%" PRIu64 "s", sign, s);
    else if (ns % 1000000 == 0)
        snprintf(buf, n, "%s%" PRIu64 ".%03ds", sign, s, (int)(ns / 1000000));
    else if (ns % 1000 == 0)
        snprintf(buf, n, "%s%" PRIu64 ".%06ds", sign, s, (int)(ns / 1000));
    else
        snprintf(buf, n, "%s%" PRIu64 ".%09ds", sign, s, (int)ns);
}

/* RFC 3339: 2024-05-01T12:00:00Z, 2024-05-01T12:00:00.5+02:00. */
int
wfctl_parse_time(const char *s, int64_t *sec, int32_t *nanos)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int consumed = 0;
    char sep;
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 7 ||
        (sep != 'T' && sep != 't' && sep != ' '))
        return -1;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    const char *p = s + consumed;
    int32_t ns = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 9)
                ns = ns * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            ns *= 10;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, n = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5 || oh > 23 || om > 59)
            return -1;
        offset = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *sec = (int64_t)timegm(&tm) - offset;
    *nanos = ns;
    return 0;
}

/* "30" (seconds), "1.5s", "500ms", "5m", "1h30m", "2d"; a leading '-' is
 * kept (the server rejects negative durations). */
int
wfctl_parse_duration(const char *s, int64_t *sec, int32_t *nanos)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1},   {"us", 1e3},   {"ms", 1e6},   {"s", 1e9},
                 {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    if (*s == '\0')
        return -1;
    double total = 0;
    while (*s != '\0') {
        if (!isdigit((unsigned char)*s) && *s != '.')
            return -1;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno != 0)
            return -1;
        s = end;
        size_t ulen = 0;
        while (isalpha((unsigned char)s[ulen]))
            ulen++;
        double unit = 0;
        if (ulen == 0) {
            if (*s != '\0' || total != 0)
                return -1; /* a bare number stands alone: seconds */
            unit = 1e9;
        }
        for (size_t i = 0; ulen > 0 && i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].unit) == ulen && strncmp(units[i].unit, s, ulen) == 0)
                unit = units[i].ns;
        if (unit == 0)
            return -1;
        total += v * unit;
        s += ulen;
    }
    if (total > 9.2e18)
        return -1;
    int64_t ns = (int64_t)llround(total);
    *sec = ns / 1000000000;
    *nanos = (int32_t)(ns % 1000000000);
    if (neg) {
        *sec = -*sec;
        *nanos = -*nanos;
    }
    return 0;
}

/* ---- enums ---------------------------------------------------------------- */

/* "InstanceStatus" -> "INSTANCE_STATUS_" */
static void
enum_prefix(const ProtobufCEnumDescriptor *d, char *buf, size_t n)
{
    size_t k = 0;
    for (const char *p = d->short_name; *p != '\0' && k + 2 < n; p++) {
        if (isupper((unsigned char)*p) && p != d->short_name)
            buf[k++] = '_';
        buf[k++] = (char)toupper((unsigned char)*p);
    }
    buf[k++] = '_';
    buf[k] = '\0';
}

const char *
pb_enum_name(const ProtobufCEnumDescriptor *d, int value)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(d, value);
    if (v == NULL)
        return NULL;
    char prefix[128];
    enum_prefix(d, prefix, sizeof prefix);
    size_t plen = strlen(prefix);
    if (strncmp(v->name, prefix, plen) == 0 && v->name[plen] != '\0')
        return v->name + plen;
    return v->name;
}

/* Accepts "RUNNING", "running", "INSTANCE_STATUS_RUNNING", "not-started". */
static const ProtobufCEnumValue *
enum_parse(const ProtobufCEnumDescriptor *d, const char *s)
{
    char norm[128], full[256];
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < sizeof norm; i++)
        norm[i] = s[i] == '-' || s[i] == ' ' ? '_' : (char)toupper((unsigned char)s[i]);
    norm[i] = '\0';
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(d, norm);
    if (v != NULL)
        return v;
    enum_prefix(d, full, sizeof full);
    strncat(full, norm, sizeof full - strlen(full) - 1);
    return protobuf_c_enum_descriptor_get_value_by_name(d, full);
}

/* ---- JSON text ------------------------------------------------------------ */

static void
dump_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\b':
            fputs("\\b", f);
            break;
        case '\f':
            fputs("\\f", f);
            break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void
dump_real(FILE *f, double v)
{
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
    if (strpbrk(buf, ".eE") == NULL)
        fputs(".0", f);
}

static void
dump(FILE *f, const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *v;
        int first = 1;
        fputc('{', f);
        json_object_foreach((json_t *)j, k, v)
        {
            if (!first)
                fputc(',', f);
            first = 0;
            dump_string(f, k, strlen(k));
            fputc(':', f);
            dump(f, v);
        }
        fputc('}', f);
        break;
    }
    case JSON_ARRAY:
        fputc('[', f);
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i > 0)
                fputc(',', f);
            dump(f, json_array_get(j, i));
        }
        fputc(']', f);
        break;
    case JSON_STRING:
        dump_string(f, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER:
        fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        break;
    case JSON_REAL:
        dump_real(f, json_real_value(j));
        break;
    case JSON_TRUE:
        fputs("true", f);
        break;
    case JSON_FALSE:
        fputs("false", f);
        break;
    case JSON_NULL:
        fputs("null", f);
        break;
    }
}

void
json_print_line(FILE *f, const json_t *j)
{
    dump(f, j);
    fputc('\n', f);
}

static char *
json_to_text(const json_t *j)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    dump(f, j);
    fclose(f);
    return buf;
}

json_t *
json_parse_text(const char *text, char *err, size_t errlen)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (j == NULL)
        snprintf(err, errlen, "line %d column %d: %s", e.line, e.column, e.text);
    return j;
}

/* ---- message -> JSON ---------------------------------------------------- */

static json_t *message_json(const ProtobufCMessage *m);

static json_t *
string_json(const ProtobufCFieldDescriptor *f, const char *s)
{
    if (s == NULL)
        s = "";
    if (ends_with(f->name, "_json")) {
        if (s[0] == '\0')
            return json_object();
        json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
        if (v != NULL)
            return v;
    }
    return json_string_nocheck(s);
}

static json_t *
bytes_json(const ProtobufCBinaryData *b)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = (b->len + 2) / 3 * 4;
    char *out = malloc(n + 1), *o = out;
    if (out == NULL)
        return json_null();
    for (size_t i = 0; i < b->len; i += 3) {
        uint32_t v = (uint32_t)b->data[i] << 16;
        if (i + 1 < b->len)
            v |= (uint32_t)b->data[i + 1] << 8;
        if (i + 2 < b->len)
            v |= b->data[i + 2];
        *o++ = tab[(v >> 18) & 63];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < b->len ? tab[(v >> 6) & 63] : '=';
        *o++ = i + 2 < b->len ? tab[v & 63] : '=';
    }
    *o = '\0';
    json_t *j = json_string(out);
    free(out);
    return j;
}

/* The JSON of one value of field f stored at p. */
static json_t *
value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return json_integer(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t) * (const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const char *name = pb_enum_name(f->descriptor, v);
        return name != NULL ? json_string(name) : json_integer(v);
    }
    case PROTOBUF_C_TYPE_STRING:
        return string_json(f, *(char *const *)p);
    case PROTOBUF_C_TYPE_BYTES:
        return bytes_json(p);
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        return sub != NULL ? message_json(sub) : json_null();
    }
    }
    return json_null();
}

static size_t
value_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM:
        return sizeof(int);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    }
    return 0;
}

#define MEMBER(type, m, off) (*(type *)((char *)(m) + (off)))

/* Whether field f of m is a oneof member that is not the selected one, or a
 * proto2 optional scalar that is not set. */
static int
field_absent(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return MEMBER(const uint32_t, m, f->quantifier_offset) != f->id;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
        f->type != PROTOBUF_C_TYPE_MESSAGE)
        return !MEMBER(const protobuf_c_boolean, m, f->quantifier_offset);
    return 0;
}

static json_t *
message_json(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    char buf[64];
    if (is_message(d, TIMESTAMP_NAME)) {
        const Google__Protobuf__Timestamp *t = (const void *)m;
        wfctl_format_time(t->seconds, t->nanos, 1, buf, sizeof buf);
        return json_string(buf);
    }
    if (is_message(d, DURATION_NAME)) {
        const Google__Protobuf__Duration *t = (const void *)m;
        wfctl_format_duration(t->seconds, t->nanos, buf, sizeof buf);
        return json_string(buf);
    }
    json_t *o = json_object();
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (field_absent(m, f))
            continue;
        const void *p = (const char *)m + f->offset;
        json_t *v;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = MEMBER(const size_t, m, f->quantifier_offset);
            const char *arr = *(char *const *)p;
            size_t sz = value_size(f->type);
            int map = f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor);
            v = map ? json_object() : json_array();
            for (size_t k = 0; k < n; k++) {
                if (map) {
                    const ProtobufCMessage *e = ((ProtobufCMessage *const *)arr)[k];
                    const ProtobufCMessageDescriptor *ed = e->descriptor;
                    json_t *key =
                        value_json(&ed->fields[0], (const char *)e + ed->fields[0].offset);
                    char *ks =
                        json_is_string(key) ? strdup(json_string_value(key)) : json_to_text(key);
                    json_object_set_new(
                        v, ks != NULL ? ks : "",
                        value_json(&ed->fields[1], (const char *)e + ed->fields[1].offset));
                    free(ks);
                    json_decref(key);
                } else {
                    json_array_append_new(v, value_json(f, arr + k * sz));
                }
            }
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (*(ProtobufCMessage *const *)p == NULL)
                continue;
            v = value_json(f, p);
        } else {
            v = value_json(f, p);
        }
        json_object_set_new(o, f->name, v);
    }
    return o;
}

json_t *
pbjson_from_message(const ProtobufCMessage *m)
{
    return message_json(m);
}

void
pbjson_print(const ProtobufCMessage *m)
{
    json_t *j = message_json(m);
    json_print_line(stdout, j);
    json_decref(j);
    fflush(stdout);
}

/* ---- JSON -> message ---------------------------------------------------- */

struct conv {
    char *err;
    size_t errlen;
};

static int conv_error(struct conv *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
conv_error(struct conv *c, const char *path, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s%s", path[0] != '\0' ? path : "(top level)", ": ");
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->errlen)
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static ProtobufCMessage *to_message(const ProtobufCMessageDescriptor *d, json_t *j,
                                    const char *path, struct conv *c);

/* Finds a field by proto name or by lowerCamelCase name. */
static const ProtobufCFieldDescriptor *
find_field(const ProtobufCMessageDescriptor *d, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    if (f != NULL)
        return f;
    char snake[256];
    size_t k = 0;
    for (const char *p = name; *p != '\0' && k + 2 < sizeof snake; p++) {
        if (isupper((unsigned char)*p)) {
            snake[k++] = '_';
            snake[k++] = (char)tolower((unsigned char)*p);
        } else {
            snake[k++] = *p;
        }
    }
    snake[k] = '\0';
    return protobuf_c_message_descriptor_get_field_by_name(d, snake);
}

static int
json_int_arg(json_t *v, json_int_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) { /* proto3 JSON allows quoted integers */
        char *end;
        errno = 0;
        long long x = strtoll(json_string_value(v), &end, 10);
        if (errno == 0 && end != json_string_value(v) && *end == '\0') {
            *out = x;
            return 0;
        }
    }
    return -1;
}

/* Stores the JSON value v as one value of field f at p. */
static int
set_value(const ProtobufCFieldDescriptor *f, void *p, json_t *v, const char *path, struct conv *c)
{
    json_int_t i = 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (json_int_arg(v, &i) != 0 || i < INT32_MIN || i > INT32_MAX)
            return conv_error(c, path, "expected a 32-bit integer");
        *(int32_t *)p = (int32_t)i;
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (json_int_arg(v, &i) != 0 || i < 0 || i > UINT32_MAX)
            return conv_error(c, path, "expected a non-negative 32-bit integer");
        *(uint32_t *)p = (uint32_t)i;
        return 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (json_int_arg(v, &i) != 0)
            return conv_error(c, path, "expected an integer");
        *(int64_t *)p = (int64_t)i;
        return 0;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (json_int_arg(v, &i) != 0 || i < 0)
            return conv_error(c, path, "expected a non-negative integer");
        *(uint64_t *)p = (uint64_t)i;
        return 0;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
        if (!json_is_number(v))
            return conv_error(c, path, "expected a number");
        if (f->type == PROTOBUF_C_TYPE_FLOAT)
            *(float *)p = (float)json_number_value(v);
        else
            *(double *)p = json_number_value(v);
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v))
            return conv_error(c, path, "expected true or false");
        *(protobuf_c_boolean *)p = json_is_true(v);
        return 0;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *ed = f->descriptor;
        const ProtobufCEnumValue *ev = NULL;
        if (json_is_string(v))
            ev = enum_parse(ed, json_string_value(v));
        else if (json_is_integer(v))
            ev = protobuf_c_enum_descriptor_get_value(ed, (int)json_integer_value(v));
        if (ev == NULL) {
            char names[512] = "";
            for (unsigned k = 0; k < ed->n_values; k++) {
                const char *nm = pb_enum_name(ed, ed->values[k].value);
                if (nm == NULL || ends_with(nm, "UNSPECIFIED"))
                    continue;
                if (names[0] != '\0')
                    strncat(names, ", ", sizeof names - strlen(names) - 1);
                strncat(names, nm, sizeof names - strlen(names) - 1);
            }
            return conv_error(c, path, "unknown %s value (expected one of %s)", ed->short_name,
                              names);
        }
        *(int *)p = ev->value;
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        char *s;
        if (json_is_string(v))
            s = strdup(json_string_value(v));
        else if (ends_with(f->name, "_json") && (json_is_object(v) || json_is_array(v)))
            s = json_to_text(v); /* variables given inline as JSON */
        else
            return conv_error(c, path, "expected a string");
        if (s == NULL)
            return conv_error(c, path, "out of memory");
        char **dst = p;
        if (*dst != NULL && *dst != f->default_value)
            free(*dst);
        *dst = s;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES:
        return conv_error(c, path, "bytes fields are not supported");
    case PROTOBUF_C_TYPE_MESSAGE: {
        ProtobufCMessage *sub = to_message(f->descriptor, v, path, c);
        if (sub == NULL)
            return -1;
        ProtobufCMessage **dst = p;
        if (*dst != NULL)
            protobuf_c_message_free_unpacked(*dst, NULL);
        *dst = sub;
        return 0;
    }
    }
    return conv_error(c, path, "unsupported field type");
}

static ProtobufCMessage *
new_message(const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = calloc(1, d->sizeof_message);
    if (m != NULL)
        protobuf_c_message_init(d, m);
    return m;
}

/* Fills a repeated field (a JSON array, or an object for a map). */
static int
set_repeated(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, json_t *v, const char *path,
             struct conv *c)
{
    int map = f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor);
    size_t n = map ? (json_is_object(v) ? json_object_size(v) : 0) : json_array_size(v);
    if (map ? !json_is_object(v) : !json_is_array(v))
        return conv_error(c, path, map ? "expected an object" : "expected an array");
    size_t *count = &MEMBER(size_t, m, f->quantifier_offset);
    char **arr = &MEMBER(char *, m, f->offset);
    if (*arr != NULL)
        return conv_error(c, path, "given twice");
    *arr = calloc(n > 0 ? n : 1, value_size(f->type));
    if (*arr == NULL)
        return conv_error(c, path, "out of memory");
    char sub[512];
    if (map) {
        const ProtobufCMessageDescriptor *ed = f->descriptor;
        const char *k;
        json_t *val;
        json_object_foreach(v, k, val)
        {
            if (snprintf(sub, sizeof sub, "%s.%s", path, k) >= (int)sizeof sub)
                sub[sizeof sub - 1] = '\0'; /* a truncated path only shortens messages */
            ProtobufCMessage *e = new_message(ed);
            if (e == NULL)
                return conv_error(c, sub, "out of memory");
            ((ProtobufCMessage **)*arr)[(*count)++] = e;
            json_t *key = json_string_nocheck(k);
            if (ed->fields[0].type != PROTOBUF_C_TYPE_STRING) {
                json_decref(key);
                key = json_integer(strtoll(k, NULL, 10));
            }
            int rc = set_value(&ed->fields[0], (char *)e + ed->fields[0].offset, key, sub, c);
            json_decref(key);
            if (rc != 0 ||
                set_value(&ed->fields[1], (char *)e + ed->fields[1].offset, val, sub, c) != 0)
                return -1;
        }
        return 0;
    }
    size_t sz = value_size(f->type);
    for (size_t i = 0; i < n; i++) {
        if (snprintf(sub, sizeof sub, "%s[%zu]", path, i) >= (int)sizeof sub)
            sub[sizeof sub - 1] = '\0';
        if (set_value(f, *arr + i * sz, json_array_get(v, i), sub, c) != 0)
            return -1;
        (*count)++;
    }
    return 0;
}

static ProtobufCMessage *
to_message(const ProtobufCMessageDescriptor *d, json_t *j, const char *path, struct conv *c)
{
    if (is_message(d, TIMESTAMP_NAME) || is_message(d, DURATION_NAME)) {
        int64_t sec = 0;
        int32_t nanos = 0;
        int ts = is_message(d, TIMESTAMP_NAME);
        if (json_is_string(j)) {
            const char *s = json_string_value(j);
            if ((ts ? wfctl_parse_time(s, &sec, &nanos) : wfctl_parse_duration(s, &sec, &nanos)) !=
                0) {
                conv_error(c, path,
                           ts ? "expected an RFC 3339 time, e.g. 2024-05-01T12:00:00Z"
                              : "expected a duration, e.g. 30s, 1.5s, 5m, 1h30m");
                return NULL;
            }
        } else if (!ts && json_is_number(j)) {
            double v = json_number_value(j);
            sec = (int64_t)v;
            nanos = (int32_t)llround((v - (double)sec) * 1e9);
        } else {
            conv_error(c, path, ts ? "expected an RFC 3339 time string" : "expected a duration");
            return NULL;
        }
        ProtobufCMessage *m = new_message(d);
        if (m == NULL)
            return NULL;
        /* Timestamp and Duration have the same layout: seconds, nanos. */
        ((Google__Protobuf__Timestamp *)(void *)m)->seconds = sec;
        ((Google__Protobuf__Timestamp *)(void *)m)->nanos = nanos;
        return m;
    }
    if (!json_is_object(j)) {
        conv_error(c, path, "expected an object (%s)", d->short_name);
        return NULL;
    }
    ProtobufCMessage *m = new_message(d);
    if (m == NULL) {
        conv_error(c, path, "out of memory");
        return NULL;
    }
    const char *key;
    json_t *v;
    char sub[512];
    json_object_foreach(j, key, v)
    {
        if (snprintf(sub, sizeof sub, "%s%s%s", path, path[0] != '\0' ? "." : "", key) >=
            (int)sizeof sub)
            sub[sizeof sub - 1] = '\0';
        const ProtobufCFieldDescriptor *f = find_field(d, key);
        if (f == NULL) {
            char names[512] = "";
            for (unsigned k = 0; k < d->n_fields; k++) {
                if (k > 0)
                    strncat(names, ", ", sizeof names - strlen(names) - 1);
                strncat(names, d->fields[k].name, sizeof names - strlen(names) - 1);
            }
            conv_error(c, sub, "unknown field of %s (fields: %s)", d->short_name, names);
            goto fail;
        }
        if (json_is_null(v))
            continue;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (set_repeated(m, f, v, sub, c) != 0)
                goto fail;
            continue;
        }
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t *cs = &MEMBER(uint32_t, m, f->quantifier_offset);
            if (*cs != 0 && *cs != f->id) {
                const ProtobufCFieldDescriptor *other =
                    protobuf_c_message_descriptor_get_field(d, *cs);
                conv_error(c, sub, "cannot be combined with %s (only one of them may be set)",
                           other != NULL ? other->name : "another field");
                goto fail;
            }
            *cs = f->id;
        } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
                   f->type != PROTOBUF_C_TYPE_MESSAGE) {
            MEMBER(protobuf_c_boolean, m, f->quantifier_offset) = 1;
        }
        if (set_value(f, (char *)m + f->offset, v, sub, c) != 0)
            goto fail;
    }
    return m;
fail:
    protobuf_c_message_free_unpacked(m, NULL);
    return NULL;
}

ProtobufCMessage *
pbjson_to_message(const ProtobufCMessageDescriptor *desc, json_t *j, const char *path, char *err,
                  size_t errlen)
{
    struct conv c = {err, errlen};
    err[0] = '\0';
    return to_message(desc, j, path != NULL ? path : "", &c);
}

/* ---- reflection helpers ------------------------------------------------- */

const char *
pb_get_string(const ProtobufCMessage *m, const char *field)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, field);
    if (f == NULL || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return MEMBER(char *const, m, f->offset);
}

int
pb_set_string(ProtobufCMessage *m, const char *field, const char *value)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, field);
    if (f == NULL || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return -1;
    char *s = strdup(value);
    if (s == NULL)
        return -1;
    char **dst = &MEMBER(char *, m, f->offset);
    if (*dst != NULL && *dst != f->default_value)
        free(*dst);
    *dst = s;
    return 0;
}

const ProtobufCMessage *
pb_get_message(const ProtobufCMessage *m, const char *field)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, field);
    if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED ||
        field_absent(m, f))
        return NULL;
    return MEMBER(ProtobufCMessage *const, m, f->offset);
}

ProtobufCMessage *const *
pb_get_messages(const ProtobufCMessage *m, const char *field, size_t *n)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, field);
    *n = 0;
    if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    *n = MEMBER(const size_t, m, f->quantifier_offset);
    return MEMBER(ProtobufCMessage * *const, m, f->offset);
}
