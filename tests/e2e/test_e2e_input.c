/*
 * test_e2e_input.c: bad input gets a clear status with a stable reason,
 * through a real client (and, where a gRPC client cannot send it, raw
 * HTTP/2): NUL bytes in strings and in metadata, known fields with the
 * wrong wire type, Durations and Timestamps out of their range, assignee
 * ids an expression gives, oversized metadata (the connection stays), and
 * an access log that stays valid JSON in valid UTF-8 whatever the path.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "google/protobuf/timestamp.pb-c.h"
#include "net_kit.h"
#include "wf_time.h"

#define SVC "/workflow.v1.WorkflowService/"

/* ---- requests and captures ------------------------------------------------------------------ */

/* m packed into the arena, with the byte 0x01 of the first occurrence of
 * marked (a string value of m holding exactly one 0x01) turned into NUL:
 * protobuf-c strings cannot hold a NUL, the wire can. */
static uint8_t *
pack_with_nul(const ProtobufCMessage *m, const char *marked, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = wf_arena_alloc(ta, *len);
    ck_assert_ptr_nonnull(buf);
    protobuf_c_message_pack(m, buf);
    uint8_t *at = memmem(buf, *len, marked, strlen(marked));
    ck_assert_ptr_nonnull(at);
    uint8_t *one = memchr(at, 0x01, strlen(marked));
    ck_assert_ptr_nonnull(one);
    *one = 0;
    return buf;
}

/* A raw call of method with body; the response (kept) or NULL, st filled. */
static void *
call_raw(wf_client *c, const char *method, const void *body, size_t len,
         const ProtobufCMessageDescriptor *resp, wf_client_status *st)
{
    char path[128];
    snprintf(path, sizeof path, SVC "%s", method);
    ProtobufCMessage *r = NULL;
    wf_client_call_raw(c, path, body, len, resp, &r, NULL, st);
    return r;
}

#define ck_refused(st, field_desc)                                                                 \
    do {                                                                                           \
        ck_fails((st), GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");                          \
        ck_assert_msg(has_violation(&(st), (field_desc), NULL),                                    \
                      "no violation \"%s\" (first: \"%s\")", (field_desc),                         \
                      (st).nviolations > 0 ? (st).violations[0] : "");                             \
    } while (0)

static const char *
status_of(const char *id)
{
    return protobuf_c_enum_descriptor_get_value(&workflow__v1__instance_status__descriptor,
                                                get_instance(id)->instance->status)
        ->name;
}

/* Captures what the server logs (fd 2) into an unnamed temporary file. */
static FILE *cap_file;
static int cap_saved = -1;

static void
capture_begin(void)
{
    cap_file = tmpfile();
    ck_assert_ptr_nonnull(cap_file);
    fflush(stderr);
    cap_saved = dup(2);
    dup2(fileno(cap_file), 2);
}

