/* ferrum/lm.h: the language-model library: open a model (Llama family) by its path, tokenize
 * and detokenize, apply its chat template, and generate through a causal session that keeps
 * its KV cache from call to call.
 *
 * Objects: an fe_lm_model (weights, config, tokenizer and chat template; read-only once
 * open, so several sessions may share one, each on its own thread only if the model's device
 * is not shared: a device runs one dispatch at a time), an fe_lm_session (a KV cache and the
 * compiled graph over a model, one caller at a time), an fe_lm_detokenizer (streaming text).
 *
 * Errors: every fallible call returns an fe_status; the message is on the owning object
 * (fe_lm_model_message, fe_lm_session_message), or, for the calls that create one, in the
 * caller's fe_error (may be NULL). Bad input (NULL, an id outside the vocabulary, a prompt
 * longer than the cache) is an error with a message naming the limit and the fix; it never
 * crashes. Strings and arrays the library allocates for the caller are released with
 * fe_lm_free.
 *
 * Known limits: Llama-family decoders only (BERT-family and EmbeddingGemma encoders through fe_lm_encoder, at
 * the end of this file); byte-level BPE tokenizers only (WordPiece for encoders); chat templates
 * are recognised (ChatML, Llama 3), not run as Jinja; at most 16 stop tokens and 16 stop
 * strings; the host sampler's draws for a seed are not the device's for the same seed; a
 * session's cache holds one sequence (fe_lm_batch holds several); no sliding window. */
#ifndef FERRUM_LM_H
#define FERRUM_LM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"
#include "ferrum/device.h"
#include "ferrum/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fe_lm_model fe_lm_model;
typedef struct fe_lm_session fe_lm_session;
typedef struct fe_lm_detokenizer fe_lm_detokenizer;

/* Releases what the library allocated for the caller (text, ids). NULL allowed. */
FE_API void fe_lm_free(void *p);

/* ---- opening a model ---- */

/* Called with the fraction done (0..1) while the weights' pages are read in. */
typedef void (*fe_lm_progress_fn)(void *user, double fraction);

/* Where a checkpoint's weights are read from once the model reads them in (prefault). */
typedef enum fe_lm_weights_memory {
    FE_LM_WEIGHTS_AUTO = 0,  /* copied into memory (huge pages) when the file takes at most
                                half the memory available, else read from the mapped file */
    FE_LM_WEIGHTS_MAPPED,    /* read from the mapped file (its 4 KiB pages; llama.cpp's mmap) */
    FE_LM_WEIGHTS_IN_MEMORY, /* copied into memory whatever is available (--no-mmap) */
} fe_lm_weights_memory;

typedef struct fe_lm_open_options {
    const char *tokenizer;  /* a tokenizer.json; NULL: the GGUF's own, or tokenizer.json
                               beside a safetensors checkpoint. Borrowed for the call. */
    bool random_weights;    /* the path is a preset name ("smollm2-135m", "llama-3.2-1b") or
                               a config.json (or its folder): weights drawn from seed */
    uint64_t seed;          /* random weights' seed */
    fe_dtype dtype;         /* random weights' dtype: FE_DTYPE_BF16 (default) or F32 */
    bool header_only;       /* read the headers only (random weights: draw none): the
                               weights have shapes but no data, so a session compiles and
                               draws but cannot run */
    bool prefault;          /* read every weight in at open (default true), so the first
                               prompt does not pay the page faults */
    fe_lm_weights_memory weights; /* where the weights are read in to (default AUTO) */
    fe_lm_progress_fn progress; /* NULL: none */
    void *progress_user;
    fe_device *device;      /* borrowed, must outlive the model; NULL: the model makes its
                               own with `threads` workers */
    int threads;            /* 0: the device's default (FERRUM_WORKERS, else the CPUs) */
} fe_lm_open_options;

FE_API fe_lm_open_options fe_lm_open_options_default(void);

/* Opens the model at `path`: a GGUF file, or a Hugging Face checkpoint (a folder with
 * config.json and model.safetensors or a sharded index, one .safetensors file or an index
 * with config.json beside it); with random_weights, a preset name or a config.json. The
 * tokenizer and chat template are found as fe_lm_model_info says. o NULL: the defaults.
 * On error *out is NULL and err names the path (once) and the problem. fe_lm_model_close
 * releases it. */
