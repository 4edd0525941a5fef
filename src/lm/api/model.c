/* lm/api/model.c: fe_lm_model: opening a model by its path (a GGUF, a Hugging Face checkpoint,
 * or random weights in a preset's or config.json's shapes) with its tokenizer and chat
 * template, what it is (fe_lm_model_info), and writing it out as safetensors.
 *
 * Invariant: an open model owns everything it points to but the device given in the
 * options; the weights borrow the reader (gguf or st) and live no longer than it. Messages
 * from the readers already name the file, so they are passed on as they are (the path once). */
#include "lm/api/api.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/procfs.h"
#include "lm/format/mapped.h"
#include "lm/model/checkpoint.h"
#include "lm/model/weights_safetensors_write.h"

void fe_lm_free(void *p) { fe_free(p); }

fe_lm_open_options fe_lm_open_options_default(void) {
    return (fe_lm_open_options){.dtype = FE_DTYPE_BF16, .prefault = true};
}

const char *fe_lm_model_message(const fe_lm_model *m) { return m ? m->err.message : "no model (NULL)"; }
fe_device *fe_lm_model_device(fe_lm_model *m) { return m ? m->dev : NULL; }

void fe_lm_model_close(fe_lm_model *m) {
    if (!m) return;
    fe_tokenizer_destroy(m->tok);
    fe_chat_template_deinit(&m->chat);
    fe_layout_store_destroy(m->layouts); /* its sessions are gone */
    fe_llama_weights_free(&m->w); /* zeroed, or the loaded weights */
    fe_gguf_close(m->gguf);
    fe_safetensors_close(m->st);
    if (m->own_dev) fe_device_destroy(m->dev);
    fe_free(m->path);
    fe_free(m->tok_source);
    fe_free(m->chat_source);
    fe_free(m);
}

/* Random weights in the shapes of a preset or a config.json (header_only: the shapes alone,
 * nothing drawn). */
static fe_status open_random(fe_lm_model *m, const char *path, const fe_lm_open_options *o,
                             fe_error *err) {
    fe_status st = fe_lm_config_preset(path, &m->cfg, err);
    if (st == FE_E_NOTFOUND) st = fe_lm_config_from_json_file(path, &m->cfg, err);
    if (st != FE_OK) return st;
    if (o->dtype != FE_DTYPE_F32 && o->dtype != FE_DTYPE_BF16)
        return fe_error_set(err, FE_E_DTYPE, "random weights in %s; give f32 or bf16",
                            fe_dtype_info(o->dtype) ? fe_dtype_info(o->dtype)->name : "an unknown dtype");
    m->format = FE_LM_FORMAT_RANDOM;
    if (o->header_only) return fe_llama_weights_shapes(&m->cfg, o->dtype, &m->w, err);
    return fe_llama_weights_random(&m->cfg, o->dtype, o->seed, &m->w, err);
}

/* The tokenizer: the one given, else the GGUF's own, else tokenizer.json beside a
 * safetensors checkpoint (when there is one). */
static fe_status open_tokenizer(fe_lm_model *m, const fe_lm_open_options *o, fe_error *err) {
    if (o->tokenizer) {
        m->tok_source = fe_strdup(o->tokenizer);
        return m->tok_source ? fe_tokenizer_load_json(o->tokenizer, &m->tok, err)
                             : fe_error_set(err, FE_E_NOMEM, "out of memory");
    }
    if (m->gguf) {
        fe_status st = fe_tokenizer_from_gguf(m->gguf, &m->tok, err);
        if (st == FE_E_NOTFOUND) return FE_OK; /* a GGUF without a tokenizer */
        if (st == FE_OK) m->tok_source = fe_strdup(m->path);
        return st;
    }
    if (!m->st) return FE_OK;
    char *path = fe_checkpoint_beside(m->path, "tokenizer.json");
    if (!path) return fe_error_set(err, FE_E_NOMEM, "out of memory");
    fe_status st = FE_OK;
    if (fe_path_is_file(path)) {
        st = fe_tokenizer_load_json(path, &m->tok, err);
        m->tok_source = path;
    } else {
        fe_free(path);
    }
    return st;
}

