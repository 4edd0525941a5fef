/* lm/model/weights_safetensors_write.h: writing Llama weights as a Hugging Face checkpoint folder
 * (model.safetensors + config.json) that fe_safetensors_open, fe_lm_config_from_json_file
 * and fe_llama_weights_from_safetensors — or transformers — read back as the same model. */
#ifndef FE_LM_SAFETENSORS_WRITE_H
#define FE_LM_SAFETENSORS_WRITE_H

#include "lm/model/weights.h"

/* Writes `w` into the folder `dir` (created when missing; its parent must exist):
 *
 *  - dir/model.safetensors: HF Llama names, each tensor in its own dtype (F32, BF16 or F16;
 *    a quantized tensor is FE_E_UNSUPPORTED naming it), f32 tensors first so every tensor's
 *    data is aligned to its element size, the header padded so data starts 64-byte aligned.
 *    lm_head.weight is left out when the config ties embeddings. Weights whose q/k rows are
 *    permuted for interleaved RoPE (GGUF's) are written back in HF's rotate-half order.
 *  - dir/config.json: the HF LlamaConfig keys for w->cfg (rope_scaling for linear and llama3,
 *    tie_word_embeddings, bos/eos ids, torch_dtype from the embedding's dtype).
 *    FE_E_UNSUPPORTED for rope scaling from a GGUF rope_freqs tensor, which has no
 *    config.json form.
 *
 * Each file is written under a temporary name and renamed, so a failure never leaves a
 * half-written file under the final name. FE_E_IO names the path and the OS's reason;
 * FE_E_STATE for unread weights (weights.h). */
fe_status fe_llama_weights_write_safetensors(const fe_llama_weights *w, const char *dir,
                                             fe_error *err);

#endif
