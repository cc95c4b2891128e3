// Typed reads of config.json fields, shared by config.cc (the keys every family has) and the
// family files (their own keys): a missing field, one of the wrong type or an integer outside int's
// range is one FormatError naming the file and the key.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {

// An integer field that fits an int: nlohmann's get<int>() would silently truncate a larger
// integer and convert a float (undefined behaviour when it is out of int's range).
int config_checked_int(const nlohmann::json& v, const char* key, const std::string& origin);

// The field's value, or `fallback` when it is absent or null.
template <typename T>
T config_get_or(const nlohmann::json& j, const char* key, T fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if constexpr (std::is_same_v<T, int>) {
    return config_checked_int(j[key], key, origin);
  } else {
    try {
      return j[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      FERRY_THROW(FormatError, "config '", origin, "': field '", key, "' has the wrong type (", j[key].dump(), ")");
    }
  }
}

// A field that must be present.
int config_require_int(const nlohmann::json& j, const char* key, const std::string& origin);

// Whether the field is present and not null.
inline bool config_has(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// Throws FormatError "config 'ORIGIN': KEY = VALUE is not implemented (WHY)".
[[noreturn]] void config_refuse(const nlohmann::json& j, const std::string& key, const std::string& why,
                                const std::string& origin);

// The routed experts per layer under HF's two spellings: num_local_experts when given, else
// num_experts (Mixtral, Qwen2/3-MoE, OLMoE).
int config_num_experts(const nlohmann::json& j, const std::string& origin);

// Qwen2MoeDecoderLayer's choice of dense layers (Qwen3-MoE's is the same): a layer is sparse iff it
// is not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0.
std::vector<int> qwen_dense_layers(const nlohmann::json& j, int num_layers, int num_experts, const std::string& origin);

}  // namespace ferry::moe
