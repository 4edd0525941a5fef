/* tests/support/tok_fixtures.h: what the tokenizer tests share: fixture paths
 * (tests/fixtures, or $FERRUM_FIXTURES), a tokenizer from a GGUF file, id and round-trip
 * assertions, and small tokenizers built in C (from arrays, and as tokenizer.json text).
 * Test support only: failures fail the running cmocka test. */
#ifndef FE_TESTS_TOK_FIXTURES_H
#define FE_TESTS_TOK_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm/format/gguf.h"
#include "lm/tokenizer/tokenizer.h"

/* tests/fixtures/<name> (a static buffer: copy it before the next call). */
const char *tokfix_path(const char *name);
/* A whole file, NUL-terminated, malloc'd; *n its length. Fails the test when unreadable. */
char *tokfix_read_file(const char *path, size_t *n);
/* The tokenizer in a GGUF file; the reader is kept in *keep (closed when keep is NULL). */
fe_tokenizer *tokfix_from_gguf(const char *path, fe_gguf **keep);
/* Asserts text encodes to want[0..n_want) (no BOS), printing both on a mismatch. */
void tokfix_expect_ids(const fe_tokenizer *t, const char *text, size_t len, bool allow_special,
                       const int32_t *want, size_t n_want, const char *label);
/* Asserts decode(encode(text)) == text (specials not matched). */
void tokfix_expect_round_trip(const fe_tokenizer *t, const char *text, size_t len);
/* 256 byte tokens (id = byte), then `extra` tokens (raw text; ids 256...), merges ("a b",
 * raw text, rank = index), added tokens, and a named pre-tokenizer. */
fe_tokenizer *tokfix_tiny(const char *const *extra, int n_extra, const char *const *merges,
                          int n_merges, const fe_added_token *added, int n_added,
                          const char *pre);
/* A tokenizer.json text (malloc'd) with the 256 byte tokens (ids 0..255) and the given JSON
 * pieces: added_tokens, extra vocab entries (",\"ab\":256" or ""), merges, pre_tokenizer. */
char *tokfix_tiny_json(const char *added, const char *extra_vocab, const char *merges,
                       const char *pre);

#endif
