/* lm/model/checkpoint.h: a Llama-family model opened by its path, as its config and weights.
 * The path is a GGUF file, or a Hugging Face checkpoint: a folder with config.json and
 * model.safetensors (or a sharded model.safetensors.index.json), one .safetensors file or
 * an index with config.json beside it. The weights are read (the file mapped, views into
 * it) or unread (headers only, data NULL: for tracing; see weights.h). */
#ifndef FE_LM_CHECKPOINT_H
#define FE_LM_CHECKPOINT_H

#include <stdbool.h>

#include "lm/format/gguf.h"
#include "lm/format/safetensors.h"
#include "lm/model/weights.h"

/* Whether `path` has a checkpoint's form (a .gguf or .safetensors file, an .index.json, a
 * folder); says nothing about what is in it. */
bool fe_checkpoint_path_ok(const char *path);

/* Opens the checkpoint at `path`: on success exactly one of *gguf and *st is the open
 * reader (the other NULL), *cfg its config (GGUF metadata, or config.json beside it) and
 * *w its weights, borrowing that reader. unread: headers only (fe_gguf_open_header,
 * fe_safetensors_open_header), so a checkpoint whose data is missing still opens.
 * Errors: FE_E_INVALID when the path has no checkpoint's form (message: the forms), then
 * those of the readers, the config and the weight map, each naming the file. On error
 * nothing is left open. The caller fe_llama_weights_free()s *w, then closes the reader. */
fe_status fe_checkpoint_open(const char *path, bool unread, fe_gguf **gguf, fe_safetensors **st,
                             fe_lm_config *cfg, fe_llama_weights *w, fe_error *err);

/* "dir/name" for the folder of the checkpoint at `path` (itself when a folder, else the
 * folder holding the file; "." when the path has none). fe_malloc'd; NULL when out of
 * memory. */
char *fe_checkpoint_beside(const char *path, const char *name);

#endif
