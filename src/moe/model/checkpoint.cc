#include "core/json_depth.h"
#include "moe/model/checkpoint.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/path_checks.h"
#include "moe/model/finite_blocks.h"
#include "moe/quant/dequantize.h"

namespace ferry::moe {

namespace fs = std::filesystem;

namespace {

// Bytes of a tensor of `shape` (rows of its last dim) in `type`.
std::size_t stored_bytes(quant::QuantType type, const std::vector<std::int64_t>& shape) {
  std::size_t rows = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= static_cast<std::size_t>(shape[d]);
  return rows * quant::quant_row_bytes(type, shape.empty() ? 1 : static_cast<std::size_t>(shape.back()));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_safetensors_index(const std::string& text,
                                                                         const std::string& origin) {
  require_json_depth(text, kMaxJsonDepthFile, "'" + origin + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "'", origin, "' is not valid JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    FERRY_THROW(FormatError, "'", origin, "' has no 'weight_map' object");
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) FERRY_THROW(FormatError, "'", origin, "': weight_map values must be file names");
    std::string shard = it.value().get<std::string>();
    // A shard names a file next to the index; a path could make the reader map any file.
    if (shard.empty() || shard == "." || shard == ".." || shard.find('/') != std::string::npos ||
        shard.find('\0') != std::string::npos)
      FERRY_THROW(FormatError, "'", origin, "': weight_map maps tensor '", excerpt(it.key()), "' to '", excerpt(shard),
                  "', expected a file name in the checkpoint directory");
    out.emplace_back(it.key(), std::move(shard));
  }
  return out;
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto ck = std::make_unique<Checkpoint>();
  ck->dir_ = dir;
  if (fs::is_regular_file(dir)) {  // a model file: GGUF (a checkpoint is a directory)
    ck->gguf_ = GgufModel::open(dir);
    ck->config_ = ck->gguf_->config();
    return ck;
  }
  if (!fs::is_directory(dir)) {
    const std::string kind = file_kind(dir);  // stat only: a FIFO is never opened
    if (kind.empty()) FERRY_THROW(IoError, "model '", excerpt(dir), "' does not exist");
    FERRY_THROW(IoError, "model '", excerpt(dir), "' is ", kind, ", expected a model directory or a GGUF file");
  }
  ck->config_ = load_config(dir);
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::exists(index)) {
    require_regular_file(index.string(), "safetensors index");
    std::ifstream in(index, std::ios::binary);
    if (!in) FERRY_THROW(IoError, "cannot open '", index.string(), "'");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, std::size_t> shard_index;
    for (const auto& [tensor, shard] : parse_safetensors_index(text, index.string())) {
      if (!shard_index.count(shard)) {
        shard_index[shard] = ck->files_.size();
        ck->files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open((fs::path(dir) / shard).string())));
      }
      const std::size_t f = shard_index[shard];
      if (!ck->files_[f]->find(tensor))
        FERRY_THROW(FormatError, "'", index.string(), "' maps tensor '", excerpt(tensor), "' to '", excerpt(shard),
                    "' which does not contain it");
      ck->shard_of_[tensor] = f;
    }
  } else if (fs::exists(single)) {
    ck->files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    for (const auto& t : ck->files_[0]->tensors()) ck->shard_of_[t.name] = 0;
  } else {
    FERRY_THROW(IoError, "model directory '", dir, "' has neither model.safetensors nor model.safetensors.index.json");
  }
  ck->fused_ = fused_expert_parts(ck->config_);
  return ck;
}

void Checkpoint::release_pages() const {
  if (gguf_) gguf_->file().release_pages();
  for (const auto& f : files_) f->release_pages();
}

TensorRef Checkpoint::find(const std::string& name) const {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) return {nullptr, nullptr};
  const SafetensorsFile* f = files_[it->second].get();
  return {f, f->find(name)};
}

const FusedPart* Checkpoint::part_of(const std::string& name) const {
  const auto it = fused_.find(name);
  return it == fused_.end() || find(name).file ? nullptr : &it->second;
}

std::vector<std::string> Checkpoint::stored_names(const std::string& name) const {
  const FusedPart* part = part_of(name);
  if (part == nullptr) return {name};
  if (part->mxfp4) return {part->blocks_name(), part->scales_name()};
  return {part->source};
}

TensorRef Checkpoint::at(const std::string& name) const {
  if (gguf_) {
    gguf_->shape(name);  // throws when absent
    return {nullptr, nullptr};
  }
  TensorRef r = find(name);
  if (r.file) return r;
  if (const FusedPart* part = part_of(name)) {
    fused_source(*part);
    FERRY_THROW(FormatError, "tensor '", excerpt(name), "' of checkpoint '", dir_, "' is a part of the fused '",
                part->source, "' and cannot be read in place (--link file streams experts stored apart: ",
                "convert the checkpoint with `ferry moe quantize`, or use a link that keeps a host copy)");
  }
  FERRY_THROW(FormatError, "tensor '", excerpt(name), "' missing from checkpoint '", dir_, "'");
}

