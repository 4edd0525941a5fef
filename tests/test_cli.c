/* tests/test_cli.c: the ferrum command line: --version, --help on every command (with every
 * range and default), `ferrum ops` listing every registered operator with its domains, the
 * shared option parser (--opt=value, short letters, --, repeatable --stop), bad input answered
 * with a message naming the option, value and range and exit status 2 (never a crash, and
 * before any weight is read), -t and FERRUM_WORKERS bounded by the CPUs, and `ferrum draw`
 * drawing a real model with its repeated layers folded and Graphviz bounded in time. Drives
 * the CLI entry point in-process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cmocka.h>

#include "../apps/ferrum/cli.h"
#include "../apps/ferrum/cmd_generate.h"
#include "ferrum/device.h"
#include "ops/op.h"
#include "support/cli_run.h"
#include "support/lm_fixtures.h"

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
    assert_non_null(strstr(res.out, "device: ")); /* the kernels this machine runs */
    assert_non_null(strstr(res.out, " kernels "));
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

static void expect_usage_error(const char *needle) {
    assert_int_equal(res.code, 2);
    if (!strstr(res.err, needle)) fail_msg("expected \"%s\" in: %s", needle, res.err);
}

/* an argv (after "ferrum") the CLI must refuse with exit status 2, and what it must say */
typedef struct refusal {
    const char *argv[6];
    const char *says;
} refusal;

static void expect_refusals(const refusal *r, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *argv[8] = {"ferrum"};
        int argc = 1;
        for (int k = 0; k < 6 && r[i].argv[k]; k++) argv[argc++] = r[i].argv[k];
        res.code = cli_run(argc, argv, res.out, sizeof res.out, res.err, sizeof res.err);
        expect_usage_error(r[i].says);
    }
}

static void an_unknown_last_option_is_called_unknown(void **s) {
    (void)s;
    static const refusal r[] = {
        {{"generate", "m.gguf", "--frobnicate"},
         "unknown option \"--frobnicate\"; `ferrum generate --help` lists them"},
        {{"generate", "m.gguf", "--frobnicate=3"}, "unknown option \"--frobnicate=3\""},
        {{"draw", "--frobnicate"}, "unknown option \"--frobnicate\""},
        {{"ops", "-q"}, "unknown option \"-q\""},
    };
    expect_refusals(r, sizeof r / sizeof r[0]);
}

static void a_missing_value_says_what_the_option_needs(void **s) {
    (void)s;
    static const refusal r[] = {
        {{"generate", "m.gguf", "--num-tokens"}, "--num-tokens needs a value: an integer in -1..1048576"},
        {{"generate", "m.gguf", "-p"}, "-p (--prompt) needs a value: a nonempty TEXT"},
        {{"draw", "--out"}, "--out needs a value"},
    };
    expect_refusals(r, sizeof r / sizeof r[0]);
}

static void a_bad_value_names_the_option_the_value_and_the_range(void **s) {
    (void)s;
    static const refusal r[] = {
        {{"generate", "m.gguf", "-n", "abc"},
         "-n (--num-tokens) \"abc\" is not valid; give an integer in -1..1048576"},
        {{"generate", "m.gguf", "--top-p=2"}, "--top-p \"2\" is not valid; give a number in (0, 1]"},
        {{"generate", "m.gguf", "--dtype", "f16"}, "--dtype \"f16\" is not valid; give one of bf16, f32"},
        {{"generate", "m.gguf", "--mmap", "--no-mmap"},
         "--mmap and --no-mmap: give one (or neither: the weights are copied into memory when "
         "they fit)"},
        {{"generate", "m.gguf", "--repeat-penalty", "0"}, "(0, 100]"},
        {{"generate", "m.gguf", "--presence-penalty", "3"}, "[-2, 2]"},
        {{"generate", "m.gguf", "--chat=yes"}, "--chat takes no value"},
        {{"draw", "--max-seq-len", "0"}, "--max-seq-len \"0\" is not valid; give an integer in 1..16777216"},
    };
    expect_refusals(r, sizeof r / sizeof r[0]);
}

/* serve decodes its slots as one batch by default: --no-batch turns that off, the two
 * together are refused, and more slots than a batch holds name both ways out */
static void serve_batch_flags_are_checked_before_the_model_opens(void **s) {
    (void)s;
    static const refusal r[] = {
        {{"serve", "m.gguf", "--batch", "--no-batch"},
         "--batch and --no-batch contradict each other; give one (batched decode is the default)"},
        {{"serve", "m.gguf", "--parallel", "13"},
         "--parallel 13 in 1 group puts more than 12 slots in one batch (batched decode, the "
         "default); give at most 12 slots, more --groups, or --no-batch"},
        {{"serve", "--embedding-model", "enc", "--no-batch"},
         "--batch, --no-batch, --groups, --alias and --cache-type are for a chat MODEL"},
        {{"serve", "--embedding-model", "enc", "--cache-type", "f16"},
         "--batch, --no-batch, --groups, --alias and --cache-type are for a chat MODEL"},
        {{"serve", "m.gguf", "--cache-type", "bf16"},
         "--cache-type \"bf16\" is not valid; give one of f32, f16"},
    };
    expect_refusals(r, sizeof r / sizeof r[0]);
}

