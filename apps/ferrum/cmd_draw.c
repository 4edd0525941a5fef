/* apps/ferrum/cmd_draw.c: `ferrum draw`: compiles built-in example graphs, or a model's
 * causal LM over its unread weights (headers only: no weight byte is read), and writes each
 * as Graphviz DOT (and SVG where Graphviz's `dot` is installed): steps with their design
 * keys, the per-call values they read, arena offsets and sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ferrum/graph.h"
#include "lm/model/causal.h"
#include "lm/model/checkpoint.h"

enum { EX_ROWS = 32, EX_COLS = 64, EX_CACHE = 128, EX_HQ = 4, EX_HKV = 2, EX_D = 32 };

/* chain: RMSNorm -> SiLU -> residual add -> Softmax over the first n rows */
static fe_status chain_body(fe_trace *t, const void *model) {
    (void)model;
    fe_h x = fe_bound(t, fe_input(t, "x"), 0, fe_scratchpad(t, "n"));
    fe_h in[2] = {x, fe_input(t, "w")};
    fe_h y = fe_apply(t, "RMSNorm", in, 2, NULL, 0, NULL, 0);
    fe_h a = fe_apply(t, "SiLU", &y, 1, NULL, 0, NULL, 0);
    fe_h sum[2] = {a, x};
    fe_h z = fe_apply(t, "ElementwiseAdd", sum, 2, NULL, 0, NULL, 0);
    fe_output(t, fe_apply(t, "Softmax", &z, 1, NULL, 0, NULL, 0));
    return fe_trace_status(t);
}

/* kv: write k and v at pos into the caches, attend over [:pos+1] */
static fe_status kv_body(fe_trace *t, const void *model) {
    (void)model;
    fe_val pos = fe_scratchpad(t, "pos");
    int64_t cs[3] = {EX_CACHE, EX_HKV, EX_D};
    fe_h kc = fe_state(t, "cache.k", FE_DTYPE_F32, 3, cs), vc = fe_state(t, "cache.v", FE_DTYPE_F32, 3, cs);
    fe_copy_into(t, fe_at(t, kc, 0, pos, fe_const(1)), fe_input(t, "k"));
    fe_copy_into(t, fe_at(t, vc, 0, pos, fe_const(1)), fe_input(t, "v"));
    fe_h in[3] = {fe_input(t, "q"), fe_bound(t, kc, 0, fe_val_add(pos, 1)),
                  fe_bound(t, vc, 0, fe_val_add(pos, 1))};
    fe_value_set off = {"q_offset", pos};
    fe_output(t, fe_apply(t, "MHA", in, 3, NULL, 0, &off, 1));
    return fe_trace_status(t);
}

typedef struct example {
    const char *name, *summary;
    fe_body_fn body;
    int n_inputs;
    const char *input_names[3];
    int rank[3];
    int64_t shape[3][3];
} example;

static const example examples[] = {
    {"chain", "RMSNorm, SiLU, a residual add and Softmax over the first n rows", chain_body, 2,
     {"x", "w"}, {2, 1}, {{EX_ROWS, EX_COLS}, {EX_COLS}}},
    {"kv", "a KV-cache write at pos and attention over [:pos+1]", kv_body, 3, {"q", "k", "v"},
     {3, 3, 3}, {{1, EX_HQ, EX_D}, {1, EX_HKV, EX_D}, {1, EX_HKV, EX_D}}},
};
enum { N_EXAMPLES = sizeof examples / sizeof examples[0] };

static void draw_usage(FILE *f) {
    fprintf(f, "usage: ferrum draw [--help] [--list] [--out DIR] [GRAPH...]\n"
               "       ferrum draw [--out DIR] --model MODEL [--max-seq-len N]\n\n"
               "Compiles built-in example graphs and writes DIR/GRAPH.dot (Graphviz), and\n"
               "DIR/GRAPH.svg where Graphviz's `dot` is installed (Debian: graphviz).\n"
               "With --model, compiles MODEL's causal LM (its prefill chunk and decode step)\n"
               "from the checkpoint's headers alone, reading no weights, and writes\n"
               "DIR/causal.dot. MODEL is a GGUF file or a Hugging Face checkpoint, as for\n"
               "`ferrum generate`.\n\n"
               "  --list           list the example graphs\n"
               "  --out DIR        where to write (default: the current directory)\n"
               "  --model MODEL    draw MODEL's graph instead of the examples\n"
               "  --max-seq-len N  KV cache rows of the drawn model (default 256)\n");
}

static fe_device *draw_device(fe_error *err) {
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    fe_device *dev = NULL;
    return fe_device_create(&o, &dev, err) == FE_OK ? dev : NULL;
}

/* Writes g's DOT to dir/name.dot (and .svg where `dot` is installed). */
static int write_dot(const fe_graph *g, const char *dir, const char *name, const fe_cli_io *io) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.dot", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(io->err, "ferrum draw: cannot write %s; give a writable --out folder\n", path);
        return FE_EXIT_FAILURE;
    }
    fe_status st = fe_graph_dot(g, f);
    if (fclose(f) != 0 || st != FE_OK) {
        fprintf(io->err, "ferrum draw: error writing %s\n", path);
        return FE_EXIT_FAILURE;
    }
    fprintf(io->out, "%s\n", path);
    if (system("command -v dot >/dev/null 2>&1") == 0) {
        char cmd[2200];
        snprintf(cmd, sizeof cmd, "dot -Tsvg '%s/%s.dot' -o '%s/%s.svg'", dir, name, dir, name);
        if (!strchr(dir, '\'') && system(cmd) == 0) fprintf(io->out, "%s/%s.svg\n", dir, name);
    }
    return FE_EXIT_OK;
}

