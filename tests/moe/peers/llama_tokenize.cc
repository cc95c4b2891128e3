// llama.cpp's token ids of texts under a GGUF file's vocabulary (loaded vocabulary-only): the peer
// side of tests/moe/tokenize_vs_llama.sh. Built by that script against llama.cpp's headers and
// prebuilt libraries when they are present; not part of ferry's build.
//   llama_tokenize MODEL.gguf TEXTS   (TEXTS: texts separated by NUL bytes; prints one line of
//                                      space-separated ids per text; special tokens are parsed,
//                                      no BOS is added)
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: llama_tokenize MODEL.gguf TEXTS\n");
    return 2;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) return 1;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t begin = 0;
  while (begin <= all.size()) {
    std::size_t end = all.find('\0', begin);
    if (end == std::string::npos) end = all.size();
    const std::string text = all.substr(begin, end - begin);
    std::vector<llama_token> ids(text.size() + 8);
    const int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                                 static_cast<int32_t>(ids.size()), /*add_special=*/false, /*parse_special=*/true);
    if (n < 0) return 1;
    for (int i = 0; i < n; ++i) std::printf(i == 0 ? "%d" : " %d", ids[i]);
    std::printf("\n");
    begin = end + 1;
  }
  llama_model_free(model);
  return 0;
}
