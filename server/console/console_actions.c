/*
 * console_actions: the one dispatch of the console's actions (POST, the
 * CSRF token and the origin checked already). Each action is a single
 * function of the context and of the actor who acts, so that who may do
 * what can be decided here, in one place.
 */
#include <string.h>

#include "console_int.h"

static const struct {
    const char *path;
    wf_console__action_fn fn;
} actions[] = {
    {"/instance/retry", wf_console__act_retry},
    {"/instance/variables", wf_console__act_variables},
    {"/instance/cancel", wf_console__act_cancel},
    {"/instance/suspend", wf_console__act_suspend},
    {"/instance/resume", wf_console__act_resume},
    {"/instance/signal", wf_console__act_signal},
    {"/instance/modify", wf_console__act_modify},
    {"/instance/migrate", wf_console__act_migrate},
    {"/task/claim", wf_console__act_claim},
    {"/task/release", wf_console__act_release},
    {"/task/complete", wf_console__act_complete},
    {"/batch/preview", wf_console__act_batch_preview},
    {"/batch/start", wf_console__act_batch_start},
    {"/batch/cancel", wf_console__act_batch_cancel},
};

void
wf_console__act(wf_console__ctx *x, const char *path)
{
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
        if (strcmp(path, actions[i].path) == 0) {
            actions[i].fn(x, x->actor);
            return;
        }
    x->status = 404;
    wf_console__page_begin(x, "Not found");
    wf_console__page_end(x);
}
