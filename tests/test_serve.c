/* tests/test_serve.c: `ferrum serve` end to end, on SmolLM2 over a loopback port, driven by
 * the real OpenAI Python client and curl (tests/serve/test_serve.py, one group of claims per
 * test): every endpoint (api), the fault cases (faults), tokens equal to `ferrum generate`'s
 * alone and beside other requests (equal), a client gone mid-stream (disconnect), both again
 * with batched decode (batch), POST /v1/embeddings on all-MiniLM-L6-v2 beside the chat model
 * and alone, and `dimensions` on a random tiny EmbeddingGemma folder written here (embed).
 *
 * The client lives in a venv under the build folder ($FERRUM_BUILD/serve-venv), made on first
 * use from tests/serve/requirements.txt (pip, PyPI) and made again when that file changes.
 * A missing model or a venv that cannot be made skips, or fails under CI=true. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lm/model/embedgemma.h"
#include "support/lm_fixtures.h"

static char venv_python[600];

static int sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The venv's python, made when missing or when requirements.txt is not the one it was made
 * from; NULL (after the reason) when it cannot be made. */
static const char *venv(void) {
    const char *build = getenv("FERRUM_BUILD");
    char dir[512], cmd[8192];
    snprintf(dir, sizeof dir, "%s/serve-venv", build && *build ? build : "build");
    snprintf(venv_python, sizeof venv_python, "%s/bin/python3", dir);
    snprintf(cmd, sizeof cmd, "cmp -s tests/serve/requirements.txt %s/requirements.txt && "
             "%s -c 'import openai' 2>/dev/null", dir, venv_python);
    if (sh(cmd) == 0) return venv_python;
    snprintf(cmd, sizeof cmd, "rm -rf %s && python3 -m venv %s && %s/bin/pip install -q "
             "--disable-pip-version-check -r tests/serve/requirements.txt >%s.log 2>&1 && "
             "cp tests/serve/requirements.txt %s/requirements.txt", dir, dir, dir, dir, dir);
    if (sh(cmd) == 0) return venv_python;
    if (lmfix_in_ci()) fail_msg("could not make %s (see %s.log); test_serve needs the openai client", dir, dir);
    print_message("SKIP: could not make %s (no PyPI? see %s.log)\n", dir, dir);
    return NULL;
}

/* A random EmbeddingGemma folder of the tiny preset (64-wide vectors, trained or not, cut as
 * Matryoshka models are) with the tiny tokenizer.json of tests/fixtures: the server's
 * `dimensions` on a model that allows it. Written into dir (a new temporary folder). */
static void write_tiny_embeddinggemma(char dir[64]) {
    fe_lm_config c;
    int64_t window, mid;
    fe_error err = {0};
    fe_embedgemma m;
    strcpy(dir, "/tmp/ferrum_serve_gemma_XXXXXX");
    assert_non_null(mkdtemp(dir));
    if (fe_embedgemma_preset("embeddinggemma-tiny", &c, &window, &mid, &err) != FE_OK ||
        fe_embedgemma_random(&c, window, mid, 5, &m, &err) != FE_OK)
        fail_msg("%s", err.message);
    fe_status st = fe_embedgemma_write(&m, dir, &err);
    fe_embedgemma_free(&m);
    if (st != FE_OK) fail_msg("%s", err.message);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cp tests/fixtures/embedgemma_tiny/tokenizer.json '%s'/", dir);
    assert_int_equal(sh(cmd), 0);
}

static void run_group(const char *group) {
    const char *model = lmfix_need_smollm2();
    if (!model) skip();
    char encoder[1024] = "", gemma[64] = "";
    if (strcmp(group, "embed") == 0) {
        const char *e = lmfix_need_minilm();
        if (!e) skip();
        write_tiny_embeddinggemma(gemma);
        snprintf(encoder, sizeof encoder, " --encoder %s --matryoshka-encoder %s", e, gemma);
    }
    const char *py = venv();
    if (!py) skip();
    const char *bin = getenv("FERRUM_BIN");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s tests/serve/test_serve.py %s --ferrum %s --model %s%s", py, group,
             bin && *bin ? bin : "build/ferrum", model, encoder);
    int code = sh(cmd);
    if (*gemma) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", gemma);
        sh(cmd);
    }
    if (code != 0) fail_msg("test_serve.py %s exited %d", group, code);
}

static void serves_every_endpoint_through_the_openai_client(void **state) {
    (void)state;
    run_group("api");
}

static void refuses_every_fault_by_name_and_keeps_serving(void **state) {
    (void)state;
    run_group("faults");
}

static void tokens_equal_generate_alone_and_beside_others(void **state) {
    (void)state;
    run_group("equal");
}

static void a_client_gone_mid_stream_frees_its_slot(void **state) {
    (void)state;
    run_group("disconnect");
}

static void batched_decode_gives_the_same_tokens_and_frees_a_row_gone(void **state) {
    (void)state;
    run_group("batch");
}

static void embeddings_are_ferrum_embeds_to_the_byte_and_faults_are_named(void **state) {
    (void)state;
    run_group("embed");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(serves_every_endpoint_through_the_openai_client),
        cmocka_unit_test(refuses_every_fault_by_name_and_keeps_serving),
        cmocka_unit_test(tokens_equal_generate_alone_and_beside_others),
        cmocka_unit_test(a_client_gone_mid_stream_frees_its_slot),
        cmocka_unit_test(batched_decode_gives_the_same_tokens_and_frees_a_row_gone),
        cmocka_unit_test(embeddings_are_ferrum_embeds_to_the_byte_and_faults_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