static void a_value_that_looks_like_an_option_is_refused(void **s) {
    (void)s;
    RUN("generate", "m.gguf", "--prompt", "--chat");
    expect_usage_error("--prompt needs a value; got the option --chat (quote it, or use "
                       "--prompt=--chat to mean the text)");
    gen_args a;
    bool help;
    char *argv[] = {"generate", "m.gguf", "--prompt=--chat", "--num-tokens", "-1"};
    assert_int_equal(fe_generate_parse(5, argv, &a, &help, stderr), 0);
    assert_string_equal(a.prompt, "--chat");
    assert_int_equal(a.num_tokens, -1);
    gen_args_deinit(&a);
}

static void options_take_equals_short_letters_and_a_double_dash(void **s) {
    (void)s;
    gen_args a;
    bool help;
    char *argv[] = {"generate", "-m", "x.gguf", "-p", "hi", "-n", "-1", "-t", "1", "-s", "7",
                    "-c", "512", "--stop=</s>", "--stop", "END", "--min-p=0.05",
                    "--repeat-penalty", "1.1", "--repeat-last-n", "-1", "--presence-penalty",
                    "0.5", "--frequency-penalty=-0.5", "--json", "--top-k=40", "--decode-dot=f32",
                    "--cache-type", "f32"};
    int argc = (int)(sizeof argv / sizeof argv[0]);
    assert_int_equal(fe_generate_parse(argc, argv, &a, &help, stderr), 0);
    assert_false(help);
    assert_string_equal(a.open.model, "x.gguf");
    assert_string_equal(a.prompt, "hi");
    assert_int_equal(a.num_tokens, -1);
    assert_int_equal(a.open.threads, 1);
    assert_true(a.seed_given);
    assert_int_equal(a.sampling.seed, 7);
    assert_int_equal(a.max_seq_len, 512);
    assert_int_equal(a.n_stop, 2);
    assert_string_equal(a.stop[0], "</s>");
    assert_string_equal(a.stop[1], "END");
    const fe_lm_sampling *sp = &a.sampling;
    assert_true(sp->min_p == 0.05 && sp->repeat_penalty == 1.1 && sp->repeat_last_n == -1);
    assert_true(sp->presence_penalty == 0.5 && sp->frequency_penalty == -0.5);
    assert_true(a.json);
    assert_int_equal(a.sampling.top_k, 40);
    assert_int_equal(a.cache_type, FE_LM_CACHE_F32);
    gen_args_deinit(&a);
    /* defaults: no seed given, penalties off, 64 tokens; after --, "-odd" is the MODEL */
    char *argv2[] = {"generate", "--", "-odd"};
    assert_int_equal(fe_generate_parse(3, argv2, &a, &help, stderr), 0);
    assert_string_equal(a.open.model, "-odd");
    assert_false(a.seed_given);
    assert_true(sp->repeat_penalty == 1 && sp->presence_penalty == 0 && sp->frequency_penalty == 0);
    assert_int_equal(a.num_tokens, 64);
    assert_int_equal(a.n_stop, 0);
    assert_int_equal(a.cache_type, FE_LM_CACHE_F16); /* the default */
    assert_null(a.prompt);
    assert_null(a.prompt_text);
    gen_args_deinit(&a);
    RUN("generate", "m.gguf", "--stop", "a", "--stop", "b", "--stop", "c", "--stop", "d", "--stop",
        "e", "--stop", "f", "--stop", "g", "--stop", "h", "--stop", "i");
    expect_usage_error("--stop is given more than 8 times");
    RUN("generate", "-m", "a.gguf", "b.gguf");
    expect_usage_error("a second MODEL");
    RUN("generate", "m.gguf", "--cache-type", "q8_0");
    expect_usage_error("--cache-type");
    assert_non_null(strstr(res.err, "f32"));
    assert_non_null(strstr(res.err, "f16"));
}