/* Everything captured so far (malloc'd). */
static char *
captured(void)
{
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    ssize_t n = pread(fileno(cap_file), buf, (1 << 20) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* Waits (at most 3 s) until the captured log holds needle: the access log
 * line is written once the call is done, after its status left. */
static char *
captured_with(const char *needle)
{
    for (int i = 0; i < 300; i++) {
        char *all = captured();
        if (strstr(all, needle) != NULL)
            return all;
        free(all);
        usleep(10000);
    }
    return captured();
}

static void
capture_end(void)
{
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    fclose(cap_file);
}

/* ---- NUL bytes -------------------------------------------------------------------------- */

WF_TEST(test_nul_in_a_string_field_is_refused)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(dev, u("nul"), 0, "{\"a\":1}", &st);
    ck_ok(st);

    /* An id plus NUL used to name the instance of its prefix. */
    Workflow__V1__GetInstanceRequest g = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    g.instance_id = wf_arena_printf(ta, "%s\x01junk", in->id);
    size_t len;
    uint8_t *body = pack_with_nul(&g.base, g.instance_id, &len);
    ck_assert_ptr_null(call_raw(dev, "GetInstance", body, len,
                                &workflow__v1__get_instance_response__descriptor, &st));
    ck_refused(st, "instance_id: must not contain NUL bytes");
    ck_assert_ptr_nonnull(strstr(st.message, "instance_id"));

    /* A JSON text followed by a NUL used to be taken as the text. */
    Workflow__V1__SetVariablesRequest sv = WORKFLOW__V1__SET_VARIABLES_REQUEST__INIT;
    sv.instance_id = (char *)in->id;
    sv.variables_json = "{\"a\":2}\x01";
    body = pack_with_nul(&sv.base, sv.variables_json, &len);
    ck_assert_ptr_null(call_raw(dev, "SetVariables", body, len,
                                &workflow__v1__set_variables_response__descriptor, &st));
    ck_refused(st, "variables_json: must not contain NUL bytes");

    /* Nested strings too (a definition's transition). */
    nb *n = net_new(u("nul-def"));
    place(n, "s", START);
    place(n, "e", END);
    trans(n, "go", T_AUTO)->name = "Go\x01 on";
    arc(n, "s", "go");
    arc(n, "go", "e");
    Workflow__V1__DeployDefinitionRequest d = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    d.definition = &n->d;
    body = pack_with_nul(&d.base, "Go\x01 on", &len);
    ck_assert_ptr_null(call_raw(dev, "DeployDefinition", body, len,
                                &workflow__v1__deploy_definition_response__descriptor, &st));
    ck_refused(st, "definition.transitions[0].name: must not contain NUL bytes");

    /* Nothing changed: the variables are the first ones. */
    ck_assert_str_eq(get_instance(in->id)->instance->variables_json, "{\"a\":1}");
}
END_TEST

/* "\u0000" inside a JSON string is refused by jansson (JSON_ALLOW_NUL is
 * off): a JSON text is never cut either. */
WF_TEST(test_escaped_nul_in_json_is_refused)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    ck_assert_ptr_null(start_v(dev, u("nul-json"), 0, "{\"a\":\"x\\u0000y\"}", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
}
END_TEST

/* ---- wire types ----------------------------------------------------------------------- */

WF_TEST(test_wrong_wire_type_is_refused)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(dev, u("wire"), 0, NULL, &st);
    ck_ok(st);
    /* CancelInstance{instance_id, compensate: length-delimited, empty}:
     * protobuf-c read the bool as true. */
    Workflow__V1__CancelInstanceRequest c = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    c.instance_id = (char *)in->id;
    size_t n = workflow__v1__cancel_instance_request__get_packed_size(&c);
    uint8_t *body = wf_arena_alloc(ta, n + 2);
    workflow__v1__cancel_instance_request__pack(&c, body);
    body[n] = (3 << 3) | 2;
    body[n + 1] = 0;
    ck_assert_ptr_null(call_raw(dev, "CancelInstance", body, n + 2,
                                &workflow__v1__cancel_instance_response__descriptor, &st));
    ck_refused(st, "compensate: has the wrong wire type");
    ck_assert_str_eq(status_of(in->id), "INSTANCE_STATUS_RUNNING");
}
END_TEST

/* ---- Durations and Timestamps ------------------------------------------------------------ */

static Google__Protobuf__Duration *
duration(int64_t seconds, int32_t nanos)
{
    Google__Protobuf__Duration *d = wf_arena_calloc(ta, 1, sizeof *d);
    google__protobuf__duration__init(d);
    d->seconds = seconds;
    d->nanos = nanos;
    return d;
}

static void
send_signal_ttl(wf_client *c, Google__Protobuf__Duration *ttl, wf_client_status *st)
{
    Workflow__V1__SendSignalRequest r = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    r.name = u("ping");
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.type = "order";
    agg.id = u("o1");
    r.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    r.aggregate = &agg;
    r.buffer_ttl = ttl;
    call(c, "SendSignal", &r, &workflow__v1__send_signal_response__descriptor, st);
}

WF_TEST(test_out_of_range_durations_are_refused)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    send_signal_ttl(dev, duration(60, 0), &st);
    ck_ok(st);
    /* Past the Duration range, nanos of a whole second or more, nanos of
     * the other sign, and a time past 9999-12-31. */
    const struct {
        int64_t s;
        int32_t ns;
    } bad[] = {{10000000000000LL, 0}, {1, 2000000000}, {1, -5}, {315576000000LL, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        send_signal_ttl(dev, duration(bad[i].s, bad[i].ns), &st);
        ck_refused(st, "buffer_ttl: must be a valid Duration");
    }
    /* A backoff of a definition, nested. */
    nb *n = net_new(u("backoff"));
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "work", T_AUTO);
    with_job(t, "w", 3, 1000);
    t->retry->initial_backoff = duration(10000000000000LL, 0);
    arc(n, "s", "work");
    arc(n, "work", "e");
    ck_assert_ptr_null(deploy_d(dev, &n->d, false, &st));
    ck_refused(st, "definition.transitions[0].retry.initial_backoff: must be a valid Duration");
}
END_TEST

