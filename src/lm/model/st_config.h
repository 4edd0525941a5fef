/* lm/model/st_config.h: what a sentence-transformers folder says about turning an encoder's
 * hidden states into embeddings: modules.json (Transformer, Pooling, Normalize), the pooling
 * module's config (1_Pooling/config.json), sentence_bert_config.json (max_seq_length) and
 * config_sentence_transformers.json (prompts, default_prompt_name). A folder without them
 * (a bare transformers checkpoint) gets mean pooling, no normalisation and no maximum. A
 * module or pooling mode ferrum does not run (Dense, max pooling, ...) is refused by name
 * rather than skipped. */
#ifndef FE_LM_ST_CONFIG_H
#define FE_LM_ST_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "ferrum/core.h"
#include "lm/model/encoder.h"

enum { FE_ST_MAX_PROMPTS = 16 };

typedef struct fe_st_config {
    fe_pooling pooling;
    bool normalize;          /* a Normalize module follows the pooling */
    int64_t max_seq_length;  /* 0: not given */
    int n_prompts;
    char *prompt_name[FE_ST_MAX_PROMPTS]; /* "query", "document", ... */
    char *prompt[FE_ST_MAX_PROMPTS];      /* the text put before the input */
    char *default_prompt;                 /* a prompt_name, or NULL */
    int n_dense;             /* Dense modules listed (fe_st_config_read_with_dense only) */
} fe_st_config;

/* Reads the folder `dir`. FE_E_FORMAT naming the file and key for malformed JSON,
 * FE_E_UNSUPPORTED for a module or pooling mode ferrum does not run, FE_E_NOMEM. On error
 * *out holds nothing to release. */
fe_status fe_st_config_read(const char *dir, fe_st_config *out, fe_error *err);
/* The same, with Dense modules counted instead of refused: for a model whose loader reads
 * them (EmbeddingGemma: embedgemma.h). */
fe_status fe_st_config_read_with_dense(const char *dir, fe_st_config *out, fe_error *err);
void fe_st_config_deinit(fe_st_config *c);
/* The prompt named `name`, or NULL. */
const char *fe_st_config_prompt(const fe_st_config *c, const char *name);

#endif