TensorRef Checkpoint::fused_source(const FusedPart& part) const {
  // `name` present with `shape`, of bytes (U8) or of floats as `bytes` says.
  auto check = [&](const std::string& name, const std::vector<std::int64_t>& shape, bool bytes) {
    const TensorRef r = find(name);
    if (!r.file) {
      if (!part.mxfp4 && find(part.blocks_name()).file)
        FERRY_THROW(FormatError, "tensor '", part.blocks_name(), "' in '", dir_, "' holds MXFP4 experts, but ",
                    "config.json has no quantization_config {\"quant_method\": \"mxfp4\"} announcing them");
      FERRY_THROW(FormatError, "tensor '", excerpt(name), "' missing from checkpoint '", dir_, "'",
                  part.mxfp4 && find(part.source).file ? " (config.json's quantization_config mxfp4 announces MXFP4 "
                                                         "experts, but '" + part.source + "' holds floats)"
                                                       : "");
    }
    if (r.info->shape != shape)
      FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", r.file->path(), "' has shape ",
                  shape_string(r.info->shape), ", expected ", shape_string(shape), " from config.json");
    if ((r.info->dtype == DType::kU8) != bytes)
      FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", r.file->path(), "' is ", dtype_name(r.info->dtype),
                  ", expected ", bytes ? "U8 (MXFP4 blocks and scales)" : "F32, F16 or BF16 weights");
    return r;
  };
  if (!part.mxfp4) return check(part.source, part.source_shape, false);
  check(part.scales_name(), part.scales_shape(), true);
  return check(part.blocks_name(), part.source_shape, true);
}

TensorRef Checkpoint::expect(const std::string& name, const std::vector<std::int64_t>& expected_shape) const {
  if (gguf_) {
    if (gguf_->shape(name) != expected_shape)
      FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in GGUF '", dir_, "' has shape ", shape_string(gguf_->shape(name)),
                  ", expected ", shape_string(expected_shape), " from its metadata");
    return {nullptr, nullptr};
  }
  if (const FusedPart* part = part_of(name)) {
    fused_source(*part);
    if (part->shape != expected_shape)
      FERRY_THROW(FormatError, "tensor '", excerpt(name), "' (a part of '", part->source, "') has shape ",
                  shape_string(part->shape), ", expected ", shape_string(expected_shape));
    return {nullptr, nullptr};
  }
  TensorRef r = at(name);
  if (r.info->shape != expected_shape)
    FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", r.file->path(), "' has shape ", shape_string(r.info->shape),
                ", expected ", shape_string(expected_shape), " from config.json");
  if (r.info->dtype == DType::kU8)
    FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", r.file->path(), "' is U8, expected F32, F16 or BF16 weights");
  return r;
}

void Checkpoint::read_f32(const std::string& name, const std::vector<std::int64_t>& expected_shape, float* dst) const {
  TensorRef r = expect(name, expected_shape);
  std::size_t n = 1;
  for (auto d : expected_shape) n *= static_cast<std::size_t>(d);
  const FusedPart* part = gguf_ ? nullptr : part_of(name);
  if (gguf_) {
    gguf_->read_f32(name, dst);
  } else if (part != nullptr && part->mxfp4) {
    std::vector<std::byte> blocks(stored_bytes(quant::QuantType::kMXFP4, expected_shape));
    read_blocks(name, blocks.data());
    quant::dequantize_row(quant::QuantType::kMXFP4, blocks.data(), dst, n);
  } else if (part != nullptr) {
    const TensorRef src = fused_source(*part);
    read_fused_part(*part, src.info->dtype, src.file->data(*src.info), dst);
  } else {
    convert_to_f32(r.info->dtype, r.file->data(*r.info), dst, n);
  }
  require_finite(dst, n, name, gguf_ || !r.file ? dir_ : r.file->path());
}

std::optional<quant::QuantType> Checkpoint::stored_blocks(const std::string& name) const {
  if (gguf_) return gguf_->stored_type(name);
  const FusedPart* part = part_of(name);
  if (part != nullptr && part->mxfp4) return quant::QuantType::kMXFP4;
  return std::nullopt;
}

void Checkpoint::read_blocks(const std::string& name, std::byte* dst, const std::string& what) const {
  const std::optional<quant::QuantType> type = stored_blocks(name);
  FERRY_REQUIRE(type.has_value(), "tensor '", excerpt(name), "' of '", dir_, "' is stored in floats, not in blocks");
  std::string holder;  // the file's tensor holding it
  std::size_t bytes = 0;
  if (gguf_) {
    gguf_->read_blocks(name, dst);
    holder = gguf_->gguf_name(name);
    bytes = stored_bytes(*type, gguf_->shape(name));
  } else {
    const FusedPart& part = *part_of(name);
    const TensorRef blocks = fused_source(part);
    const TensorRef scales = find(part.scales_name());
    read_mxfp4_part(part, blocks.file->data(*blocks.info), scales.file->data(*scales.info), dst);
    holder = part.scales_name();
    bytes = stored_bytes(*type, part.shape);
  }
  require_finite_blocks(*type, dst, bytes, what.empty() ? name : holder, dir_, what);
}

void require_finite(const float* v, std::size_t n, const std::string& name, const std::string& where, std::size_t first) {
  // A NaN or Inf weight turns every later activation into garbage text: refused at load. One
  // branch-free pass (all exponent bits set = Inf or NaN) that the compiler vectorises.
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, v + i, 4);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (bad) {
    std::size_t i = 0;
    while (std::isfinite(v[i])) ++i;
    FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", where, "' holds ", v[i], " at element ", first + i,
                ": weights must be finite");
  }
}

}  // namespace ferry::moe