/* A weight laid out once (its layout is what the steps read, e.g. a bf16 matrix's k-pair
 * panels for prefill and decode): its mapped pages are dropped, so the process holds the
 * layout rather than both; a step that still reads the weight as stored (the embedding's
 * Gather of a few rows) reads its pages again from the file. */
static void drop_laid_out(void *user, const void *data, size_t bytes) {
    const fe_lm_model *m = user;
    fe_gguf_drop_pages(m->gguf, data, bytes);
    fe_safetensors_drop_pages(m->st, data, bytes);
}

typedef struct read_in_progress {
    fe_lm_progress_fn fn;
    void *user;
    double total, base, last; /* bytes: all files', the files' before this one, this one's */
} read_in_progress;

static void read_in_step(void *user, size_t done) {
    read_in_progress *p = user;
    if ((double)done < p->last) p->base += p->last; /* the next shard */
    p->last = (double)done;
    if (p->fn && p->total > 0) p->fn(p->user, fmin(1.0, (p->base + p->last) / p->total));
}

/* The checkpoint's bytes copied into memory as m->weights says (true), or left mapped
 * (false); m->weights_note says which and why. */
static bool read_in(fe_lm_model *m, fe_lm_progress_fn progress, void *user) {
    if (fe_gguf_in_memory(m->gguf) || fe_safetensors_in_memory(m->st)) return true;
    const double bytes = (double)fe_llama_weights_bytes(&m->w), gib = 1024.0 * 1024 * 1024;
    if (m->weights == FE_LM_WEIGHTS_MAPPED) {
        snprintf(m->weights_note, sizeof m->weights_note, "mapped from the file, as asked");
        return false;
    }
    const size_t avail = fe_procfs_kib_bytes("/proc/meminfo", "MemAvailable"); /* 0: unknown */
    if (m->weights == FE_LM_WEIGHTS_AUTO && avail && bytes > (double)avail / 2) {
        snprintf(m->weights_note, sizeof m->weights_note,
                 "mapped from the file: its %.1f GiB of weights are over half the %.1f GiB of "
                 "memory available (--no-mmap copies them into memory anyway)",
                 bytes / gib, (double)avail / gib);
        return false;
    }
    if (m->weights == FE_LM_WEIGHTS_AUTO &&
        (m->gguf ? fe_gguf_mapped_huge(m->gguf) : fe_safetensors_mapped_huge(m->st))) {
        snprintf(m->weights_note, sizeof m->weights_note, "mapped from the file: the kernel "
                 "maps its pages as huge pages already (a copy would gain nothing)");
        return false;
    }
    read_in_progress p = {progress, user, bytes, 0, 0};
    fe_error err = {0};
    fe_status st = m->gguf ? fe_gguf_read_in(m->gguf, read_in_step, &p, &err)
                           : fe_safetensors_read_in(m->st, read_in_step, &p, &err);
    if (st != FE_OK) {
        snprintf(m->weights_note, sizeof m->weights_note, "mapped from the file: %s",
                 err.message);
        return false;
    }
    snprintf(m->weights_note, sizeof m->weights_note,
             "in memory (copied from the file into huge pages; --mmap reads the file's pages)");
    return true;
}

