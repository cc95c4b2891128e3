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
  ModelInput input;
};

constexpr Entry kModels[] = {
    {"mlp", &detail::make_mlp, ModelInput::kImages},
    {"cnn", &detail::make_cnn, ModelInput::kImages},
    {"fcnet", &detail::make_fcnet, ModelInput::kImages},
    {"resnet20", &detail::make_resnet20, ModelInput::kImages},
    {"gpt", &detail::make_gpt, ModelInput::kTokens},
};

[[noreturn]] void throw_unknown(const std::string& name) {
  std::string known;
  for (const auto& e : kModels) known += (known.empty() ? "" : ", ") + std::string(e.name);
  FERRY_THROW(InvalidArgument, "unknown model '", name, "'; known models: ", known);
}

const Entry& entry(const std::string& name) {
  for (const auto& e : kModels)
    if (name == e.name) return e;
  throw_unknown(name);
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : kModels) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Model> make_model(const std::string& name, std::uint64_t seed,
                                  const ModelOptions& options) {
  FERRY_REQUIRE(options.in_channels > 0 && options.height > 0 && options.width > 0 && options.num_classes > 0 &&
                    options.vocab > 0 && options.context > 0,
                "model ", name, ": input shape ", options.in_channels, "x", options.height, "x",
                options.width, " and ", options.num_classes, " classes must be greater than 0");
  const Entry& e = entry(name);
  // The global generator is process-wide: hold it while seeding and initialising.
  static std::mutex init_mutex;
  std::lock_guard lock(init_mutex);
  at::manual_seed(seed);
  return e.make(options);
}

ModelInput model_input(const std::string& name) { return entry(name).input; }

}  // namespace ferry::train
