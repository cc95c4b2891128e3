#include "moe/model/config_json.h"

#include <cstdint>
#include <limits>
#include <set>

namespace ferry::moe {

int config_checked_int(const nlohmann::json& v, const char* key, const std::string& origin) {
  const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::numeric_limits<int>::max()
                    : v.is_number_integer() ? v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                                  v.get<std::int64_t>() <= std::numeric_limits<int>::max()
                                            : false;
  if (!fits)
    FERRY_THROW(FormatError, "config '", origin, "': field '", key, "' must be an integer in int range, got ",
                v.dump());
  return v.get<int>();
}

int config_require_int(const nlohmann::json& j, const char* key, const std::string& origin) {
  if (!j.contains(key)) FERRY_THROW(FormatError, "config '", origin, "': missing required field '", key, "'");
  return config_checked_int(j[key], key, origin);
}

void config_refuse(const nlohmann::json& j, const std::string& key, const std::string& why, const std::string& origin) {
  FERRY_THROW(FormatError, "config '", origin, "': ", key, " = ", j.at(key).dump(), " is not implemented (", why, ")");
}

int config_num_experts(const nlohmann::json& j, const std::string& origin) {
  return config_require_int(j, j.contains("num_local_experts") ? "num_local_experts" : "num_experts", origin);
}

std::vector<int> qwen_dense_layers(const nlohmann::json& j, int num_layers, int num_experts, const std::string& origin) {
  const int step = config_get_or<int>(j, "decoder_sparse_step", 1, origin);
  if (step < 1) FERRY_THROW(FormatError, "config '", origin, "': decoder_sparse_step must be at least 1, got ", step);
  std::set<int> only;
  if (config_has(j, "mlp_only_layers")) {
    if (!j["mlp_only_layers"].is_array())
      FERRY_THROW(FormatError, "config '", origin, "': mlp_only_layers must be a list of layer indices");
    for (const auto& v : j["mlp_only_layers"]) {
      const int l = config_checked_int(v, "mlp_only_layers", origin);
      if (l < 0 || l >= num_layers)
        FERRY_THROW(FormatError, "config '", origin, "': mlp_only_layers names layer ", l, ", outside 0..",
                    num_layers - 1);
      only.insert(l);
    }
  }
  std::vector<int> dense;
  for (int l = 0; l < num_layers; ++l)
    if (only.count(l) || !(num_experts > 0 && (l + 1) % step == 0)) dense.push_back(l);
  return dense;
}

}  // namespace ferry::moe