static void help_lists_every_range_and_default(void **s) {
    (void)s;
    RUN("generate", "--help");
    assert_int_equal(res.code, 0);
    const char *want[] = {"usage: ferrum generate", "-n, --num-tokens N", "-1..1048576",
                          "default 64", "-t, --threads N", "-p, --prompt TEXT",
                          "-f, --prompt-file F", "-s, --seed S", "-c, --max-seq-len N",
                          "-m, --model MODEL", "--stop STR", "(repeatable,", "at most 8 times",
                          "--min-p P", "[-2, 2]", "(0, 1]", "--json", "--dtype bf16|f32",
                          "default bf16", "--decode-dot int8|f32", "--prefill-dot bf16|f32|int8",
                          "--cache-type f32|f16",
                          "--random-weights SEED", "--write-safetensors DIR", "--chunk N",
                          "1..65536", "--check-determinism N", "--profile", "-h, --help"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(res.out, want[i])) fail_msg("`generate --help` lacks \"%s\"", want[i]);
    RUN("draw", "-h");
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "--no-render"));
    assert_non_null(strstr(res.out, "--render-timeout S"));
    assert_non_null(strstr(res.out, "default 60"));
    RUN("ops", "-h");
    assert_int_equal(res.code, 0);
    assert_non_null(strstr(res.out, "--names"));
}

/* the real model's path, so a refusal can be shown to come before its weights load */
static const char *some_model(void) {
    const char *m = lmfix_smollm2_path();
    return access(m, R_OK) == 0 ? m : "m.gguf";
}

/* and a --tokenizer that cannot be read, or --prompt-ids that are not ids: before load too */
static void prompt_file_that_is_a_directory_is_refused_before_load(void **s) {
    (void)s;
    char dir[] = "/tmp/ferrum-promptdir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    RUN("generate", some_model(), "--prompt-file", dir);
    expect_usage_error("is a directory; give a text file");
    assert_non_null(strstr(res.err, dir));
    assert_null(strstr(res.err, "mapping")); /* nothing was loaded */
    char missing[64];
    snprintf(missing, sizeof missing, "%s/none.txt", dir);
    RUN("generate", some_model(), "-f", missing);
    expect_usage_error("cannot be read");
    assert_non_null(strstr(res.err, missing));
    assert_null(strstr(res.err, "mapping"));
    RUN("generate", some_model(), "--tokenizer", dir);
    expect_usage_error("--tokenizer");
    assert_non_null(strstr(res.err, "is a directory"));
    assert_null(strstr(res.err, "mapping"));
    RUN("generate", some_model(), "--prompt-ids", "1,,2");
    expect_usage_error("--prompt-ids \"1,,2\": \"\" is not an id; give comma-separated ids (1,2,3)");
    assert_null(strstr(res.err, "mapping"));
    assert_int_equal(rmdir(dir), 0);
}

static void prompt_file_is_read_by_the_parser_and_dash_is_stdin(void **s) {
    (void)s;
    char path[] = "/tmp/ferrum-prompt-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "Once upon a time", 16), 16);
    close(fd);
    gen_args a;
    bool help;
    char *argv[] = {"generate", "m.gguf", "--prompt-file", path};
    assert_int_equal(fe_generate_parse(4, argv, &a, &help, stderr), 0);
    assert_string_equal(a.prompt_text, "Once upon a time");
    gen_args_deinit(&a);
    assert_null(a.prompt_text);
    int saved = dup(0);
    assert_non_null(freopen(path, "r", stdin));
    char *argv2[] = {"generate", "m.gguf", "-f", "-"};
    int code = fe_generate_parse(4, argv2, &a, &help, stderr);
    dup2(saved, 0);
    close(saved);
    clearerr(stdin);
    assert_int_equal(code, 0);
    assert_string_equal(a.prompt_text, "Once upon a time");
    gen_args_deinit(&a);
    remove(path);
}

static void threads_past_the_cpus_are_refused(void **s) {
    (void)s;
    int cpus = fe_device_cpus_allowed();
    char n[16], want[96];
    snprintf(n, sizeof n, "%d", cpus + 1);
    RUN("generate", some_model(), "-t", n);
    snprintf(want, sizeof want, "-t/--threads %d is more than the %d CPUs", cpus + 1, cpus);
    expect_usage_error(want);
    assert_null(strstr(res.err, "mapping"));
    RUN("generate", some_model(), "--threads", "0");
    expect_usage_error("1..1024");
    /* FERRUM_WORKERS past the CPUs: the device refuses it, naming the variable */
    char *old = getenv("FERRUM_WORKERS") ? strdup(getenv("FERRUM_WORKERS")) : NULL;
    setenv("FERRUM_WORKERS", "1000", 1);
    RUN("draw", "--no-render", "--out", "/tmp", "chain");
    if (old) setenv("FERRUM_WORKERS", old, 1);
    else unsetenv("FERRUM_WORKERS");
    free(old);
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "FERRUM_WORKERS=1000"));
    snprintf(want, sizeof want, "the %d CPUs this process may use", cpus);
    assert_non_null(strstr(res.err, want));
}

static size_t slurp_file(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
    return got;
}

