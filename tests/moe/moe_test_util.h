// Shared helpers of the MoE tests: temporary directories and tiny models.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "moe/model/tiny_model.h"

namespace ferry::moe::testing {

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ferry_moe_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

// A file's bytes (empty when it cannot be read).
inline std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A small Mixtral-shaped config: 3 layers, 8 experts, top-2, byte vocabulary.
inline MoeConfig tiny_config() {
  MoeConfig c;
  c.vocab_size = 256;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.num_experts = 8;
  c.top_k = 2;
  c.max_position_embeddings = 128;
  c.tokenizer = "byte";
  return c;
}

// tiny_config() with rows that are whole blocks of every GGUF format, K-quant super-blocks of 256
// included: hidden 256 (4 heads of 64, 2 KV heads), expert width `intermediate`.
inline MoeConfig block_config(int layers, int experts, std::int64_t intermediate = 256) {
  MoeConfig c = tiny_config();
  c.hidden_size = 256;
  c.intermediate_size = intermediate;
  c.num_layers = layers;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.num_experts = experts;
  return c;
}

}  // namespace ferry::moe::testing
