// The plain reference forward: every weight resident, written simply with libtorch, no offloading.
// Tests compare the offloading engine against it; the benchmark measures the engine's overhead
// against it.
#pragma once

#include <memory>

#include "moe/model/checkpoint.h"
#include "moe/model/language_model.h"

namespace ferry::moe {

class ReferenceModel : public LanguageModel {
 public:
  // Loads every tensor of `ck` (experts included) as float32.
  static std::unique_ptr<ReferenceModel> load(const Checkpoint& ck);
  ~ReferenceModel() override;

  std::vector<float> forward(const TokenBatch& tokens, bool all_positions = false) override;
  void reset() override;
  const MoeConfig& config() const override;

 private:
  ReferenceModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::moe