FE_API fe_status fe_lm_model_open(const char *path, const fe_lm_open_options *o,
                                  fe_lm_model **out, fe_error *err);
/* NULL allowed. Sessions over the model must be destroyed first. */
FE_API void fe_lm_model_close(fe_lm_model *m);
/* The message of the model's last failed call ("" when none). Lives as long as m. */
FE_API const char *fe_lm_model_message(const fe_lm_model *m);
/* The model's device (its own, or the one given at open). */
FE_API fe_device *fe_lm_model_device(fe_lm_model *m);

typedef enum fe_lm_format {
    FE_LM_FORMAT_GGUF = 0,
    FE_LM_FORMAT_SAFETENSORS,
    FE_LM_FORMAT_RANDOM, /* weights drawn in a preset's or config.json's shapes */
} fe_lm_format;

typedef enum fe_lm_chat_format {
    FE_LM_CHAT_NONE = 0, /* no tokenizer, or no template and no format's special tokens */
    FE_LM_CHAT_UNKNOWN,  /* a template ferrum does not know: prompts are used as they are */
    FE_LM_CHAT_CHATML,
    FE_LM_CHAT_LLAMA3,
    FE_LM_CHAT_GEMMA,
} fe_lm_chat_format;

/* What a model is. Every string lives as long as the model. */
typedef struct fe_lm_model_info {
    const char *path;         /* as given to fe_lm_model_open */
    const char *architecture; /* "llama" */
    fe_lm_format format;
    const char *format_name;  /* "GGUF", "safetensors", "random" */
    int64_t vocab, context, n_layers, hidden, n_heads, n_kv_heads, head_dim, ffn;
    double rope_theta, rms_eps;
    bool tied_embeddings;
    fe_dtype embed_dtype;     /* the token embedding's */
    fe_dtype matrix_dtype;    /* the layers' matrices' (the first layer's wq) */
    bool mixed_matrices;      /* some layer matrix has another dtype */
    size_t weight_bytes;
    bool weights_mapped;      /* views of the mapped file (else in memory: read in, or
                                 random weights) */
    const char *weights_note; /* where the weights are read from, and why ("" before they
                                 are read in) */
    bool weights_unread;      /* header_only */
    const char *tokenizer;        /* "byte-level BPE", or NULL when there is none */
    const char *tokenizer_source; /* where it came from, or NULL */
    int32_t bos, eos;             /* -1: none */
    fe_lm_chat_format chat_format;
    const char *chat_format_name; /* "ChatML", "Llama 3", "Gemma", "unknown", "none" */
    const char *chat_source;      /* the file (or "PATH (tokenizer.chat_template)") the
                                     template came from; NULL when chosen by special tokens */
    bool chat_default_system;     /* the template writes a system prompt when none is given */
    const char *chat_note;        /* what was chosen and why, one sentence (for the CLI) */
} fe_lm_model_info;

/* Fills *out. FE_E_INVALID for NULL. */
FE_API fe_status fe_lm_model_get_info(const fe_lm_model *m, fe_lm_model_info *out);
/* Bytes of the weights this process now holds in memory (mapped pages present in its page
 * tables, or all when in memory; 0 when opened header-only). A weight read only through a
 * layout has its mapped pages dropped once the layout is made (see the summary's
 * "repacked"). */
FE_API size_t fe_lm_model_resident_bytes(const fe_lm_model *m);
/* Bytes of the weights its sessions' plans read repacked (the prefill GEMMs' bf16 k-pair
 * panels), made once for all its sessions and held beside the weights; 0 before any. */
FE_API size_t fe_lm_model_layout_bytes(const fe_lm_model *m);
/* Reads every weight in now (a model opened with prefault false), calling progress (may be
 * NULL) with the fraction done: copied into memory as fe_lm_open_options.weights says, else
 * every mapped page faulted in (fe_lm_model_info.weights_note says which, and why); nothing
 * for weights already in memory or unread. */
FE_API void fe_lm_model_prefault(fe_lm_model *m, fe_lm_progress_fn progress, void *user);
/* Writes the weights (f32/bf16/f16) and config.json to the folder `dir` as a Hugging Face
 * checkpoint (model.safetensors, config.json). */
FE_API fe_status fe_lm_model_write_safetensors(fe_lm_model *m, const char *dir);

/* ---- tokens and text ---- */

