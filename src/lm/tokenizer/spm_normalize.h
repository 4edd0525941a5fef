/* lm/tokenizer/spm_normalize.h: SentencePiece's normaliser, as a model file carries it.
 *
 * The precompiled charsmap (NormalizerSpec.precompiled_charsmap; GGUF
 * tokenizer.ggml.precompiled_charsmap; tokenizer.json's "Precompiled" normaliser) is a
 * compiled rule set such as nmt_nfkc (NFKC plus NMT's folding of controls and odd spaces):
 *   u32 (little-endian) trie_bytes | a darts-clone double-array trie of trie_bytes / 4 u32
 *   units over the input's bytes | NUL-terminated replacement strings.
 * The input is read left to right: at each position the longest prefix the trie holds is
 * replaced by its string; where none matches one UTF-8 character is copied (a byte that does
 * not start a valid character becomes U+FFFD). With remove_extra_whitespaces, spaces at the
 * start and end of the result are dropped and runs of them kept as one, judged on the
 * replaced text as SentencePiece does; with collapse_spaces (set after init) runs of spaces in
 * the result become one and none is dropped. Spaces stay ' ' here; the Unigram encoder escapes them
 * to "▁" and adds the dummy prefix. The rules are data: nothing here knows Unicode. */
#ifndef FE_LM_SPM_NORMALIZE_H
#define FE_LM_SPM_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferrum/core.h"

typedef struct fe_spm_normalizer {
    uint32_t *units;   /* the trie; NULL when the model has no charsmap (identity) */
    size_t n_units;
    char *strings;     /* the replacement strings, the last byte a NUL */
    size_t strings_len;
    bool remove_extra_whitespaces;
    bool collapse_spaces; /* runs of spaces in the result become one, none removed (Hugging
                             Face's Replace " {2,}" -> " " after Precompiled) */
} fe_spm_normalizer;

/* Reads a charsmap blob[0..n) (copied; n == 0: no charsmap) into nz. FE_E_FORMAT naming the
 * rule for a blob shorter than its header, a trie size that is not whole units or runs past
 * the blob, a replacement offset past the strings, or strings without a final NUL;
 * FE_E_NOMEM. `what` names the source in messages. nz is zeroed first; deinit it after. */
fe_status fe_spm_normalizer_init(fe_spm_normalizer *nz, const void *blob, size_t n,
                                 bool remove_extra_whitespaces, const char *what, fe_error *err);
void fe_spm_normalizer_deinit(fe_spm_normalizer *nz);

/* Normalises text[0..n) into *out (fe_malloc'd, the caller frees; *out_n bytes, no NUL added).
 * FE_E_NOMEM. */
fe_status fe_spm_normalize(const fe_spm_normalizer *nz, const char *text, size_t n, char **out,
                           size_t *out_n, fe_error *err);

#endif
