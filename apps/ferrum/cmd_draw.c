/* apps/ferrum/cmd_draw.c: `ferrum draw`: compiles built-in example graphs, or a model's
 * causal LM over its unread weights (headers only: no weight byte is read), and writes each
 * as Graphviz DOT (and SVG where Graphviz's `dot` is installed): steps with their design
 * keys, the per-call values they read, arena offsets and sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "ferrum/graph.h"
#include "ferrum/lm.h"
#include "render.h"

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

static const char draw_synopsis[] =
    "usage: ferrum draw [options] [GRAPH...]\n"
    "       ferrum draw [options] --model MODEL\n\n"
    "Compiles built-in example graphs and writes DIR/GRAPH.dot (Graphviz), and renders\n"
    "DIR/GRAPH.svg where Graphviz's `dot` is installed (Debian: graphviz), for at most\n"
    "--render-timeout seconds. With --model, compiles MODEL's causal LM (its prefill chunk\n"
    "and decode step) from the checkpoint's headers alone, reading no weights, and writes\n"
    "DIR/causal.dot: one layer drawn, the layers after it that repeat it drawn as one node.\n"
    "MODEL is a GGUF file or a Hugging Face checkpoint, as for `ferrum generate`.\n";

/* what to draw, and how */
typedef struct draw_args {
    const char *dir, *model;
    int64_t max_seq_len, timeout_s;
    bool list, no_render;
} draw_args;

static fe_device *draw_device(fe_error *err) {
    fe_device_options o = fe_device_options_default();
    o.pin = false;
    fe_device *dev = NULL;
    return fe_device_create(&o, &dev, err) == FE_OK ? dev : NULL;
}

/* Writes g's DOT to dir/name.dot, and renders it to dir/name.svg unless --no-render. */
static int write_dot(const fe_graph *g, const draw_args *d, const char *name, const fe_cli_io *io) {
    char path[1100], svg[1100];
    snprintf(path, sizeof path, "%s/%s.dot", d->dir, name);
    snprintf(svg, sizeof svg, "%s/%s.svg", d->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(io->err, "ferrum draw: cannot write %s: %s; give a writable --out folder\n", path,
                strerror(errno));
        return FE_EXIT_FAILURE;
    }
    fe_status st = fe_graph_dot(g, f);
    if (fclose(f) != 0 || st != FE_OK) {
        fprintf(io->err, "ferrum draw: error writing %s\n", path);
        return FE_EXIT_FAILURE;
    }
    fprintf(io->out, "%s\n", path);
    return d->no_render ? FE_EXIT_OK : fe_render_svg(path, svg, (int)d->timeout_s, io);
}

static int draw_one(const example *ex, const draw_args *d, const fe_cli_io *io) {
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
    code = write_dot(g, d, ex->name, io);
done:
    fe_graph_destroy(g);
    fe_device_destroy(dev);
    return code;
}

/* The model's causal LM over its unread weights (header-only: no weight byte is read):
 * traced and compiled, never called. */
static int draw_model(const draw_args *d, const fe_cli_io *io) {
    fe_lm_model *m = NULL;
    fe_lm_session *s = NULL;
    fe_error err = {0};
    int code = FE_EXIT_FAILURE;
    fe_lm_open_options oo = fe_lm_open_options_default();
    oo.header_only = true;
    oo.prefault = false;
    oo.device = draw_device(&err);
    fe_lm_session_options so = fe_lm_session_options_default();
    so.max_seq_len = d->max_seq_len;
    if (!oo.device || fe_lm_model_open(d->model, &oo, &m, &err) != FE_OK) {
        fprintf(io->err, "ferrum draw: %s\n", err.message);
    } else if (fe_lm_session_create(m, &so, &s, &err) != FE_OK) {
        fprintf(io->err, "ferrum draw: building %s's graph over its unread weights: %s\n", d->model,
                err.message);
    } else {
        code = write_dot(fe_lm_session_graph(s), d, "causal", io);
    }
    fe_lm_session_destroy(s);
    fe_lm_model_close(m);
    fe_device_destroy(oo.device);
    return code;
}

int fe_cmd_draw(int argc, char **argv, const fe_cli_io *io) {
    draw_args d = {.dir = ".", .max_seq_len = 256, .timeout_s = 60};
    const arg_opt opts[] = {
        {"list", 0, ARG_FLAG, NULL, "list the example graphs", NULL, .flag = &d.list},
        {"out", 'o', ARG_STRING, "DIR", "where to write; made, with its parents, if missing",
         "the current directory", .s = &d.dir},
        {"model", 'm', ARG_STRING, "MODEL", "draw MODEL's graph instead of the examples", NULL,
         .s = &d.model},
        {"max-seq-len", 'c', ARG_INT, "N", "KV cache rows of the drawn model", "256", .lo = 1,
         .hi = 1 << 24, .i = &d.max_seq_len},
        {"no-render", 0, ARG_FLAG, NULL, "write the DOT only; do not run Graphviz", NULL,
         .flag = &d.no_render},
        {"render-timeout", 0, ARG_INT, "S", "stop Graphviz after S seconds", "60", .lo = 1,
         .hi = 3600, .i = &d.timeout_s},
    };
    arg_spec sp = {.cmd = "draw", .synopsis = draw_synopsis, .opts = opts,
                   .n_opts = (int)(sizeof opts / sizeof opts[0]), .max_positional = N_EXAMPLES,
                   .positional_what = "GRAPH"};
    const char *names[N_EXAMPLES];
    arg_result r = {.positional = names};
    int code = args_parse(&sp, argc, argv, &r, io->err);
    if (code != FE_EXIT_OK || r.help) {
        if (r.help) args_usage(&sp, io->out);
        return code;
    }
    if (d.list) {
        for (int i = 0; i < N_EXAMPLES; i++)
            fprintf(io->out, "%-8s %s\n", examples[i].name, examples[i].summary);
        return FE_EXIT_OK;
    }
    if (d.model && r.n_positional) {
        fprintf(io->err, "ferrum draw: --model draws the model's graph; give no example names with it\n");
        return FE_EXIT_USAGE;
    }
    for (int i = 0; i < r.n_positional; i++) {
        bool known = false;
        for (int k = 0; k < N_EXAMPLES; k++) known |= strcmp(names[i], examples[k].name) == 0;
        if (!known) {
            fprintf(io->err, "ferrum draw: no example graph \"%s\"; `ferrum draw --list` lists them\n",
                    names[i]);
            return FE_EXIT_USAGE;
        }
    }
    if (fe_make_dirs(d.dir) != 0) {
        fprintf(io->err, "ferrum draw: cannot make the --out folder %s: %s\n", d.dir, strerror(errno));
        return FE_EXIT_FAILURE;
    }
    if (d.model) return draw_model(&d, io);
    for (int k = 0; k < N_EXAMPLES; k++) {
        bool wanted = r.n_positional == 0;
        for (int i = 0; i < r.n_positional; i++) wanted |= strcmp(names[i], examples[k].name) == 0;
        if (wanted && draw_one(&examples[k], &d, io) != FE_EXIT_OK) return FE_EXIT_FAILURE;
    }
    return FE_EXIT_OK;
}