fe_status fe_lm_model_open(const char *path, const fe_lm_open_options *opts, fe_lm_model **out,
                           fe_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return fe_error_set(err, FE_E_INVALID, "fe_lm_model_open: give a path and out");
    fe_lm_open_options o = opts ? *opts : fe_lm_open_options_default();
    fe_lm_model *m = fe_calloc(1, sizeof *m);
    if (!m || !(m->path = fe_strdup(path))) {
        fe_free(m);
        return fe_error_set(err, FE_E_NOMEM, "%s: out of memory", path);
    }
    fe_status st = FE_OK;
    if (o.device) {
        m->dev = o.device;
    } else {
        fe_device_options dop = fe_device_options_default();
        if (o.threads < 0) st = fe_error_set(err, FE_E_INVALID, "threads %d; give 0 (the default) or more", o.threads);
        dop.n_workers = o.threads;
        if (st == FE_OK) st = fe_device_create(&dop, &m->dev, err);
        m->own_dev = st == FE_OK;
    }
    if (st == FE_OK && o.random_weights) {
        st = open_random(m, path, &o, err);
    } else if (st == FE_OK) {
        st = fe_checkpoint_open(path, o.header_only, &m->gguf, &m->st, &m->cfg, &m->w, err);
        m->format = m->gguf ? FE_LM_FORMAT_GGUF : FE_LM_FORMAT_SAFETENSORS;
        m->weights = o.weights;
        if (st == FE_OK && o.prefault && !o.header_only)
            fe_lm_model_prefault(m, o.progress, o.progress_user);
    }
    if (st == FE_OK) st = open_tokenizer(m, &o, err);
    if (st == FE_OK) st = fe_layout_store_create(&m->layouts, err);
    if (st == FE_OK && (m->gguf || m->st)) fe_layout_store_on_made(m->layouts, drop_laid_out, m);
    if (st != FE_OK) {
        fe_lm_model_close(m);
        return st;
    }
    fe_lm_chat_resolve(m, o.tokenizer);
    fe_gguf_release_metadata(m->gguf); /* the tokenizer, config, template and weights are built */
    *out = m;
    return FE_OK;
}

size_t fe_lm_model_layout_bytes(const fe_lm_model *m) {
    return m ? fe_layout_store_bytes(m->layouts) : 0;
}

void fe_lm_model_prefault(fe_lm_model *m, fe_lm_progress_fn progress, void *user) {
    if (!m || m->w.unread || m->format == FE_LM_FORMAT_RANDOM || read_in(m, progress, user))
        return;
    /* mapped: every page still read faulted in (not those of weights laid out already) */
    read_in_progress p = {progress, user, (double)fe_llama_weights_bytes(&m->w), 0, 0};
    if (m->gguf) fe_gguf_populate(m->gguf, read_in_step, &p);
    else fe_safetensors_populate(m->st, read_in_step, &p);
}

static const char *format_names[] = {"GGUF", "safetensors", "random"};

fe_status fe_lm_model_get_info(const fe_lm_model *m, fe_lm_model_info *out) {
    if (!m || !out) return FE_E_INVALID;
    const fe_lm_config *c = &m->cfg;
    const fe_llama_weights *w = &m->w;
    *out = (fe_lm_model_info){
        .path = m->path, .architecture = c->architecture, .format = m->format,
        .format_name = format_names[m->format], .vocab = c->vocab, .context = c->max_context,
        .n_layers = c->n_layers, .hidden = c->hidden, .n_heads = c->n_heads,
        .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim, .ffn = c->ffn,
        .rope_theta = c->rope_theta, .rms_eps = c->rms_eps, .tied_embeddings = c->tied_embeddings,
        .embed_dtype = w->embed.dtype, .matrix_dtype = w->layers ? w->layers[0].wq.dtype : w->embed.dtype,
        .weight_bytes = fe_llama_weights_bytes(w), .weights_mapped = m->format != FE_LM_FORMAT_RANDOM && !fe_gguf_in_memory(m->gguf) &&
                          !fe_safetensors_in_memory(m->st),
        .weights_note = m->weights_note,
        .weights_unread = w->unread, .bos = c->bos_id, .eos = c->n_eos ? c->eos_ids[0] : -1,
        .chat_format = m->chat_format, .chat_source = m->chat_source,
        .chat_default_system = m->chat.default_system != NULL, .chat_note = m->chat_note,
    };
    for (int64_t l = 0; w->layers && l < c->n_layers; l++) {
        const fe_llama_layer *L = &w->layers[l];
        const fe_tensor *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            out->mixed_matrices |= ms[i]->dtype != out->matrix_dtype;
    }
    if (m->tok) {
        out->tokenizer = fe_tokenizer_is_sentencepiece(m->tok) ? "SentencePiece BPE" : "byte-level BPE";
        out->tokenizer_source = m->tok_source;
        out->bos = fe_tokenizer_bos(m->tok) >= 0 ? fe_tokenizer_bos(m->tok) : out->bos;
        out->eos = fe_tokenizer_eos(m->tok) >= 0 ? fe_tokenizer_eos(m->tok) : out->eos;
    }
    static const char *chat_names[] = {"none", "unknown", "ChatML", "Llama 3", "Gemma"};
    out->chat_format_name = chat_names[m->chat_format];
    return FE_OK;
}