/* Encodes text[0..len) into a new array *ids of *n ids (fe_lm_free). add_special: the BOS
 * first when the model wants one; parse_special: special tokens written in the text
 * (<|im_start|>) are those tokens, else plain text. FE_E_STATE without a tokenizer. */
FE_API fe_status fe_lm_tokenize(fe_lm_model *m, const char *text, size_t len, bool add_special,
                                bool parse_special, int32_t **ids, size_t *n);
/* Decodes ids[0..n) into new NUL-terminated text *text (fe_lm_free) of *len bytes; the
 * bytes as the tokens hold them (not repaired). FE_E_BOUNDS for an id outside the vocabulary. */
FE_API fe_status fe_lm_detokenize(fe_lm_model *m, const int32_t *ids, size_t n, char **text,
                                  size_t *len);
/* A token's raw bytes (not NUL-terminated; may be part of a UTF-8 character) and their count;
 * NULL (and *len 0) for an id outside the vocabulary or without a tokenizer. Lives as long
 * as m. */
FE_API const char *fe_lm_token_piece(const fe_lm_model *m, int32_t id, size_t *len);
/* The id of the token whose text is text (NUL-terminated), or -1. */
FE_API int32_t fe_lm_token_find(const fe_lm_model *m, const char *text);

/* Streaming detokenizer: text that is always whole UTF-8 characters. The bytes of a
 * character cut between tokens are held back until the token that completes it (or the
 * flush, where a character never completed comes out as U+FFFD). */
FE_API fe_status fe_lm_detokenizer_create(fe_lm_model *m, fe_lm_detokenizer **out);
FE_API void fe_lm_detokenizer_destroy(fe_lm_detokenizer *d);
/* Appends token id; *text (*len bytes, NUL-terminated) is the text now complete, valid until
 * the next call on d. FE_E_BOUNDS (nothing consumed) for an id outside the vocabulary. */
FE_API fe_status fe_lm_detokenizer_push(fe_lm_detokenizer *d, int32_t id, const char **text,
                                        size_t *len);
/* Ends the stream (it can then be reused): whatever is held back. */
FE_API fe_status fe_lm_detokenizer_flush(fe_lm_detokenizer *d, const char **text, size_t *len);

/* ---- chat ---- */

typedef struct fe_lm_message {
    const char *role;    /* "system", "user" or "assistant" */
    const char *content;
} fe_lm_message;

/* The conversation msgs[0..n) as prompt text in the model's chat format (the template
 * chosen at open, see fe_lm_model_info.chat_note); add_generation_prompt: ends with the
 * assistant's header. Without a leading system message the template's default system
 * prompt (if any) is written; a system message "" means none. A new string (fe_lm_free).
 * FE_E_STATE when the format is unknown or none (use the text as it is). */
FE_API fe_status fe_lm_chat_apply(fe_lm_model *m, const fe_lm_message *msgs, int n,
                                  bool add_generation_prompt, char **text);
/* The tokens that end generation: the EOS id(s), and the chat format's end-of-turn token
 * (<|im_end|>, <|eot_id|>) when the tokenizer has it; none without a tokenizer. Writes up to
 * cap and returns how many it wrote; with out NULL, returns how many there are. */
FE_API int fe_lm_model_stop_tokens(const fe_lm_model *m, int32_t *out, int cap);

/* ---- sessions ---- */

typedef enum fe_lm_prefill_dot {
    FE_LM_PREFILL_DOT_AUTO = 0, /* bf16 dot products over bf16 matrices (activations rounded);
                                 * over block ones (q8_0 .. q6_k) bf16 too (the matrices' values
                                 * rounded as well) where the CPU has AMX-BF16 tiles, else int8
                                 * (activations quantised) */
    FE_LM_PREFILL_DOT_F32,      /* exact float32 products everywhere */
    FE_LM_PREFILL_DOT_BF16,     /* bf16 dots; every layer matrix must be bf16 or in blocks
                                 * (whose values then round to bf16) */
    FE_LM_PREFILL_DOT_INT8,     /* int8 over block-quantised matrices (q8_0 .. q6_k; f32 over
                                 * the others); some layer matrix must be one of those */
} fe_lm_prefill_dot;

