#include "moe/model/gguf_model.h"

#include <cstring>

#include <set>

#include "core/error.h"
#include "core/excerpt.h"
#include "moe/model/gguf_layout.h"
#include "moe/quant/dequantize.h"

namespace ferry::moe {

std::unique_ptr<GgufModel> GgufModel::open(const std::string& path) {
  auto m = std::unique_ptr<GgufModel>(new GgufModel());
  m->file_ = quant::GgufFile::open(path);
  m->config_ = gguf_config(m->file_);
  std::set<std::string, std::less<>> planned;
  for (const GgufTensorPlan& t : gguf_tensor_plan(m->config_)) {
    planned.insert(t.name);
    const quant::GgufTensor* tensor = m->file_.find_tensor(t.name);
    if (tensor == nullptr)
      FERRY_THROW(FormatError, "GGUF '", path, "': tensor '", excerpt(t.name), "' is missing (a ", m->config_.model_type,
                  " model of this configuration has it)");
    if (tensor->dims != t.dims) {
      std::string got, want;
      for (auto d : tensor->dims) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (auto d : t.dims) want += (want.empty() ? "" : ", ") + std::to_string(d);
      FERRY_THROW(FormatError, "GGUF '", path, "': tensor '", excerpt(t.name), "' has dims [", got, "], expected [", want,
                  "] from the metadata");
    }
    for (std::size_t i = 0; i < t.hf_names.size(); ++i)
      m->entries_[t.hf_names[i]] =
          Entry{tensor, t.stacked ? static_cast<int>(i) : -1, t.permute_heads, t.hf_shape};
  }
  for (const quant::GgufTensor& t : m->file_.tensors())
    if (!planned.count(t.name) && !gguf_nextn_tensor(t.name, m->config_))
      FERRY_THROW(FormatError, "GGUF '", path, "': tensor '", excerpt(t.name), "' is not one of a ", m->config_.model_type,
                  " model of this configuration (ferry refuses tensors it would not use)");
  return m;
}

const GgufModel::Entry& GgufModel::entry(const std::string& hf_name) const {
  auto it = entries_.find(hf_name);
  if (it == entries_.end()) FERRY_THROW(FormatError, "tensor '", excerpt(hf_name), "' missing from GGUF '", path(), "'");
  return it->second;
}

const std::vector<std::int64_t>& GgufModel::shape(const std::string& hf_name) const { return entry(hf_name).shape; }

std::span<const std::byte> GgufModel::bytes(const Entry& e) const {
  std::span<const std::byte> all = file_.data(*e.tensor);
  if (e.slice < 0) return all;
  const std::size_t n = all.size() / e.tensor->dims.back();  // whole rows: the reader checked the blocks
  return all.subspan(static_cast<std::size_t>(e.slice) * n, n);
}

void GgufModel::read_f32(const std::string& hf_name, float* dst) const {
  const Entry& e = entry(hf_name);
  std::int64_t numel = 1;
  for (auto d : e.shape) numel *= d;
  const auto n = static_cast<std::size_t>(numel);
  const std::span<const std::byte> src = bytes(e);
  if (e.permute_heads == 0) {
    quant::dequantize_row(e.tensor->type, src.data(), dst, n);
    return;
  }
  std::vector<float> permuted(n);
  quant::dequantize_row(e.tensor->type, src.data(), permuted.data(), n);
  const std::int64_t rows = e.shape[0], cols = numel / rows;  // a bias is rows x 1
  gguf_unpermute_rows(permuted, std::span<float>(dst, n), rows, cols, e.permute_heads);
}

quant::QuantType GgufModel::stored_type(const std::string& hf_name) const { return entry(hf_name).tensor->type; }
const std::string& GgufModel::gguf_name(const std::string& hf_name) const { return entry(hf_name).tensor->name; }

void GgufModel::read_blocks(const std::string& hf_name, std::byte* dst) const {
  const Entry& e = entry(hf_name);
  const std::span<const std::byte> src = bytes(e);
  if (e.permute_heads == 0) {
    std::memcpy(dst, src.data(), src.size());
    return;
  }
  const std::int64_t rows = e.shape[0];
  gguf_unpermute_row_bytes(src, std::span<std::byte>(dst, src.size()), rows,
                           static_cast<std::int64_t>(src.size()) / rows, e.permute_heads);
}

StoredTensor GgufModel::stored(const std::string& hf_name) const {
  const Entry& e = entry(hf_name);
  FERRY_REQUIRE(e.permute_heads == 0, "tensor '", hf_name, "' of GGUF '", path(), "' is stored with permuted rows");
  const std::span<const std::byte> b = bytes(e);
  return {e.tensor->type, b, e.tensor->name,
          e.tensor->offset + static_cast<std::uint64_t>(b.data() - file_.data(*e.tensor).data())};
}

}  // namespace ferry::moe