WF_TEST(test_out_of_range_timestamps_are_refused)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    nb *n = net_new(u("valid-from"));
    place(n, "s", START);
    place(n, "e", END);
    trans(n, "go", T_AUTO);
    arc(n, "s", "go");
    arc(n, "go", "e");
    Google__Protobuf__Timestamp ts_ = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    n->d.valid_from = &ts_;
    ts_.seconds = 253402300800LL; /* 10000-01-01 */
    ck_assert_ptr_null(deploy_d(dev, &n->d, true, &st));
    ck_refused(st, "definition.valid_from: must be a valid Timestamp");
    ts_.seconds = 1;
    ts_.nanos = -1;
    ck_assert_ptr_null(deploy_d(dev, &n->d, true, &st));
    ck_refused(st, "definition.valid_from: must be a valid Timestamp");
    ts_.nanos = 0;
    ck_assert_ptr_nonnull(deploy_d(dev, &n->d, true, &st));
}
END_TEST

/* ---- assignee ids of an expression -------------------------------------------------------- */

WF_TEST(test_ids_expression_ids_follow_the_id_rule)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    char *key = u("ids-expr");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "review", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids_expression = ".who";
    t->assignee = a;
    arc(n, "s", "review");
    arc(n, "review", "e");
    deploy(n);
    /* What AssignTo refuses (U+FFFD is not printable ASCII), a net refuses. */
    ck_assert_ptr_null(start_v(dev, key, 0, "{\"who\":\"\\ufffd\"}", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_nonnull(strstr(st.message, "printable"));
    ck_assert_ptr_nonnull(start_v(dev, key, 0, "{\"who\":\"alice\"}", &st));
    ck_ok(st);
}
END_TEST

/* ---- metadata ------------------------------------------------------------------------- */

WF_TEST(test_oversized_metadata_keeps_the_connection)
{
    wf_client *dev = as("dev");
    wf_client_status st;
    size_t big = 16 * 1024;
    char *pad = wf_arena_alloc(ta, big + 1);
    memset(pad, 'a', big);
    pad[big] = '\0';
    wf_client_md md[] = {{"x-pad", pad}};
    wf_client_call_opts o = {.md = md, .nmd = 1};
    Workflow__V1__ListDefinitionsRequest req = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    for (int round = 0; round < 2; round++) {
        wf_client_call(dev, SVC "ListDefinitions", &req.base,
                       &workflow__v1__list_definitions_response__descriptor, &resp, &o, &st);
        ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "TOO_LARGE");
        ck_assert_ptr_nonnull(strstr(st.message, "metadata"));
        /* The next call on the same channel succeeds. */
        call(dev, "ListDefinitions", &req, &workflow__v1__list_definitions_response__descriptor,
             &st);
        ck_ok(st);
    }
    /* Under the limit, extra metadata is fine. */
    pad[4096] = '\0';
    wf_client_call(dev, SVC "ListDefinitions", &req.base,
                   &workflow__v1__list_definitions_response__descriptor, &resp, &o, &st);
    ck_ok(st);
    protobuf_c_message_free_unpacked(resp, NULL);
}
END_TEST

/* ---- the API key, over raw HTTP/2 ------------------------------------------------------------ */

/* An HPACK literal header field without indexing, new name (RFC 7541
 * 6.2.2), no Huffman coding. */
