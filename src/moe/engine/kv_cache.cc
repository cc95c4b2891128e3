#include "moe/engine/kv_cache.h"

#include <algorithm>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"

namespace ferry::moe {

std::uint64_t kv_cache_bytes(const MoeConfig& c, std::int64_t positions) {
  return static_cast<std::uint64_t>(c.num_layers) * static_cast<std::uint64_t>(c.kv_cache_heads()) *
         static_cast<std::uint64_t>(c.kv_key_width() + c.kv_value_width()) * static_cast<std::uint64_t>(positions) *
         sizeof(float);
}

KvCache::KvCache(const MoeConfig& config, std::int64_t max_positions)
    : config_(&config), limit_(max_positions > 0 ? max_positions : config.max_position_embeddings),
      k_(config.num_layers), v_(config.num_layers), start_(config.num_layers, 0) {
  FERRY_REQUIRE(max_positions >= 0 && max_positions <= config.max_position_embeddings, "a sequence of ",
                max_positions, " positions: expected 0 (no limit) .. max_position_embeddings (",
                config.max_position_embeddings, ")");
}

std::int64_t KvCache::keep_from(int l) const {
  return config_->windowed(l) ? std::max<std::int64_t>(start_[l], pos_ - config_->sliding_window + 1) : start_[l];
}

void KvCache::reserve(std::int64_t T) {
  const MoeConfig& c = *config_;
  if (limit_ == c.max_position_embeddings)
    FERRY_REQUIRE(pos_ + T <= limit_, "sequence longer than max_position_embeddings (", limit_, ")");
  else
    FERRY_REQUIRE(pos_ + T <= limit_, "sequence longer than its limit of ", limit_, " positions");
  for (int l = 0; l < c.num_layers; ++l) {
    const std::int64_t need = pos_ - keep_from(l) + T;
    const std::int64_t cap = k_[l].defined() ? k_[l].size(2) : 0;
    if (cap >= need) continue;
    const std::int64_t ncap = std::min(limit_, std::max<std::int64_t>(need, std::max<std::int64_t>(64, cap * 2)));
    auto nk = torch::zeros({1, c.kv_cache_heads(), ncap, c.kv_key_width()});
    auto nv = torch::zeros({1, c.kv_cache_heads(), ncap, c.kv_value_width()});  // MLA: none (width 0)
    if (cap > 0) {
      nk.slice(2, 0, cap).copy_(k_[l]);
      nv.slice(2, 0, cap).copy_(v_[l]);
    }
    k_[l] = nk;
    v_[l] = nv;
  }
}

std::pair<torch::Tensor, torch::Tensor> KvCache::append(int l, const torch::Tensor& k, const torch::Tensor& v) {
  const std::int64_t T = k.size(2);
  std::int64_t& start = start_[l];
  if (const std::int64_t from = keep_from(l); from > start) {  // slide the window's keys to index 0
    const std::int64_t n = pos_ - from;
    k_[l].slice(2, 0, n).copy_(k_[l].slice(2, from - start, pos_ - start).clone());
    v_[l].slice(2, 0, n).copy_(v_[l].slice(2, from - start, pos_ - start).clone());
    start = from;
  }
  const std::int64_t at = pos_ - start;  // the cache index of position pos
  k_[l].slice(2, at, at + T).copy_(k);
  v_[l].slice(2, at, at + T).copy_(v);
  return {k_[l].slice(2, 0, at + T), v_[l].slice(2, 0, at + T)};
}

bool KvCache::rewind(std::int64_t positions, std::int64_t max_positions) {
  const MoeConfig& c = *config_;
  const std::int64_t limit = max_positions > 0 ? max_positions : c.max_position_embeddings;
  if (positions < 0 || positions > pos_ || positions > limit || limit > c.max_position_embeddings) return false;
  for (int l = 0; l < c.num_layers; ++l)
    if (start_[l] > (c.windowed(l) ? std::max<std::int64_t>(0, positions - c.sliding_window + 1) : 0)) return false;
  for (int l = 0; l < c.num_layers; ++l) {
    if (!k_[l].defined() || k_[l].size(2) <= limit) continue;
    k_[l] = k_[l].slice(2, 0, limit).clone();  // never more than the new limit's bytes
    v_[l] = v_[l].slice(2, 0, limit).clone();
  }
  pos_ = positions;
  limit_ = limit;
  return true;
}

std::int64_t KvCache::cached_positions() const {
  std::int64_t n = 0;
  for (std::size_t l = 0; l < k_.size(); ++l)
    if (k_[l].defined()) n += pos_ - start_[l];
  return n;
}

std::uint64_t KvCache::bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : k_)
    if (t.defined()) n += static_cast<std::uint64_t>(t.numel()) * sizeof(float);
  for (const auto& t : v_)
    if (t.defined()) n += static_cast<std::uint64_t>(t.numel()) * sizeof(float);
  return n;
}

}  // namespace ferry::moe
