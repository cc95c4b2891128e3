#include "core/json_depth.h"
#include "moe/model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"

namespace ferry::moe {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
  return v;
}

}  // namespace

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsHeader parse_safetensors_header(const std::byte* data, std::uint64_t size, const std::string& path) {
  SafetensorsHeader h;
  if (size < 8)
    FERRY_THROW(FormatError, "safetensors '", path, "': truncated: ", size, " bytes, need at least the 8-byte header length");
  const std::uint64_t header_len = read_le64(data);
  if (header_len > size - 8)
    FERRY_THROW(FormatError, "safetensors '", path, "': header length ", header_len, " runs past end of file (",
                size, " bytes)");
  if (header_len > kMaxHeaderBytes)
    FERRY_THROW(FormatError, "safetensors '", path, "': header length ", header_len, " exceeds the ", kMaxHeaderBytes,
                "-byte limit");
  h.data_offset = 8 + header_len;
  const std::uint64_t data_size = size - h.data_offset;
  const char* header = reinterpret_cast<const char*>(data + 8);
  require_json_depth(std::string_view(header, header_len), kMaxJsonDepthFile, "safetensors '" + path + "': header");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header, header + header_len);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "safetensors '", path, "': header is not valid JSON: ", e.what());
  }
  if (!j.is_object()) FERRY_THROW(FormatError, "safetensors '", path, "': header must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) FERRY_THROW(FormatError, "safetensors '", path, "': __metadata__ must be an object");
      for (auto m = v.begin(); m != v.end(); ++m)
        if (m.value().is_string()) h.metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    auto fail = [&](const std::string& what) {
      FERRY_THROW(FormatError, "safetensors '", path, "': tensor '", excerpt(name), "': ", what);
    };
    if (!v.is_object()) fail("entry must be an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) fail("missing string 'dtype'");
    if (!v.contains("shape") || !v["shape"].is_array()) fail("missing array 'shape'");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      fail("'data_offsets' must be [begin, end]");
    TensorInfo info;
    info.name = name;
    const std::string dt = v["dtype"].get<std::string>();
    std::optional<DType> dtype;
    if (dt == "F32" || dt == "F16" || dt == "BF16")
      dtype = parse_dtype(dt);
    else if (dt == "U8")
      dtype = DType::kU8;
    if (!dtype) fail("unknown dtype '" + dt + "' (supported: F32, F16, BF16, U8)");
    info.dtype = *dtype;
    // The element count is accumulated with overflow checks: a shape whose product wraps
    // around could otherwise match a small span and later be read far past it.
    std::uint64_t expect = dtype_size(info.dtype);
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) fail("shape entries must be integers of at least 0");
      info.shape.push_back(d.get<std::int64_t>());
      if (__builtin_mul_overflow(expect, static_cast<std::uint64_t>(info.shape.back()), &expect) ||
          expect > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail("shape " + shape_string(info.shape) + " has more elements than any file can hold");
    }
    for (const auto& o : v["data_offsets"])
      if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<std::int64_t>() >= 0))
        fail("data_offsets must be integers of at least 0");
    info.begin = v["data_offsets"][0].get<std::uint64_t>();
    info.end = v["data_offsets"][1].get<std::uint64_t>();
    if (info.end < info.begin) fail("data_offsets end " + std::to_string(info.end) + " < begin " + std::to_string(info.begin));
    if (expect != info.nbytes())
      fail("shape " + shape_string(info.shape) + " x " + dtype_name(info.dtype) + " = " + std::to_string(expect) +
           " bytes but its span is " + std::to_string(info.nbytes()) + " bytes");
    if (info.end > data_size)
      fail("span [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + ") runs past the end of the data (" +
           std::to_string(data_size) + " bytes; file truncated?)");
    h.tensors.push_back(std::move(info));
  }
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : h.tensors)
    if (t.nbytes() > 0) sorted.push_back(&t);  // empty tensors overlap nothing
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->begin < sorted[i - 1]->end)
      FERRY_THROW(FormatError, "safetensors '", path, "': tensors '", excerpt(sorted[i - 1]->name), "' [", sorted[i - 1]->begin,
                  ", ", sorted[i - 1]->end, ") and '", sorted[i]->name, "' [", sorted[i]->begin, ", ", sorted[i]->end,
                  ") overlap");
  return h;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  SafetensorsHeader h = parse_safetensors_header(f.file_.data(), f.file_.size(), path);
  f.data_offset_ = h.data_offset;
  f.tensors_ = std::move(h.tensors);
  f.metadata_ = std::move(h.metadata);
  for (std::size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  return f;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::at(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) FERRY_THROW(FormatError, "tensor '", excerpt(name), "' missing from '", path(), "'");
  return *t;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const void* data,
                            std::size_t nbytes) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  FERRY_CHECK(static_cast<std::size_t>(n) * dtype_size(dtype) == nbytes, "tensor ", name, " size mismatch");
  while (data_.size() % 8) data_.push_back(std::byte{0});
  Entry e{name, dtype, std::move(shape), data_.size(), data_.size() + nbytes};
  data_.resize(e.end);
  if (nbytes) std::memcpy(data_.data() + e.begin, data, nbytes);
  entries_.push_back(std::move(e));
}

void SafetensorsWriter::add_f32(const std::string& name, DType dtype, std::vector<std::int64_t> shape,
                                const float* values) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<std::byte> buf(static_cast<std::size_t>(n) * dtype_size(dtype));
  convert_from_f32(dtype, values, buf.data(), static_cast<std::size_t>(n));
  add(name, dtype, std::move(shape), buf.data(), buf.size());
}

std::vector<std::string> SafetensorsWriter::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (const auto& e : entries_)
    header[e.name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  std::string text = header.dump();
  while ((text.size() + 8) % 8) text.push_back(' ');
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) FERRY_THROW(IoError, "cannot write '", path, "'");
  std::uint64_t n = text.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(reinterpret_cast<const char*>(data_.data()), static_cast<std::streamsize>(data_.size()));
  if (!out) FERRY_THROW(IoError, "failed writing '", path, "'");
}

}  // namespace ferry::moe
