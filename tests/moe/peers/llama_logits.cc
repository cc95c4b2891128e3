// llama.cpp's teacher-forced logits of one token sequence from a GGUF file, KV cache in f32, one
// batch, one thread: the peer side of tests/moe/logits_vs_llama.sh. Built by that script against
// llama.cpp's headers and prebuilt libraries when they are present; not part of ferry's build.
//   llama_logits BACKEND_DIR MODEL.gguf OUT.f32 TOKEN...   (OUT: tokens × vocab float32)
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: llama_logits BACKEND_DIR MODEL.gguf OUT.f32 TOKEN...\n");
    return 2;
  }
  ggml_backend_load_all_from_path(argv[1]);
  llama_backend_init();
  // Weights as stored, not in ggml's repacked CPU buffers: those serve 2-D products only, and
  // DeepSeek's 3-D attn_k_b / attn_v_b in a block format then have no backend (GGML_ASSERT
  // cur_backend_id != -1 at the first graph).
  llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false;
  llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (model == nullptr) return 1;
  const int n = argc - 4;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n);
  cp.n_threads = cp.n_threads_batch = 1;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  llama_batch batch = llama_batch_init(n, 0, 1);
  batch.n_tokens = n;
  for (int i = 0; i < n; ++i) {
    batch.token[i] = std::atoi(argv[4 + i]);
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  if (llama_decode(ctx, batch) != 0) return 1;
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) return 1;
  for (int i = 0; i < n; ++i) std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), vocab, out);
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
