/*
 * Unit tests of the web console's escaping (server/console/console_html.c):
 * every value a page shows goes through these, so a hostile title or
 * variable can never become markup, a link or a script.
 */
#include <stdlib.h>
#include <string.h>

#include "console_int.h"
#include "test_support.h"

/* What fn writes for s. */
static char *
written(void (*fn)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(o);
    fn(o, s);
    fclose(o);
    return buf;
}

WF_TEST(test_html_escape)
{
    char *s = written(wf_console__esc, "<img src=x onerror=alert(1)>");
    ck_assert_str_eq(s, "&lt;img src=x onerror=alert(1)&gt;");
    free(s);
    s = written(wf_console__esc, "a\"b'c&d");
    ck_assert_str_eq(s, "a&quot;b&#39;c&amp;d");
    free(s);
    s = written(wf_console__esc, NULL);
    ck_assert_str_eq(s, "");
    free(s);
    s = written(wf_console__esc, "plain ünïcode");
    ck_assert_str_eq(s, "plain ünïcode");
    free(s);
}
END_TEST

WF_TEST(test_url_encode)
{
    char *s = written(wf_console__url, "a b/&?=#\"<x>");
    ck_assert_str_eq(s, "a%20b%2F%26%3F%3D%23%22%3Cx%3E");
    free(s);
    s = written(wf_console__url, "01a2-_.~Z");
    ck_assert_str_eq(s, "01a2-_.~Z");
    free(s);
}
END_TEST

/* A JSON string on one line of the event stream: no newline (which would
 * end the data line), no < (which a careless reader might put in HTML). */
WF_TEST(test_json_string)
{
    char *s = written(wf_console__json_str, "a\"\\\n</script>");
    ck_assert_str_eq(s, "\"a\\\"\\\\\\u000a\\u003c/script\\u003e\"");
    ck_assert_ptr_null(strchr(s, '\n'));
    free(s);
}
END_TEST

WF_TEST(test_enum_names)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    wf_console__enum(o, &workflow__v1__instance_status__descriptor,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED);
    fputc(' ', o);
    wf_console__enum(o, &workflow__v1__task_status__descriptor, 999);
    fclose(o);
    ck_assert_str_eq(buf, "FAILED 999");
    free(buf);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("console", "escaping", NULL, NULL, 0));
}