/* Whether each of n pages from virtual page address p is mapped in this process (bit 63 of
 * its /proc/self/pagemap entry): what the process holds, where mincore would say what the
 * page cache holds (a dropped page of a laid-out weight is still cached). false when pagemap
 * cannot be read. */
static bool pages_present(int fd, uintptr_t p, size_t n, size_t page, unsigned char *vec) {
    uint64_t e[512];
    for (size_t k = 0; k < n;) {
        size_t m = n - k < 512 ? n - k : 512;
        off_t at = (off_t)((p / page + k) * sizeof(uint64_t));
        if (pread(fd, e, m * sizeof(uint64_t), at) != (ssize_t)(m * sizeof(uint64_t))) return false;
        for (size_t i = 0; i < m; i++) vec[k + i] = (unsigned char)(e[i] >> 63);
        k += m;
    }
    return true;
}

size_t fe_lm_model_resident_bytes(const fe_lm_model *m) {
    if (!m || m->w.unread) return 0;
    const fe_tensor *ts[1024];
    int n = fe_llama_weights_tensors(&m->w, ts, 1024);
    if (m->format == FE_LM_FORMAT_RANDOM || n > 1024) return fe_llama_weights_bytes(&m->w);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), resident = 0;
    unsigned char vec[4096];
    int fd = open("/proc/self/pagemap", O_RDONLY);
    for (int i = 0; i < n; i++) {
        if (!ts[i]->data) continue;
        uintptr_t a = (uintptr_t)ts[i]->data, lo = a / page * page;
        uintptr_t hi = a + fe_dtype_bytes(ts[i]->dtype, fe_tensor_numel(ts[i]));
        for (uintptr_t p = lo; p < hi; p += sizeof vec * page) {
            size_t len = hi - p < sizeof vec * page ? hi - p : sizeof vec * page;
            size_t np = (len + page - 1) / page;
            if (!(fd >= 0 && pages_present(fd, p, np, page, vec)) && mincore((void *)p, len, vec) != 0) {
                if (fd >= 0) close(fd);
                return fe_llama_weights_bytes(&m->w);
            }
            /* a resident page counts for the bytes of the tensor in it, so a page two
             * tensors share is not counted twice */
            for (size_t k = 0; k < np; k++) {
                uintptr_t from = p + k * page > a ? p + k * page : a;
                uintptr_t to = p + (k + 1) * page < hi ? p + (k + 1) * page : hi;
                resident += (vec[k] & 1) * (to - from);
            }
        }
    }
    if (fd >= 0) close(fd);
    return resident;
}

fe_status fe_lm_model_write_safetensors(fe_lm_model *m, const char *dir) {
    if (!m) return FE_E_INVALID;
    fe_error_clear(&m->err);
    if (!dir) return fe_error_set(&m->err, FE_E_INVALID, "write safetensors: give a folder");
    return fe_llama_weights_write_safetensors(&m->w, dir, &m->err);
}
