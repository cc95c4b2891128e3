#include <ATen/Context.h>

#include <functional>
#include <mutex>

#include "core/error.h"
#include "train/models/builtin_models.h"
#include "train/models/model.h"

namespace ferry::train {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Model> (*make)(const ModelOptions&);
};

constexpr Entry kModels[] = {
    {"mlp", &detail::make_mlp},
    {"cnn", &detail::make_cnn},
    {"fcnet", &detail::make_fcnet},
};

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : kModels) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Model> make_model(const std::string& name, std::uint64_t seed,
                                  const ModelOptions& options) {
  FERRY_REQUIRE(options.in_channels > 0 && options.height > 0 && options.width > 0 &&
                    options.num_classes > 0,
                "model ", name, ": input shape ", options.in_channels, "x", options.height, "x",
                options.width, " and ", options.num_classes, " classes must be positive");
  for (const auto& e : kModels) {
    if (name != e.name) continue;
    // The global generator is process-wide: hold it while seeding and initialising.
    static std::mutex init_mutex;
    std::lock_guard lock(init_mutex);
    at::manual_seed(seed);
    return e.make(options);
  }
  std::string known;
  for (const auto& e : kModels) known += (known.empty() ? "" : ", ") + std::string(e.name);
  FERRY_THROW(InvalidArgument, "unknown model '", name, "'; known models: ", known);
}

}  // namespace ferry::train