static int count(const char *text, const char *needle) {
    int c = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) c++;
    return c;
}

static bool have_graphviz(void) { return system("command -v dot >/dev/null 2>&1") == 0; }

static void draw_model_collapses_repeated_layers(void **s) {
    (void)s;
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    char dir[] = "/tmp/ferrum-drawm-XXXXXX", out[96], path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/made/with/parents", dir);
    RUN("draw", "--no-render", "--out", out, "--model", model);
    if (res.code != 0) fail_msg("%s", res.err);
    snprintf(path, sizeof path, "%s/causal.dot", out);
    static char dot[1 << 20];
    assert_true(slurp_file(path, dot, sizeof dot) > 0);
    /* SmolLM2-135M has 30 layers: layer 0 drawn, 1..29 one node, in each of the two versions */
    assert_int_equal(count(dot, "layers 1..29: same as layer 0"), 2);
    int steps = count(dot, "[shape=box, ");
    if (steps > 60) fail_msg("%d step nodes drawn: the layers are not folded", steps);
    assert_true(steps >= 10);
    assert_null(strstr(dot, "layers.5.")); /* no weight of a folded layer is drawn */
    assert_non_null(strstr(dot, "layers.0.wq"));
    assert_non_null(strstr(dot, "rankdir=TB"));
    remove(path);
    if (have_graphviz()) {
        uint64_t t0 = fe_time_ns();
        RUN("draw", "--out", out, "--model", model);
        double secs = (double)(fe_time_ns() - t0) / 1e9;
        if (res.code != 0) fail_msg("%s", res.err);
        assert_non_null(strstr(res.err, "with Graphviz (at most 60 s)"));
        assert_true(secs < 61);
        snprintf(path, sizeof path, "%s/causal.svg", out);
        assert_true(slurp_file(path, dot, sizeof dot) > 0);
        /* top to bottom, not one row: no more than a few times wider than tall */
        const char *w = strstr(dot, "width=\""), *h = strstr(dot, "height=\"");
        assert_true(w && h);
        double width = atof(w + 7), height = atof(h + 8);
        if (width > 4 * height || width > 20000)
            fail_msg("the SVG is %.0f x %.0f pt: not a picture a person can read", width, height);
        remove(path);
        snprintf(path, sizeof path, "%s/causal.dot", out);
        remove(path);
    }
    const char *made[] = {"made/with/parents", "made/with", "made", ""};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        assert_int_equal(rmdir(path), 0);
    }
}

static void draw_says_when_graphviz_runs_past_its_bound(void **s) {
    (void)s;
    char dir[] = "/tmp/ferrum-slowdot-XXXXXX", path[128], newpath[4096];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/dot", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nexec sleep 30\n");
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    char *old = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(newpath, sizeof newpath, "%s:%s", dir, old);
    setenv("PATH", newpath, 1);
    uint64_t t0 = fe_time_ns();
    RUN("draw", "--out", dir, "--render-timeout", "1", "chain");
    double secs = (double)(fe_time_ns() - t0) / 1e9;
    setenv("PATH", old, 1);
    free(old);
    assert_int_equal(res.code, 1);
    assert_non_null(strstr(res.err, "did not finish"));
    assert_non_null(strstr(res.err, "within 1 s"));
    assert_true(secs < 10);
    remove(path);
    snprintf(path, sizeof path, "%s/chain.svg", dir);
    assert_int_not_equal(access(path, F_OK), 0); /* no half-written SVG left */
    snprintf(path, sizeof path, "%s/chain.dot", dir);
    assert_int_equal(remove(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_and_help),
        cmocka_unit_test(ops_lists_every_operator_with_domains),
        cmocka_unit_test(draw_writes_dot_for_each_example),
        cmocka_unit_test(bad_input_is_answered_not_crashed),
        cmocka_unit_test(an_unknown_last_option_is_called_unknown),
        cmocka_unit_test(a_missing_value_says_what_the_option_needs),
        cmocka_unit_test(a_bad_value_names_the_option_the_value_and_the_range),
        cmocka_unit_test(a_value_that_looks_like_an_option_is_refused),
        cmocka_unit_test(options_take_equals_short_letters_and_a_double_dash),
        cmocka_unit_test(help_lists_every_range_and_default),
        cmocka_unit_test(prompt_file_that_is_a_directory_is_refused_before_load),
        cmocka_unit_test(prompt_file_is_read_by_the_parser_and_dash_is_stdin),
        cmocka_unit_test(threads_past_the_cpus_are_refused),
        cmocka_unit_test(serve_batch_flags_are_checked_before_the_model_opens),
        cmocka_unit_test(draw_model_collapses_repeated_layers),
        cmocka_unit_test(draw_says_when_graphviz_runs_past_its_bound),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
