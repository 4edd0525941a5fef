/* lm/tokenizer/tokenizer.h: byte-level BPE tokenizers (GPT-2, Llama 3, SmolLM2): loading, encoding,
 * decoding and streaming decode.
 *
 * Encoding runs in three steps, as Hugging Face tokenizers and llama.cpp do:
 *   1. added tokens (<|im_start|>, <|begin_of_text|>, ...) are found in the text first,
 *      leftmost and then longest; special ones only when the caller allows them, others
 *      (GGUF "user-defined") always;
 *   2. each stretch between them is split into pieces by the pre-tokenizer's regex chain
 *      (pretokenize.h: GPT-2's, Llama 3's, or SmolLM2's digits-then-GPT-2);
 *   3. each piece, as bytes, is merged by BPE rank (bpe.h) into token ids.
 * Token strings are held as raw bytes (the GPT-2 byte-to-unicode text form is undone at
 * load), so decoding is concatenation and encode/decode round-trips any input, valid UTF-8
 * or not (with allow_special false, or when the text holds no special token), given a
 * vocabulary with all 256 byte tokens (GPT-2, Llama 3). A byte with no token is dropped, as
 * Hugging Face tokenizers and llama.cpp drop it: SmolLM2 lacks 21 (0x04, 0x06, 0x13, 0x14,
 * 0x16, 0x1D, and 0xC0, 0xC1, 0xF1, 0xF2, 0xF5..0xFF, which are rare or never in UTF-8).
 *
 * Loaders: a Hugging Face tokenizer.json, GGUF metadata (tokenizer.ggml.*), a tiktoken
 * file (Llama 3's tokenizer.model: base64 token and rank per line), or plain arrays.
 *
 * Threads: a tokenizer is read-only after creation; encode/decode may run on many threads
 * at once (each call allocates its own scratch, freed before it returns, proportional to the
 * text). fe_tokenizer_set_bos_eos is the one mutation: call it before sharing.
 *
 * SentencePiece BPE (GGUF tokenizer.ggml.model "llama": Gemma) takes step 2 and 3 from spm.h
 * instead: spaces escaped to "▁", pieces merged by score, bytes falling back to <0xXX>
 * tokens; its pieces decode with "▁" as a space and <0xXX> as the byte.
 *
 * SentencePiece Unigram (fe_spm_spec.unigram: unigram.h) segments each stretch by Viterbi over
 * the piece scores instead (from arrays; no GGUF "t5" loader, no precompiled normaliser yet).
 *
 * Known limits: byte-level BPE, SentencePiece BPE and Unigram only (no WordPiece yet); tokenizer.json
 * normalizers other than null, ByteLevel add_prefix_space, and Split behaviours other than
 * Isolated are refused (FE_E_UNSUPPORTED); model.unk_token is not used (a byte with no token
 * is dropped, as when it is null); an added token's lstrip/rstrip strip ASCII whitespace only
 * and single_word is not honoured; decode gives raw bytes (no clean_up_tokenization_spaces);
 * \p{L}, \p{N} and \s follow PCRE2's Unicode tables (10.42: Unicode 14), so a character
 * assigned later (say U+1E4F0..9, Nag Mundari digits, Unicode 15) can split otherwise than in
 * Hugging Face tokenizers. */
#ifndef FE_LM_TOKENIZER_H
#define FE_LM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_tokenizer fe_tokenizer;
typedef struct fe_gguf fe_gguf;

/* Token types, with GGUF's numbering (tokenizer.ggml.token_type). */
typedef enum fe_token_type {
    FE_TOKEN_NORMAL = 1,
    FE_TOKEN_UNKNOWN = 2,
    FE_TOKEN_CONTROL = 3,      /* special: matched in text only when allowed */
    FE_TOKEN_USER_DEFINED = 4, /* added, not special: always matched in text */
    FE_TOKEN_UNUSED = 5,
    FE_TOKEN_BYTE = 6,
} fe_token_type;

/* Most token ids a tokenizer may have (2^24); larger ids in a file are FE_E_FORMAT. */
#define FE_TOKENIZER_MAX_VOCAB (1 << 24)

