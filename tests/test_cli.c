/* tests/test_cli.c: the ferrum command line: --version, --help on every command, `ferrum ops`
 * listing every registered operator with its domains, and bad input answered with a message
 * and exit status 2, never a crash. Drives the CLI entry point in-process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "ops/op.h"
#include "support/cli_run.h"

typedef struct {
    int code;
    char out[1 << 17], err[4096];
} cli_result;

static cli_result res;

#define RUN(...) CLI_RUN_INTO(res.code, res.out, res.err, __VA_ARGS__)

static void version_and_help(void **s) {
    (void)s;
    RUN("--version");
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, FE_VERSION));
    RUN("--help");
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "ops"));
    RUN("ops", "--help");
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "usage: ferrum ops"));
    const char *argv0[] = {"ferrum"};
    res.code = cli_run(1, argv0, res.out, sizeof res.out, res.err, sizeof res.err);
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "usage"));
}

static void ops_lists_every_operator_with_domains(void **s) {
    (void)s;
    RUN("ops");
    assert_int_equal(res.code, 0);
    for (int i = 0; i < fe_op_count(); i++) {
        char head[96];
        snprintf(head, sizeof head, "%s: ", fe_op_name(fe_op_at(i)));
        if (!strstr(res.out, head)) fail_msg("`ferrum ops` does not list %s", fe_op_name(fe_op_at(i)));
    }
    assert_non_null(strstr(res.out, "WIDTH"));
    assert_non_null(strstr(res.out, "CHOICES("));
    RUN("ops", "--names", "axpy");
    assert_int_equal(res.code, 0);
    assert_string_equal(res.out, "AXPY\n");
}

static void draw_writes_dot_for_each_example(void **s) {
    (void)s;
    char dir[] = "/tmp/ferrum-draw-XXXXXX";
    assert_non_null(mkdtemp(dir));
    RUN("draw", "--out", dir, "chain");
    if (res.code != 0) fail_msg("%s", res.err);
    char path[256];
    snprintf(path, sizeof path, "%s/chain.dot", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "digraph \"chain\""));
    assert_non_null(strstr(text, "RMSNorm#0"));
    RUN("draw", "--list");
    assert_non_null(strstr(res.out, "kv"));
    RUN("draw", "nosuch");
    assert_int_equal(res.code, 2);
    RUN("draw", "--out");
    assert_int_equal(res.code, 2);
    RUN("draw", "--help");
    assert_int_equal(res.code, 0);
    const char *made[] = {"chain.dot", "chain.svg"}; /* the SVG when graphviz is installed */
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        remove(path);
    }
    assert_int_equal(rmdir(dir), 0); /* nothing else was left in it */
}

static void bad_input_is_answered_not_crashed(void **s) {
    (void)s;
    RUN("fly");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "unknown command \"fly\""));
    RUN("ops", "NoSuchOp");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "no operator named \"NoSuchOp\""));
    RUN("ops", "--frobnicate");
    assert_int_equal(res.code, 2);
    assert_non_null(strstr(res.err, "unknown option"));
    RUN("");
    assert_int_equal(res.code, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_and_help),
        cmocka_unit_test(ops_lists_every_operator_with_domains),
        cmocka_unit_test(draw_writes_dot_for_each_example),
        cmocka_unit_test(bad_input_is_answered_not_crashed),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