static int draw_one(const example *ex, const char *dir, const fe_cli_io *io) {
    fe_graph *g = NULL;
    fe_error err = {0};
    int code = FE_EXIT_FAILURE;
    fe_named_tensor in[3];
    fe_device *dev = draw_device(&err);
    if (!dev || fe_graph_create(dev, ex->name, ex->body, NULL, &g, &err) != FE_OK) {
        fprintf(io->err, "ferrum draw: %s\n", err.message);
        goto done;
    }
    for (int i = 0; i < ex->n_inputs; i++)
        in[i] = (fe_named_tensor){ex->input_names[i],
                                  fe_tensor_contiguous(NULL, FE_DTYPE_F32, ex->rank[i], ex->shape[i])};
    if (fe_graph_compile(g, in, ex->n_inputs, NULL) != FE_OK) {
        fprintf(io->err, "ferrum draw: %s\n", fe_graph_message(g));
        goto done;
    }
    code = write_dot(g, dir, ex->name, io);
done:
    fe_graph_destroy(g);
    fe_device_destroy(dev);
    return code;
}

/* The model's causal LM over its unread weights: traced and compiled, never called. */
static int draw_model(const char *model, int64_t max_seq_len, const char *dir, const fe_cli_io *io) {
    fe_gguf *gguf = NULL;
    fe_safetensors *st = NULL;
    fe_lm_config cfg;
    fe_llama_weights w;
    fe_causal *m = NULL;
    fe_error err = {0};
    int code = FE_EXIT_FAILURE;
    fe_device *dev = draw_device(&err);
    fe_causal_options o = fe_causal_options_default();
    o.max_seq_len = max_seq_len;
    if (!dev) {
        fprintf(io->err, "ferrum draw: %s\n", err.message);
    } else if (fe_checkpoint_open(model, true, &gguf, &st, &cfg, &w, &err) != FE_OK) {
        fprintf(io->err, "ferrum draw: %s\n", err.message);
    } else if (fe_causal_create(dev, &w, &o, &m, &err) != FE_OK) {
        fprintf(io->err, "ferrum draw: building %s's graph over its unread weights: %s\n", model,
                err.message);
    } else {
        code = write_dot(fe_causal_graph(m), dir, "causal", io);
    }
    fe_causal_destroy(m);
    fe_llama_weights_free(&w);
    fe_gguf_close(gguf);
    fe_safetensors_close(st);
    fe_device_destroy(dev);
    return code;
}

int fe_cmd_draw(int argc, char **argv, const fe_cli_io *io) {
    const char *dir = ".", *model = NULL;
    int64_t max_seq_len = 256;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
            draw_usage(io->out);
            return FE_EXIT_OK;
        }
        if (strcmp(argv[first], "--list") == 0) {
            for (int i = 0; i < N_EXAMPLES; i++)
                fprintf(io->out, "%-8s %s\n", examples[i].name, examples[i].summary);
            return FE_EXIT_OK;
        }
        if (strcmp(argv[first], "--out") == 0) {
            if (first + 1 >= argc) {
                fprintf(io->err, "ferrum draw: --out needs a folder\n");
                return FE_EXIT_USAGE;
            }
            dir = argv[++first];
            continue;
        }
        if (strcmp(argv[first], "--model") == 0 || strcmp(argv[first], "--max-seq-len") == 0) {
            bool is_model = argv[first][2] == 'm' && argv[first][3] == 'o';
            if (first + 1 >= argc) {
                fprintf(io->err, "ferrum draw: %s needs a value\n", argv[first]);
                return FE_EXIT_USAGE;
            }
            const char *v = argv[++first];
            char *end;
            errno = 0;
            long long n = is_model ? 0 : strtoll(v, &end, 10);
            if (is_model) {
                model = v;
            } else if (errno || end == v || *end || n < 1 || n > (1 << 24)) {
                fprintf(io->err, "ferrum draw: --max-seq-len %s is not a count in 1..2^24\n", v);
                return FE_EXIT_USAGE;
            } else {
                max_seq_len = n;
            }
            continue;
        }
        fprintf(io->err, "ferrum draw: unknown option \"%s\"; `ferrum draw --help` lists them\n",
                argv[first]);
        return FE_EXIT_USAGE;
    }
    if (model && first < argc) {
        fprintf(io->err, "ferrum draw: --model draws the model's graph; give no example names with it\n");
        return FE_EXIT_USAGE;
    }
    if (model) return draw_model(model, max_seq_len, dir, io);
    for (int i = first; i < argc; i++) {
        bool known = false;
        for (int k = 0; k < N_EXAMPLES; k++) known |= strcmp(argv[i], examples[k].name) == 0;
        if (!known) {
            fprintf(io->err, "ferrum draw: no example graph \"%s\"; `ferrum draw --list` lists them\n",
                    argv[i]);
            return FE_EXIT_USAGE;
        }
    }
    for (int k = 0; k < N_EXAMPLES; k++) {
        bool wanted = first >= argc;
        for (int i = first; i < argc; i++) wanted |= strcmp(argv[i], examples[k].name) == 0;
        if (wanted && draw_one(&examples[k], dir, io) != FE_EXIT_OK) return FE_EXIT_FAILURE;
    }
    return FE_EXIT_OK;
}
