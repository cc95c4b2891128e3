// Fuzzes config.json reading (moe/model/config): the text is either rejected (FormatError for
// bad JSON or field types, InvalidArgument for inconsistent values) or gives a configuration
// that validates and survives a write/read round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "moe/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  const std::string text(reinterpret_cast<const char*>(data), size);
  moe::MoeConfig c;
  const bool ok = fuzz::parses<FormatError, InvalidArgument>([&] {
    nlohmann::json j;
    try {  // load_config reads the file with the same parser and maps its errors the same way
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      FERRY_THROW(FormatError, "config 'fuzz' is not valid JSON: ", e.what());
    }
    c = moe::config_from_json(j, "fuzz");
  });
  if (!ok) return 0;
  c.validate("fuzz");  // must not throw: config_from_json validated it
  FERRY_FUZZ_ASSERT(c.num_heads % c.num_kv_heads == 0 && c.head_dim > 0 && c.top_k <= c.num_experts);
  const moe::MoeConfig r = moe::config_from_json(moe::config_to_json(c), "round trip");
  FERRY_FUZZ_ASSERT(r.model_type == c.model_type && r.vocab_size == c.vocab_size && r.hidden_size == c.hidden_size);
  FERRY_FUZZ_ASSERT(r.intermediate_size == c.intermediate_size && r.num_layers == c.num_layers);
  FERRY_FUZZ_ASSERT(r.num_heads == c.num_heads && r.num_kv_heads == c.num_kv_heads && r.head_dim == c.head_dim);
  FERRY_FUZZ_ASSERT(r.num_experts == c.num_experts && r.top_k == c.top_k);
  FERRY_FUZZ_ASSERT(r.max_position_embeddings == c.max_position_embeddings && r.tokenizer == c.tokenizer);
  FERRY_FUZZ_ASSERT(r.tie_word_embeddings == c.tie_word_embeddings && r.norm_topk_prob == c.norm_topk_prob);
  FERRY_FUZZ_ASSERT(r.dense_layers == c.dense_layers && r.num_moe_layers() >= 1);
  FERRY_FUZZ_ASSERT(r.qkv_bias == c.qkv_bias && r.o_bias == c.o_bias && r.qk_norm == c.qk_norm);
  FERRY_FUZZ_ASSERT(r.shared_expert_intermediate_size == c.shared_expert_intermediate_size);
  return 0;
}