/* A token matched in text before pre-tokenization (tokenizer.json "added_tokens"). */
typedef struct fe_added_token {
    const char *text; /* raw text as it appears in user text (not byte-level form) */
    size_t len;       /* 0: text is NUL-terminated */
    int32_t id;
    bool special; /* matched only when the caller allows specials */
    bool lstrip;  /* swallows ASCII whitespace before it */
    bool rstrip;  /* swallows ASCII whitespace after it */
} fe_added_token;

/* Everything a byte-level BPE tokenizer is made of, as plain arrays (all borrowed for the
 * call only). Start from fe_bpe_spec_default(). */
typedef struct fe_bpe_spec {
    const char *const *tokens;  /* n_tokens token strings, byte-level text form, id = index */
    const size_t *token_lens;   /* NULL: the strings are NUL-terminated */
    const int32_t *token_types; /* NULL: all FE_TOKEN_NORMAL. CONTROL and USER_DEFINED
                                   tokens are raw text and are matched in text (step 1) */
    int n_tokens;
    const char *const *merges; /* "left right" in byte-level form, rank = index */
    const size_t *merge_lens;  /* NULL: NUL-terminated */
    int n_merges;
    const char *pre;               /* a GGUF tokenizer.ggml.pre name: "gpt2", "llama-bpe",
                                      "smollm"... (pretokenize.h); NULL: "gpt2" */
    const fe_added_token *added;   /* further added tokens (ids < n_tokens), may be NULL */
    int n_added;
    int32_t bos_id, eos_id;        /* -1: none */
    int add_bos;                   /* the model's wish for fe_tokenizer_add_bos: 0, 1, or -1
                                      for what `pre` implies (Llama 3: yes) */
    int ignore_merges;             /* 0, 1, or -1 for what `pre` implies (Llama 3: yes) */
} fe_bpe_spec;

/* Defaults: no tokens, pre "gpt2", no BOS/EOS, add_bos and ignore_merges from `pre`. */
fe_bpe_spec fe_bpe_spec_default(void);

/* Builds a tokenizer from arrays. FE_E_FORMAT (message naming the token or merge and the
 * rule) when a string is not valid UTF-8, a merge names a token that is not in the vocabulary
 * or merges into one that is not, or an id is out of range; FE_E_UNSUPPORTED for an unknown `pre`; FE_E_NOMEM. On success *out
 * is the caller's (fe_tokenizer_destroy); on error it is NULL. */
fe_status fe_tokenizer_create_bpe(const fe_bpe_spec *spec, fe_tokenizer **out, fe_error *err);

/* Everything a SentencePiece BPE tokenizer (spm.h) is made of, as plain arrays (borrowed for
 * the call only). Start from fe_spm_spec_default(). */
typedef struct fe_spm_spec {
    const char *const *tokens;  /* n_tokens pieces, raw UTF-8 with "▁" for a space, id = index */
    const size_t *token_lens;   /* NULL: NUL-terminated */
    const float *scores;        /* n_tokens scores: higher merges first */
    const int32_t *token_types; /* NULL: all NORMAL. CONTROL and UNKNOWN tokens are special,
                                   USER_DEFINED ones always matched in text; BYTE tokens
                                   <0xXX> are the byte fallback */
    int n_tokens;
    int32_t bos_id, eos_id;     /* -1: none */
    bool add_bos;               /* the model's wish (llama.cpp's default for these: yes) */
    bool add_space_prefix;      /* a "▁" before the text and after each added token */
    bool unigram;               /* SentencePiece Unigram (unigram.h: the segmentation of the
                                   highest score sum) instead of BPE over the scores */
    int32_t unk_id;             /* Unigram: the unknown token; -1: none (then a character no
                                   piece covers is dropped) */
    bool sp_normalize;          /* SentencePiece's normaliser (spm_normalize.h) on each
                                   stretch: the charsmap below and the whitespace rule */
    const void *charsmap;       /* the precompiled charsmap blob (borrowed), NULL: none */
    size_t charsmap_len;
    bool remove_extra_whitespaces; /* sp_normalize: drop leading/trailing spaces, squeeze runs */
    bool collapse_spaces;       /* sp_normalize: runs of spaces become one, none dropped */
    bool prefix_unless_space;   /* no space prefix before a stretch that starts with a space */
} fe_spm_spec;