typedef enum fe_lm_decode_dot {
    FE_LM_DECODE_DOT_AUTO = 0, /* int8 activations over block-quantised matrices (per 32, or
                                * per 256 as llama.cpp's q8_K for q4_k/q6_k) */
    FE_LM_DECODE_DOT_F32,
} fe_lm_decode_dot;

/* How the next token is drawn. Temperature, top_k, top_p and seed can be drawn on the
 * device inside the decode loop; min_p and the penalties are applied on the host, from the
 * logits (deterministic given the seed; a different stream of draws than the device's). On
 * the host the order is: penalties, then temperature, top_k, min_p, and top_p of what
 * remains. */
typedef struct fe_lm_sampling {
    double temperature;       /* 0: greedy */
    int64_t top_k;            /* 0: off */
    double top_p;             /* 1: off */
    double min_p;             /* 0: off; keeps tokens with p >= min_p * max p */
    uint64_t seed;
    double repeat_penalty;    /* 1: off; logits of recent tokens divided (> 0) or multiplied */
    int64_t repeat_last_n;    /* tokens the penalties look back over; -1: all, 0: none */
    double presence_penalty;  /* 0: off; subtracted once from a recent token's logit */
    double frequency_penalty; /* 0: off; subtracted per occurrence */
} fe_lm_sampling;

/* Greedy, top_p 1, repeat_penalty 1, repeat_last_n 64, no penalties. */
FE_API fe_lm_sampling fe_lm_sampling_default(void);

/* The KV cache's keys and values: f16 (the options' defaults: half the memory, and half the
 * bytes each decode step's attention reads; every new key and value rounded to f16 once, as
 * llama.cpp's default cache type keeps them; KL to the f32 cache ~2e-7 on SmolLM2) or f32
 * (exact; the zero value of a struct not made by the defaults function) */
typedef enum fe_lm_cache_type {
    FE_LM_CACHE_F32 = 0,
    FE_LM_CACHE_F16,
} fe_lm_cache_type;

typedef struct fe_lm_session_options {
    int64_t max_seq_len;  /* KV cache rows; 0: min(4096, the model's context) */
    int64_t chunk;        /* prefill rows per call; 0: 512 (at most max_seq_len) */
    fe_lm_prefill_dot prefill_dot;
    fe_lm_decode_dot decode_dot;
    fe_lm_cache_type cache_type; /* default f16 */
    bool each_step;       /* one dispatch per step instead of per call */
    bool verbose;         /* print the graph's packaging and per-call values */
    bool profiling;       /* time every step (fe_graph_write_profile on the session's graph) */
    /* Tunables as data (ferrum/ops.h, e.g. from `ferrum tune --write-profile`) for the
     * graph's compiles; NULL: none. Borrowed: it must outlive the session (a version may be
     * compiled on first use). The tunables the model's graph gives itself win over it; it
     * gives none today (every setting the Llama body passes is a param). */
    const fe_profile *profile;
    /* The sampler compiled into the device loop. A generate whose sampling has the same
     * temperature, top_k, top_p and seed and no host-only option draws on the device;
     * any other samples on the host. Default: greedy. Its seed is at most 2^53. */
    fe_lm_sampling sampling;
    /* The fold pass over the model's plainly written body (ferrum/graph.h): every fold it
     * admits (ALL, the default: the fused graph), none (NONE: each step alone), or each fold
     * asked of fold_price with fold_user (PRICED: the tuner's, fe_fold_pricing_keeps). */
    enum { FE_LM_FOLDS_ALL = 0, FE_LM_FOLDS_NONE, FE_LM_FOLDS_PRICED } folds;
    fe_fold_price_fn fold_price;
    void *fold_user; /* borrowed: it must outlive the session */
} fe_lm_session_options;

FE_API fe_lm_session_options fe_lm_session_options_default(void);

/* Builds and compiles the session's graph over model m (borrowed: it must outlive the
 * session). o NULL: the defaults. On error *out is NULL and err says why. */
FE_API fe_status fe_lm_session_create(fe_lm_model *m, const fe_lm_session_options *o,
                                      fe_lm_session **out, fe_error *err);
