/*
 * rpc_reflection: a symbol index over the embedded FileDescriptorSet.
 *
 * At startup every file of the set is re-serialized once and every symbol it
 * declares (messages and nested messages, enums, services, methods) is
 * recorded with its file. A lookup answers with the file and its transitive
 * dependencies, in dependency order, which is what dynamic clients need to
 * build their descriptor pool in one round trip.
 */
#include "rpc_reflection.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "google/protobuf/descriptor.pb-c.h"

struct symbol {
    char *name; /* fully qualified, without a leading dot */
    size_t file;
};

struct wf_reflection {
    Google__Protobuf__FileDescriptorSet *set;
    ProtobufCBinaryData *files; /* serialized FileDescriptorProto, by file index */
    struct symbol *symbols;
    size_t nsymbols, capsymbols;
    const char *const *services;
    size_t nservices;
};

static int
add_symbol(wf_reflection *r, const char *scope, const char *name, size_t file)
{
    if (r->nsymbols == r->capsymbols) {
        size_t cap = r->capsymbols ? r->capsymbols * 2 : 256;
        struct symbol *s = realloc(r->symbols, cap * sizeof *s);
        if (s == NULL)
            return -1;
        r->symbols = s;
        r->capsymbols = cap;
    }
    size_t n = strlen(scope) + strlen(name) + 2;
    char *full = malloc(n);
    if (full == NULL)
        return -1;
    snprintf(full, n, "%s%s%s", scope, scope[0] ? "." : "", name);
    r->symbols[r->nsymbols++] = (struct symbol){full, file};
    return 0;
}

static int
index_message(wf_reflection *r, const char *scope, const Google__Protobuf__DescriptorProto *m,
              size_t file)
{
    if (add_symbol(r, scope, m->name, file) != 0)
        return -1;
    const char *full = r->symbols[r->nsymbols - 1].name;
    for (size_t i = 0; i < m->n_nested_type; i++)
        if (index_message(r, full, m->nested_type[i], file) != 0)
            return -1;
    for (size_t i = 0; i < m->n_enum_type; i++)
        if (add_symbol(r, full, m->enum_type[i]->name, file) != 0)
            return -1;
    return 0;
}

void
wf_reflection_free(wf_reflection *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->nsymbols; i++)
        free(r->symbols[i].name);
    free(r->symbols);
    if (r->files != NULL && r->set != NULL)
        for (size_t i = 0; i < r->set->n_file; i++)
            free(r->files[i].data);
    free(r->files);
    if (r->set != NULL)
        google__protobuf__file_descriptor_set__free_unpacked(r->set, NULL);
    free(r);
}

