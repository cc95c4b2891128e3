#include "advise/profile_book.h"

#include <filesystem>

#include "advise/zoo_profiler.h"
#include "compress/codec_registry.h"

namespace ferry::advise {
namespace {

bool is_profile_file(const std::string& s) {
  return (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) || std::filesystem::is_regular_file(s);
}

std::string key_of(const std::string& name, std::int64_t batch) {
  return is_profile_file(name) ? name : name + "@" + std::to_string(batch);
}

}  // namespace

const ModelProfile& ProfileBook::model(const std::string& name, std::int64_t batch) {
  const std::string key = key_of(name, batch);
  auto& slot = models_[key];
  if (slot) return *slot;
  if (is_profile_file(name)) {
    slot = std::make_unique<ModelProfile>(load_model_profile(name));
    origins_[key] = name;
    return *slot;
  }
  const std::string cached =
      options_.dir.empty() ? "" : options_.dir + "/" + name + "_b" + std::to_string(batch) + ".json";
  if (!cached.empty() && std::filesystem::exists(cached)) {
    slot = std::make_unique<ModelProfile>(load_model_profile(cached));
    origins_[key] = cached;
    return *slot;
  }
  ZooProfileOptions o;
  o.batch = batch;
  slot = std::make_unique<ModelProfile>(profile_zoo_model(name, o));
  origins_[key] = "measured now";
  if (!cached.empty() && options_.write) {
    save_model_profile(*slot, cached);
    origins_[key] = "measured now, stored in " + cached;
  }
  return *slot;
}

std::string ProfileBook::origin(const std::string& name, std::int64_t batch) const {
  const auto it = origins_.find(key_of(name, batch));
  return it == origins_.end() ? std::string() : it->second;
}

const CodecCost& ProfileBook::codec(const std::string& spec, const ModelProfile& m) {
  const std::string canonical = compress::canonical_codec_spec(spec);
  auto& slot = codecs_[canonical + "|" + m.name + "@" + std::to_string(m.batch)];
  if (!slot) {
    std::vector<std::size_t> numels;
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& t : m.tensors) {
      numels.push_back(t.numel);
      shapes.push_back(t.shape);
    }
    slot = std::make_unique<CodecCost>(measure_codec_cost(canonical, numels, shapes));
  }
  return *slot;
}

const CodecCost& ProfileBook::fp32(const ModelProfile& m) { return codec("none", m); }

}  // namespace ferry::advise