FE_API void fe_lm_session_destroy(fe_lm_session *s); /* NULL allowed */
FE_API const char *fe_lm_session_message(const fe_lm_session *s);
/* The session's graph (drawing, stats, profiling); lives as long as s. */
FE_API fe_graph *fe_lm_session_graph(fe_lm_session *s);
/* Tokens in the cache, and the cache's rows (max_seq_len). */
FE_API int64_t fe_lm_session_position(const fe_lm_session *s);
FE_API int64_t fe_lm_session_max_seq_len(const fe_lm_session *s);
/* Bytes the KV caches take (allocated, all rows). */
FE_API size_t fe_lm_session_kv_bytes(const fe_lm_session *s);

/* The cache rows a prefill of ids[0..n) would reuse: whole chunks of the cached sequence
 * before the first token that differs, never the last row (it runs again for its logits). */
FE_API int64_t fe_lm_session_reusable(const fe_lm_session *s, const int32_t *ids, int64_t n);
/* Runs ids[0..n) as the sequence from position 0, reusing the cache rows of the previous
 * sequence up to the first chunk that differs. *logits (vocab floats, may be NULL) are the
 * last row's, valid until the next call on s. */
FE_API fe_status fe_lm_session_prefill(fe_lm_session *s, const int32_t *ids, int64_t n,
                                       const float **logits);
/* Feeds one token at the next position; *logits (may be NULL) are the logits after it. */
FE_API fe_status fe_lm_session_decode(fe_lm_session *s, int32_t token, const float **logits);
/* The logits of the last prefill or decode (vocab floats), NULL before any. */
FE_API const float *fe_lm_session_logits(const fe_lm_session *s);
enum { FE_LM_MAX_TOP_LOGPROBS = 20 };

/* Log-probabilities from logits[0..vocab) (raw: before penalties and temperature), as OpenAI
 * and llama-server report them: *logprob is token's under the log-softmax; top_ids[0..n_top)
 * and top_logprobs[0..n_top) the n_top most likely tokens' (largest first, ties by smaller
 * id; past the vocabulary's size, ids -1 and -inf). FE_E_INVALID
 * for a token outside the vocabulary, n_top outside 0..FE_LM_MAX_TOP_LOGPROBS, or logits
 * that are not finite. */
FE_API fe_status fe_lm_logprobs(const float *logits, int64_t vocab, int32_t token, int n_top,
                                float *logprob, int32_t *top_ids, float *top_logprobs);
/* Inside a callback of fe_lm_session_generate: the logits (vocab floats, as the model gave
 * them: before penalties and temperature) its token was drawn from, valid for the call; NULL
 * outside a callback (and in the last one, token -1). For log-probabilities of the tokens. */
FE_API const float *fe_lm_session_token_logits(const fe_lm_session *s);

typedef enum fe_lm_stop_reason {
    FE_LM_STOP_LENGTH = 0,   /* max_tokens generated */
    FE_LM_STOP_EOS,          /* a stop token */
    FE_LM_STOP_STRING,       /* a stop string */
    FE_LM_STOP_CALLBACK,     /* the callback returned nonzero */
    FE_LM_STOP_CACHE_FULL,   /* the KV cache has no row left */
} fe_lm_stop_reason;

/* "length", "eos", "stop string", "callback", "cache full". */
FE_API const char *fe_lm_stop_reason_name(fe_lm_stop_reason r);

enum { FE_LM_MAX_STOP_TOKENS = 16, FE_LM_MAX_STOP_STRINGS = 16 };

typedef struct fe_lm_stop {
    int64_t max_tokens;  /* -1: until a stop token or the cache is full */
    int32_t tokens[FE_LM_MAX_STOP_TOKENS]; /* stop token ids (not emitted) */
    int n_tokens;        /* -1: the model's (fe_lm_model_stop_tokens) */
    const char *strings[FE_LM_MAX_STOP_STRINGS]; /* borrowed for the call; the text before
                            a stop string is emitted, the stop string is not */
    int n_strings;
} fe_lm_stop;

/* max_tokens -1, the model's stop tokens, no stop strings. */
FE_API fe_lm_stop fe_lm_stop_default(void);

/* Called per generated token with its text: whole UTF-8 characters only, with text that
 * might start a stop string held back until it cannot (so a piece may be empty, or carry
 * text of earlier tokens). A last call with token -1 brings text still held at the end.
 * text is valid for the call; return nonzero to stop. */
typedef int (*fe_lm_token_fn)(void *user, int32_t token, const char *text, size_t len);