wf_reflection *
wf_reflection_new(const unsigned char *set, size_t len, const char *const *services,
                  size_t nservices, wf_error *err)
{
    wf_reflection *r = calloc(1, sizeof *r);
    if (r == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    r->services = services;
    r->nservices = nservices;
    r->set = google__protobuf__file_descriptor_set__unpack(NULL, len, set);
    if (r->set == NULL) {
        wf_error_set(err, WF_E_INTERNAL, "the embedded descriptor set does not parse");
        wf_reflection_free(r);
        return NULL;
    }
    r->files = calloc(r->set->n_file ? r->set->n_file : 1, sizeof *r->files);
    if (r->files == NULL)
        goto oom;
    for (size_t f = 0; f < r->set->n_file; f++) {
        const Google__Protobuf__FileDescriptorProto *fd = r->set->file[f];
        size_t n = google__protobuf__file_descriptor_proto__get_packed_size(fd);
        r->files[f].data = malloc(n ? n : 1);
        if (r->files[f].data == NULL)
            goto oom;
        r->files[f].len = google__protobuf__file_descriptor_proto__pack(fd, r->files[f].data);
        const char *pkg = fd->package != NULL ? fd->package : "";
        for (size_t i = 0; i < fd->n_message_type; i++)
            if (index_message(r, pkg, fd->message_type[i], f) != 0)
                goto oom;
        for (size_t i = 0; i < fd->n_enum_type; i++)
            if (add_symbol(r, pkg, fd->enum_type[i]->name, f) != 0)
                goto oom;
        for (size_t i = 0; i < fd->n_service; i++) {
            if (add_symbol(r, pkg, fd->service[i]->name, f) != 0)
                goto oom;
            const char *svc = r->symbols[r->nsymbols - 1].name;
            for (size_t m = 0; m < fd->service[i]->n_method; m++)
                if (add_symbol(r, svc, fd->service[i]->method[m]->name, f) != 0)
                    goto oom;
        }
    }
    return r;
oom:
    wf_error_nomem(err);
    wf_reflection_free(r);
    return NULL;
}

static long
file_by_name(const wf_reflection *r, const char *name)
{
    for (size_t f = 0; f < r->set->n_file; f++)
        if (strcmp(r->set->file[f]->name, name) == 0)
            return (long)f;
    return -1;
}

static long
file_by_symbol(const wf_reflection *r, const char *symbol)
{
    if (symbol[0] == '.')
        symbol++;
    for (size_t i = 0; i < r->nsymbols; i++)
        if (strcmp(r->symbols[i].name, symbol) == 0)
            return (long)r->symbols[i].file;
    return -1;
}

/* Appends file f after its dependencies (depth first, each file once). */
static void
collect(const wf_reflection *r, size_t f, unsigned char *seen, size_t *order, size_t *n)
{
    if (seen[f])
        return;
    seen[f] = 1;
    const Google__Protobuf__FileDescriptorProto *fd = r->set->file[f];
    for (size_t i = 0; i < fd->n_dependency; i++) {
        long d = file_by_name(r, fd->dependency[i]);
        if (d >= 0)
            collect(r, (size_t)d, seen, order, n);
    }
    order[(*n)++] = f;
}

static void
error_response(Grpc__Reflection__V1__ServerReflectionResponse *resp, wf_arena *a, int code,
               const char *what, const char *name)
{
    Grpc__Reflection__V1__ErrorResponse *e = wf_arena_alloc(a, sizeof *e);
    if (e == NULL)
        return; /* the arena's flag tells the caller */
    grpc__reflection__v1__error_response__init(e);
    e->error_code = code;
    e->error_message = wf_arena_printf(a, "%s \"%s\" is not known", what, name);
    resp->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    resp->error_response = e;
}

static void
files_response(const wf_reflection *r, Grpc__Reflection__V1__ServerReflectionResponse *resp,
               wf_arena *a, size_t f)
{
    size_t nfiles = r->set->n_file;
    unsigned char *seen = wf_arena_calloc(a, nfiles, 1);
    size_t *order = wf_arena_calloc(a, nfiles, sizeof *order);
    Grpc__Reflection__V1__FileDescriptorResponse *fr = wf_arena_alloc(a, sizeof *fr);
    ProtobufCBinaryData *blobs = wf_arena_calloc(a, nfiles, sizeof *blobs);
    if (wf_arena_failed(a))
        return; /* the caller sees the flag too */
    size_t n = 0;
    collect(r, f, seen, order, &n);
    grpc__reflection__v1__file_descriptor_response__init(fr);
    /* The requested file first, then its dependencies. */
    for (size_t i = 0; i < n; i++)
        blobs[i] = r->files[order[n - 1 - i]];
    fr->n_file_descriptor_proto = n;
    fr->file_descriptor_proto = blobs;
    resp->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    resp->file_descriptor_response = fr;
}

Grpc__Reflection__V1__ServerReflectionResponse *
wf_reflection_answer(const wf_reflection *r,
                     const Grpc__Reflection__V1__ServerReflectionRequest *req, wf_arena *a,
                     wf_error *err)
{
    Grpc__Reflection__V1__ServerReflectionResponse *resp = wf_arena_alloc(a, sizeof *resp);
    if (resp == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    grpc__reflection__v1__server_reflection_response__init(resp);
    resp->valid_host = req->host;
    resp->original_request = (Grpc__Reflection__V1__ServerReflectionRequest *)req;

    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES: {
        Grpc__Reflection__V1__ListServiceResponse *ls = wf_arena_alloc(a, sizeof *ls);
        Grpc__Reflection__V1__ServiceResponse *svc = wf_arena_calloc(a, r->nservices, sizeof *svc);
        Grpc__Reflection__V1__ServiceResponse **svcp =
            wf_arena_calloc(a, r->nservices, sizeof *svcp);
        if (wf_arena_failed(a))
            break;
        grpc__reflection__v1__list_service_response__init(ls);
        for (size_t i = 0; i < r->nservices; i++) {
            grpc__reflection__v1__service_response__init(&svc[i]);
            svc[i].name = (char *)r->services[i];
            svcp[i] = &svc[i];
        }
        ls->n_service = r->nservices;
        ls->service = svcp;
        resp->message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
        resp->list_services_response = ls;
        break;
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME: {
        long f = file_by_name(r, req->file_by_filename);
        if (f < 0)
            error_response(resp, a, GRPC_STATUS_NOT_FOUND, "file", req->file_by_filename);
        else
            files_response(r, resp, a, (size_t)f);
        break;
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL: {
        long f = file_by_symbol(r, req->file_containing_symbol);
        if (f < 0)
            error_response(resp, a, GRPC_STATUS_NOT_FOUND, "symbol", req->file_containing_symbol);
        else
            files_response(r, resp, a, (size_t)f);
        break;
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        /* The API declares no extensions. */
        error_response(resp, a, GRPC_STATUS_NOT_FOUND, "extension of",
                       req->file_containing_extension != NULL
                           ? req->file_containing_extension->containing_type
                           : "");
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE: {
        if (file_by_symbol(r, req->all_extension_numbers_of_type) < 0) {
            error_response(resp, a, GRPC_STATUS_NOT_FOUND, "type",
                           req->all_extension_numbers_of_type);
            break;
        }
        Grpc__Reflection__V1__ExtensionNumberResponse *en = wf_arena_alloc(a, sizeof *en);
        if (en == NULL)
            break;
        grpc__reflection__v1__extension_number_response__init(en);
        en->base_type_name = req->all_extension_numbers_of_type;
        resp->message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
        resp->all_extension_numbers_response = en;
        break;
    }
    default:
        error_response(resp, a, GRPC_STATUS_INVALID_ARGUMENT, "request kind", "");
        break;
    }
    /* One check for every allocation of the answer, the nested builders'
     * included. */
    if (wf_arena_failed(a)) {
        wf_error_nomem(err);
        return NULL;
    }
    return resp;
}