static size_t
hpack_int(uint8_t *out, size_t v)
{
    size_t n = 0;
    if (v < 127) {
        out[n++] = (uint8_t)v;
        return n;
    }
    out[n++] = 127;
    v -= 127;
    while (v >= 128) {
        out[n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t
hpack_field(uint8_t *out, const char *name, const char *value, size_t vlen)
{
    size_t n = 0;
    out[n++] = 0x00;
    n += hpack_int(out + n, strlen(name));
    memcpy(out + n, name, strlen(name));
    n += strlen(name);
    n += hpack_int(out + n, vlen);
    memcpy(out + n, value, vlen);
    return n + vlen;
}

static size_t
h2_frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t stream, const void *payload,
         size_t len)
{
    out[0] = (uint8_t)(len >> 16);
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
    out[3] = type;
    out[4] = flags;
    out[5] = (uint8_t)(stream >> 24);
    out[6] = (uint8_t)(stream >> 16);
    out[7] = (uint8_t)(stream >> 8);
    out[8] = (uint8_t)stream;
    if (len > 0)
        memcpy(out + 9, payload, len);
    return 9 + len;
}

static bool
read_full(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, buf + got, n - got, 0);
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    return true;
}

/* One ListDefinitions over a fresh HTTP/2 connection with x-api-key =
 * the klen bytes at key (a gRPC client refuses to send a NUL). Returns 1
 * when a response message came back (the call was let in), 0 when the
 * stream ended without one, -1 when the exchange broke. */
static int
raw_list_definitions(const char *key, size_t klen)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ts.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    static uint8_t out[4096], hdr[2048];
    size_t n = 0, h = 0;
    const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    memcpy(out, preface, sizeof preface - 1);
    n += sizeof preface - 1;
    n += h2_frame(out + n, 4 /* SETTINGS */, 0, 0, NULL, 0);
    const char *path = SVC "ListDefinitions";
    h += hpack_field(hdr + h, ":method", "POST", 4);
    h += hpack_field(hdr + h, ":scheme", "http", 4);
    h += hpack_field(hdr + h, ":path", path, strlen(path));
    h += hpack_field(hdr + h, ":authority", "127.0.0.1", 9);
    h += hpack_field(hdr + h, "content-type", "application/grpc", 16);
    h += hpack_field(hdr + h, "te", "trailers", 8);
    h += hpack_field(hdr + h, "x-actor-id", "raw", 3);
    h += hpack_field(hdr + h, "x-api-key", key, klen);
    n += h2_frame(out + n, 1 /* HEADERS */, 0x4 /* END_HEADERS */, 1, hdr, h);
    const uint8_t empty_message[5] = {0, 0, 0, 0, 0};
    n += h2_frame(out + n, 0 /* DATA */, 0x1 /* END_STREAM */, 1, empty_message, 5);
    ck_assert_int_eq(send(fd, out, n, MSG_NOSIGNAL), (ssize_t)n);

    int result = -1;
    bool message = false;
    for (int frames = 0; frames < 64; frames++) {
        uint8_t fh[9];
        if (!read_full(fd, fh, 9))
            break;
        size_t len = (size_t)fh[0] << 16 | (size_t)fh[1] << 8 | fh[2];
        uint8_t type = fh[3], flags = fh[4];
        uint32_t stream =
            ((uint32_t)fh[5] & 0x7f) << 24 | (uint32_t)fh[6] << 16 | (uint32_t)fh[7] << 8 | fh[8];
        static uint8_t payload[1 << 16];
        if (len > sizeof payload || !read_full(fd, payload, len))
            break;
        if (type == 4 && !(flags & 0x1)) { /* SETTINGS: acknowledge */
            uint8_t ack[9];
            h2_frame(ack, 4, 0x1, 0, NULL, 0);
            send(fd, ack, 9, MSG_NOSIGNAL);
        }
        if (type == 7 || (type == 3 && stream == 1)) /* GOAWAY, RST_STREAM */
            break;
        if (type == 0 && stream == 1 && len > 0)
            message = true;
        if ((type == 0 || type == 1) && stream == 1 && (flags & 0x1)) {
            result = message ? 1 : 0;
            break;
        }
    }
    close(fd);
    return result;
}

WF_TEST(test_api_key_is_compared_over_its_whole_length)
{
    const char *env[] = {"WF_API_KEYS=k-admin", NULL};
    teardown();
    setup_with(env);
    ck_assert_int_eq(raw_list_definitions("k-admin", 7), 1);
    ck_assert_int_eq(raw_list_definitions("k-admin\0junk", 12), 0);
    ck_assert_int_eq(raw_list_definitions("k-admin\0", 8), 0);
    ck_assert_int_eq(raw_list_definitions("k-admi", 6), 0);
}
END_TEST

/* ---- the access log --------------------------------------------------------------------- */

WF_TEST(test_access_log_lines_are_valid_json_in_utf8)
{
    const char *env[] = {"WF_LOG_LEVEL=info", NULL};
    teardown();
    capture_begin();
    setup_with(env);
    wf_client *dev = as("dev");
    wf_client_status st;
    ProtobufCMessage *resp = NULL;
    Workflow__V1__ListDefinitionsRequest req = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    /* Latin-1, a lone continuation byte, a truncated character, a quote. */
    wf_client_call(dev, SVC "Caf\xe9\x80\xe2\x82\"x", &req.base,
                   &workflow__v1__list_definitions_response__descriptor, &resp, NULL, &st);
    ck_assert_int_eq(st.code, GRPC_STATUS_UNIMPLEMENTED);
    char *all = captured_with("Caf");
    capture_end();
    size_t lines = 0;
    bool seen = false;
    for (char *line = strtok(all, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr); /* jansson refuses invalid UTF-8 */
        ck_assert_msg(j != NULL, "not a JSON line (%s): %s", jerr.text, line);
        const char *method = json_string_value(json_object_get(j, "method"));
        if (method != NULL && strncmp(method, SVC "Caf", strlen(SVC "Caf")) == 0) {
            ck_assert_str_eq(method, SVC "Caf\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"x");
            seen = true;
        }
        json_decref(j);
        lines++;
    }
    free(all);
    ck_assert_uint_gt(lines, 0);
    ck_assert_msg(seen, "no access log line of the call");
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_input", wf_test_store_name(), setup, teardown, 60));
}