typedef struct fe_lm_generate_result {
    int64_t prompt_tokens;
    int64_t prompt_reused;    /* prompt rows kept from the cache (a chat turn) */
    int64_t generated_tokens; /* emitted (a stop token is not) */
    fe_lm_stop_reason stop_reason;
    bool sampled_on_host;
    double prefill_seconds, decode_seconds, first_token_seconds;
} fe_lm_generate_result;

/* Generates after ids[0..n) (the whole sequence so far: a chat turn repeats the previous
 * turns, and their cache rows are reused). sampling, stop: NULL for the defaults. callback
 * may be NULL; result may be NULL. The generated tokens (but the last) are in the cache
 * afterwards. */
FE_API fe_status fe_lm_session_generate(fe_lm_session *s, const int32_t *ids, int64_t n,
                                        const fe_lm_sampling *sampling, const fe_lm_stop *stop,
                                        fe_lm_token_fn callback, void *user,
                                        fe_lm_generate_result *result);

/* ---- batches: many sequences, one decode call ---- */

/* A batch generates for up to `slots` sequences at once over one model: each slot has its own
 * KV cache rows; every fe_lm_batch_step runs one prefill chunk for each slot still in its
 * prompt, then ONE decode call for every slot generating (its matrix products over all of
 * them). Sampling is on the host for every slot (the same draws as a session's host
 * sampler). A slot's prompt logits are a session's, bit for bit, and so are its decode
 * logits however many slots decode together (GEMVs over the rows with the session's
 * arithmetic per row, each weight block read and decoded once for up to 8 rows), so greedy
 * tokens are fe_lm_session_generate's. One caller at a time. */
typedef struct fe_lm_batch fe_lm_batch;

enum { FE_LM_BATCH_MAX_SLOTS = 12 };

typedef struct fe_lm_batch_options {
    int slots;            /* 1..FE_LM_BATCH_MAX_SLOTS; 0: 4 */
    int64_t max_seq_len;  /* KV cache rows per slot; 0: min(2048, the model's context) */
    int64_t chunk;        /* prefill rows per step and slot; 0: 256 */
    fe_lm_prefill_dot prefill_dot;
    fe_lm_decode_dot decode_dot;
    fe_lm_cache_type cache_type; /* default f16 */
} fe_lm_batch_options;

FE_API fe_lm_batch_options fe_lm_batch_options_default(void);
/* Builds and compiles the batch over model m (borrowed: it must outlive the batch). On error
 * *out is NULL and err says why. */
FE_API fe_status fe_lm_batch_create(fe_lm_model *m, const fe_lm_batch_options *o,
                                    fe_lm_batch **out, fe_error *err);
FE_API void fe_lm_batch_destroy(fe_lm_batch *b); /* NULL allowed */
FE_API const char *fe_lm_batch_message(const fe_lm_batch *b);
FE_API int fe_lm_batch_slots(const fe_lm_batch *b);
/* The prompt rows slot's cache would give a generation after ids[0..n) (its whole chunks
 * before the first token that differs): where a shared prefix is reused. */
FE_API int64_t fe_lm_batch_reusable(const fe_lm_batch *b, int slot, const int32_t *ids, int64_t n);
/* Starts a generation in an idle slot, with fe_lm_session_generate's arguments (ids and the
 * stop strings are copied; callback and user must live until the slot is finished). The work
 * happens in fe_lm_batch_step. FE_E_STATE when the slot is busy. */
FE_API fe_status fe_lm_batch_start(fe_lm_batch *b, int slot, const int32_t *ids, int64_t n,
                                   const fe_lm_sampling *sampling, const fe_lm_stop *stop,
                                   fe_lm_token_fn callback, void *user);
/* One step (see above): callbacks run inside it. *running (may be NULL): the slots still
 * generating after it. A slot whose callback returns nonzero ends with FE_LM_STOP_CALLBACK. */
FE_API fe_status fe_lm_batch_step(fe_lm_batch *b, int *running);
/* Whether slot's generation has ended; then *result (may be NULL) says how, and the slot is
 * idle again (its cache rows kept for the next prompt). false while it runs or when idle. */
FE_API bool fe_lm_batch_finished(fe_lm_batch *b, int slot, fe_lm_generate_result *result);
/* Inside a callback of slot's generation (fe_lm_batch_step): the logits its token was drawn
 * from, as fe_lm_session_token_logits; NULL outside one. */
FE_API const float *fe_lm_batch_token_logits(const fe_lm_batch *b, int slot);