/* Defaults: no tokens, no BOS/EOS, add_bos and add_space_prefix true (llama.cpp's), BPE. */
fe_spm_spec fe_spm_spec_default(void);

/* Builds a SentencePiece BPE tokenizer from arrays. FE_E_FORMAT (naming the token and the
 * rule) for a non-finite score, an id twice, no scores, or BOS/EOS/unknown outside the vocabulary;
 * FE_E_NOMEM. *out as for fe_tokenizer_create_bpe. */
fe_status fe_tokenizer_create_spm(const fe_spm_spec *spec, fe_tokenizer **out, fe_error *err);

/* Loads a Hugging Face tokenizer.json (model type BPE with a ByteLevel pre-tokenizer, as
 * GPT-2, Llama 3 and SmolLM2 ship). BOS: the first special token of a TemplateProcessing
 * post-processor (add_bos then true); the EOS is not in tokenizer.json (-1: set it with
 * fe_tokenizer_set_bos_eos from tokenizer_config.json). FE_E_IO, FE_E_FORMAT (bad JSON, no
 * model, merges naming unknown tokens, ...), FE_E_UNSUPPORTED (another model type or
 * pipeline step), FE_E_NOMEM. */
fe_status fe_tokenizer_load_json(const char *path, fe_tokenizer **out, fe_error *err);
/* (A tokenizer.json whose model is Unigram goes to unigram_json.h's loader.) */
/* The same from text[0..len); `what` names it in messages. */
fe_status fe_tokenizer_from_json(const char *text, size_t len, const char *what,
                                 fe_tokenizer **out, fe_error *err);

/* Builds the tokenizer a GGUF file's metadata describes (tokenizer.ggml.model "gpt2":
 * tokens, token_type, merges, pre, bos/eos_token_id, add_bos_token). `g` is only read
 * during the call. FE_E_NOTFOUND when the file has no tokenizer, FE_E_UNSUPPORTED for
 * another tokenizer model ("llama" is SentencePiece) or an unknown pre, FE_E_FORMAT. */
fe_status fe_tokenizer_from_gguf(const fe_gguf *g, fe_tokenizer **out, fe_error *err);

/* Loads a tiktoken file (Llama 3's tokenizer.model: "<base64 bytes> <rank>" per line; the
 * rank is the id and orders the merges). The special tokens are not in the file: pass them
 * (ids past the ranks), or NULL for Llama 3.1's 256 (ids n..n+255 after n ranks:
 * <|begin_of_text|>, <|end_of_text|>, <|reserved_special_token_0|>, ...,
 * <|start_header_id|>, <|end_header_id|>, <|eom_id|>, <|eot_id|>, <|python_tag|>, ...), with
 * BOS <|begin_of_text|> and EOS <|end_of_text|>. `pre` NULL means "llama3". */
fe_status fe_tokenizer_load_tiktoken(const char *path, const fe_added_token *specials,
                                     int n_specials, const char *pre, fe_tokenizer **out,
                                     fe_error *err);
fe_status fe_tokenizer_from_tiktoken(const char *text, size_t len, const char *what,
                                     const fe_added_token *specials, int n_specials,
                                     const char *pre, fe_tokenizer **out, fe_error *err);

/* NULL allowed. */
void fe_tokenizer_destroy(fe_tokenizer *t);

/* Ids: the vocabulary size (ids are 0..n-1); BOS and EOS (-1: none); whether the model
 * wants a BOS in front of a prompt. */
int32_t fe_tokenizer_n_vocab(const fe_tokenizer *t);
int32_t fe_tokenizer_bos(const fe_tokenizer *t);
int32_t fe_tokenizer_eos(const fe_tokenizer *t);
bool fe_tokenizer_add_bos(const fe_tokenizer *t);
/* Sets BOS/EOS (-1: none; another id outside the vocabulary is FE_E_BOUNDS). Not thread-safe:
 * call before the tokenizer is shared. */
