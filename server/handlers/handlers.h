/*
 * handlers: the handler functions named by the method table (routes.c).
 */
#ifndef WF_HANDLERS_H
#define WF_HANDLERS_H

#include "handler.h"

/* Answers UNIMPLEMENTED for an RPC of the contract whose capability is not
 * built in this version of the service. */
wf_code h_not_built(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                    wf_error *err);

#endif /* WF_HANDLERS_H */