/* ---- checks ---- */

/* Teacher-forced logits of the session against an independent float32 forward pass (the
 * oracle) over ids[0..n): KL(oracle || model) per position, top-1 agreement, and the largest
 * logit difference beside the oracle logits' spread. Leaves the cache holding ids. */
typedef struct fe_lm_accuracy {
    int positions;
    double kl_mean, kl_p90, kl_max; /* nats */
    int top1_mismatches;
    double max_abs_diff, spread;
} fe_lm_accuracy;
FE_API fe_status fe_lm_session_check_accuracy(fe_lm_session *s, const int32_t *ids, int64_t n,
                                              fe_lm_accuracy *out);
/* runs prefills of ids[0..n), alternated with its reverse, logits compared as bytes with
 * the first: *differing is how many runs gave other bytes. */
FE_API fe_status fe_lm_session_check_determinism(fe_lm_session *s, const int32_t *ids, int64_t n,
                                                 int runs, int *differing);

/* ---- text encoders and embeddings ----
 *
 * An fe_lm_encoder is a BERT-family encoder (BERT, MiniLM) opened from a folder as
 * sentence-transformers or transformers saves one: config.json, model.safetensors,
 * tokenizer.json (WordPiece), and optionally modules.json with 1_Pooling/config.json and a
 * Normalize module, sentence_bert_config.json (max_seq_length) and
 * config_sentence_transformers.json (prompts). Or an EmbeddingGemma folder (config.json
 * model_type "gemma3_text": the Gemma 3 body with bidirectional attention, Gemma's
 * SentencePiece tokenizer.json, mean pooling, the Dense layers of 2_Dense/ and 3_Dense/, L2;
 * the vector's width is the last Dense layer's, info.hidden; other poolings and bf16 dot
 * products are refused). Its graph is compiled once for `batch` sentences of at most
 * max_tokens tokens; texts are embedded a batch per call, each sentence's work bounded by its
 * own length. One
 * caller at a time. */

typedef struct fe_lm_encoder fe_lm_encoder;

typedef enum fe_lm_pooling {
    FE_LM_POOLING_MODEL = 0, /* what the folder's pooling module says (mean without one) */
    FE_LM_POOLING_MEAN,
    FE_LM_POOLING_CLS,
    FE_LM_POOLING_LAST,
} fe_lm_pooling;

/* The precision of a BERT-family encoder's products. bf16: the layer matrices rounded to
 * bf16 once and each product's activations too, summed in f32 (about 1.6x the f32 speed where
 * the CPU has AVX512_BF16; all-MiniLM-L6-v2's vectors stay within cosine 0.99996 of
 * sentence-transformers' over its 60-sentence fixture, f32's within 0.9999999). */
typedef enum fe_lm_encoder_dot {
    FE_LM_ENCODER_DOT_AUTO = 0, /* bf16 where the device runs AVX512_BF16 kernels faster
                                 * than f32 ones (AMX-BF16 tiles, or AMD's vdpbf16ps:
                                 * fe_device_info.bf16_dot_fast), else f32 (EmbeddingGemma:
                                 * f32) */
    FE_LM_ENCODER_DOT_F32,
    FE_LM_ENCODER_DOT_BF16,     /* BERT family only (EmbeddingGemma refuses it) */
} fe_lm_encoder_dot;

typedef struct fe_lm_encoder_options {
    int batch;          /* sentences per graph call, 1..32; 0: 8 */
    int64_t max_tokens; /* tokens a text keeps ([CLS] and [SEP] included), the rest cut; 0:
                           the folder's max_seq_length, else the tokenizer's truncation, else
                           the model's positions (at most 512) */
    fe_device *device;  /* borrowed, must outlive the encoder; NULL: its own with `threads` */
    int threads;        /* 0: the device's default (FERRUM_WORKERS, else the CPUs) */
    fe_lm_encoder_dot dot; /* the products' precision; AUTO (0) by default */
} fe_lm_encoder_options;

FE_API fe_lm_encoder_options fe_lm_encoder_options_default(void);

/* Opens the encoder in folder `path` (or the folder of a model.safetensors given). o NULL:
 * the defaults. FE_E_NOTFOUND naming the file when config.json, model.safetensors or
 * tokenizer.json is missing; the readers' errors otherwise (the file, key and rule named).
 * *out is NULL on error. fe_lm_encoder_close releases it. */