fe_status fe_tokenizer_set_bos_eos(fe_tokenizer *t, int32_t bos, int32_t eos);

/* The id of the token whose raw text is text[0..len) (normal or added), or -1. */
int32_t fe_tokenizer_find(const fe_tokenizer *t, const char *text, size_t len);
/* A token's type; 0 when id is out of range. */
fe_token_type fe_tokenizer_token_type(const fe_tokenizer *t, int32_t id);
/* Whether t is a SentencePiece BPE tokenizer (spm.h: GGUF model "llama", Gemma). */
bool fe_tokenizer_is_sentencepiece(const fe_tokenizer *t);
/* A token's raw bytes (not NUL-terminated; may be a partial UTF-8 character) and their
 * count in *len; NULL (and *len 0) when id is out of range. Lives as long as t. */
const char *fe_tokenizer_piece(const fe_tokenizer *t, int32_t id, size_t *len);
/* The longest piece, in bytes. */
size_t fe_tokenizer_max_piece(const fe_tokenizer *t);

/* Encodes text[0..len) into ids[0..cap): BOS first when add_bos, then the tokens; special
 * tokens in the text are matched only when allow_special (otherwise read as plain text).
 * *n_ids is the number of ids the text takes, even when that is more than cap: then the
 * first cap are written and FE_E_BOUNDS is returned (call again with a larger buffer).
 * FE_E_INVALID when add_bos and the tokenizer has no BOS, FE_E_NOMEM. */
fe_status fe_tokenizer_encode(const fe_tokenizer *t, const char *text, size_t len, bool add_bos,
                              bool allow_special, int32_t *ids, size_t cap, size_t *n_ids,
                              fe_error *err);
/* The same into a new array the caller releases with fe_free (core/alloc.h); *ids is NULL
 * on error. */
fe_status fe_tokenizer_encode_alloc(const fe_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, bool allow_special, int32_t **ids,
                                    size_t *n_ids, fe_error *err);

/* Decodes ids[0..n) to their bytes in out[0..cap), NUL-terminated when there is room.
 * *len is the byte count even when it exceeds cap (then FE_E_BOUNDS, out holds the first
 * cap bytes). FE_E_BOUNDS too for an id outside the vocabulary (nothing useful in out). */
fe_status fe_tokenizer_decode(const fe_tokenizer *t, const int32_t *ids, size_t n, char *out,
                              size_t cap, size_t *len, fe_error *err);

/* Streaming decode for generation: push ids one at a time and get text that is always
 * complete, valid UTF-8. Bytes of a character split across tokens are held until the
 * character is complete; a byte sequence that can never be valid comes out as U+FFFD.
 * Caller-owned; `tok` is borrowed and must outlive the stream. */
typedef struct fe_token_stream {
    const fe_tokenizer *tok;
    unsigned char held[4]; /* the start of an incomplete character */
    int n_held;            /* 0..3 */
} fe_token_stream;

void fe_token_stream_init(fe_token_stream *s, const fe_tokenizer *t);
/* The output room one push or flush can need: 3 * (max piece + 3) bytes, plus a NUL. */
size_t fe_token_stream_bound(const fe_tokenizer *t);
/* Appends token id and writes the text now complete to out[0..cap), NUL-terminated, its
 * length in *len. FE_E_BOUNDS (nothing consumed, stream unchanged) for an id outside the
 * vocabulary or when cap is under what this push needs (fe_token_stream_bound always
 * suffices). */
fe_status fe_token_stream_push(fe_token_stream *s, int32_t id, char *out, size_t cap,
                               size_t *len, fe_error *err);
/* Ends the stream: bytes still held (a character cut off) come out as one U+FFFD. The
 * stream is then empty and can be reused. FE_E_BOUNDS when cap < 4. */
fe_status fe_token_stream_flush(fe_token_stream *s, char *out, size_t cap, size_t *len,
                                fe_error *err);

#endif