FE_API fe_status fe_lm_encoder_open(const char *path, const fe_lm_encoder_options *o,
                                    fe_lm_encoder **out, fe_error *err);
FE_API void fe_lm_encoder_close(fe_lm_encoder *e); /* NULL allowed */
/* The message of the encoder's last failed call ("" when none). Lives as long as e. */
FE_API const char *fe_lm_encoder_message(const fe_lm_encoder *e);

/* What an encoder is. Strings live as long as the encoder. */
typedef struct fe_lm_encoder_info {
    const char *path, *architecture; /* "bert" */
    const char *tokenizer;           /* "WordPiece" */
    int64_t vocab, hidden, n_layers, n_heads, ffn, max_tokens;
    int batch;
    fe_lm_pooling pooling;           /* the model's (never FE_LM_POOLING_MODEL) */
    const char *pooling_name;        /* "mean", "cls", "last" */
    bool normalize;                  /* the model L2-normalises its embeddings */
    bool dot_bf16;                   /* its products run in bf16 (the option, AUTO resolved) */
    int n_prompts;
    const char *const *prompt_names; /* n_prompts names ("query", ...) */
    const char *default_prompt;      /* a prompt name, or NULL */
    size_t weight_bytes;
} fe_lm_encoder_info;

FE_API fe_status fe_lm_encoder_get_info(const fe_lm_encoder *e, fe_lm_encoder_info *out);

/* The encoder's compiled graph (drawing, stats, profiling: fe_graph_set_profiling and
 * fe_graph_write_profile); lives as long as e. NULL for a NULL e. */
FE_API fe_graph *fe_lm_encoder_graph(fe_lm_encoder *e);

typedef struct fe_lm_embed_options {
    fe_lm_pooling pooling;   /* FE_LM_POOLING_MODEL: the model's */
    int64_t dim;             /* Matryoshka: keep the first dim values (before normalising);
                                0: all (hidden) */
    int normalize;           /* -1: as the model does; 0: no; 1: unit L2 norm */
    const char *prompt_name; /* a prompt of the model's, put before each text; NULL: the
                                model's default prompt (none when it has none); "": none */
} fe_lm_embed_options;

FE_API fe_lm_embed_options fe_lm_embed_options_default(void);

typedef struct fe_lm_embed_stats {
    int64_t tokens;    /* token ids run, [CLS] and [SEP] included */
    int64_t truncated; /* texts cut at max_tokens */
    uint64_t tokenize_ns; /* wall time tokenizing (texts to ids, prompt and cut included) */
    uint64_t graph_ns;    /* wall time in the encoder graph's calls */
} fe_lm_embed_stats;

/* Embeds texts[0..n) (NUL-terminated UTF-8) into out[0 .. n * dim), row i the vector of
 * text i; *dim (may be NULL) is the vector length (o->dim, or hidden). stats (may be NULL)
 * adds up what was run. FE_E_INVALID (message naming the option, its range or the prompts
 * the model has) for a bad option or a text that is not UTF-8 (naming the text and byte).
 * On error out is partly written. */
FE_API fe_status fe_lm_embed(fe_lm_encoder *e, const char *const *texts, size_t n,
                             const fe_lm_embed_options *o, float *out, int64_t *dim,
                             fe_lm_embed_stats *stats);

/* As fe_lm_embed, for inputs given as token ids: ids[i][0 .. n_ids[i]) run as given (the
 * prompt of o is not added, nor [CLS]/[SEP] or the template's tokens: give them as
 * fe_lm_encoder_tokenize does). FE_E_INVALID naming the input for one of no ids or more than
 * the encoder's max_tokens, or an id outside the vocabulary. */
FE_API fe_status fe_lm_embed_ids(fe_lm_encoder *e, const int32_t *const *ids, const size_t *n_ids,
                                 size_t n, const fe_lm_embed_options *o, float *out, int64_t *dim,
                                 fe_lm_embed_stats *stats);

/* The ids text (with the prompt of o, may be NULL) is run as: [CLS] ... [SEP], cut at
 * max_tokens. A new array *ids of *n ids (fe_lm_free). */
FE_API fe_status fe_lm_encoder_tokenize(fe_lm_encoder *e, const char *text,
                                        const fe_lm_embed_options *o, int32_t **ids, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
