#include "moe/quant/gguf_writer.h"

#include <cstring>

#include "core/atomic_write.h"
#include "core/error.h"

namespace ferry::moe::quant {

GgufWriter::GgufWriter(std::uint64_t alignment) : alignment_(alignment) {
  FERRY_REQUIRE(alignment > 0 && (alignment & (alignment - 1)) == 0, "GGUF alignment ", alignment,
                " is not a power of two");
  if (alignment != 32) add_u32("general.alignment", static_cast<std::uint32_t>(alignment));
}

template <typename T>
void GgufWriter::put(std::vector<std::byte>& out, T value) const {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

void GgufWriter::put_string(std::vector<std::byte>& out, const std::string& s) const {
  put<std::uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void GgufWriter::key(const std::string& key, GgufType type) {
  put_string(kv_, key);
  put<std::uint32_t>(kv_, static_cast<std::uint32_t>(type));
  ++n_kv_;
}

void GgufWriter::add_u32(const std::string& k, std::uint32_t v) { key(k, GgufType::kU32), put(kv_, v); }
void GgufWriter::add_i32(const std::string& k, std::int32_t v) { key(k, GgufType::kI32), put(kv_, v); }
void GgufWriter::add_u64(const std::string& k, std::uint64_t v) { key(k, GgufType::kU64), put(kv_, v); }
void GgufWriter::add_f32(const std::string& k, float v) { key(k, GgufType::kF32), put(kv_, v); }
void GgufWriter::add_bool(const std::string& k, bool v) { key(k, GgufType::kBool), put<std::uint8_t>(kv_, v ? 1 : 0); }
void GgufWriter::add_string(const std::string& k, const std::string& v) { key(k, GgufType::kString), put_string(kv_, v); }

void GgufWriter::add_strings(const std::string& k, const std::vector<std::string>& values) {
  key(k, GgufType::kArray);
  put<std::uint32_t>(kv_, static_cast<std::uint32_t>(GgufType::kString));
  put<std::uint64_t>(kv_, values.size());
  for (const auto& s : values) put_string(kv_, s);
}

void GgufWriter::add_f32s(const std::string& k, const std::vector<float>& values) {
  key(k, GgufType::kArray);
  put<std::uint32_t>(kv_, static_cast<std::uint32_t>(GgufType::kF32));
  put<std::uint64_t>(kv_, values.size());
  for (float v : values) put(kv_, v);
}

void GgufWriter::add_i32s(const std::string& k, const std::vector<std::int32_t>& values) {
  key(k, GgufType::kArray);
  put<std::uint32_t>(kv_, static_cast<std::uint32_t>(GgufType::kI32));
  put<std::uint64_t>(kv_, values.size());
  for (auto v : values) put(kv_, v);
}

void GgufWriter::add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type,
                            std::vector<std::byte> bytes) {
  FERRY_REQUIRE(!dims.empty() && dims.size() <= 4, "tensor '", name, "' has ", dims.size(), " dimensions (1 to 4)");
  std::uint64_t rows = 1;
  for (std::size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
  const std::uint64_t expected = quant_row_bytes(type, dims[0]) * rows;
  FERRY_REQUIRE(bytes.size() == expected, "tensor '", name, "' has ", bytes.size(), " bytes, its shape in ",
                quant_name(type), " needs ", expected);
  tensors_.push_back({name, std::move(dims), type, std::move(bytes)});
}

std::vector<std::byte> GgufWriter::serialize() const {
  std::vector<std::byte> out;
  const char magic[4] = {'G', 'G', 'U', 'F'};
  out.insert(out.end(), reinterpret_cast<const std::byte*>(magic), reinterpret_cast<const std::byte*>(magic) + 4);
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, n_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  auto aligned = [&](std::uint64_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.dims.size()));
    for (auto d : t.dims) put<std::uint64_t>(out, d);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
    put<std::uint64_t>(out, offset);
    offset = aligned(offset + t.bytes.size());
  }
  for (const auto& t : tensors_) {
    out.resize(aligned(out.size()), std::byte{0});
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  }
  return out;
}

void GgufWriter::write(const std::string& path) const { write_file_atomic(path, serialize()); }

}  // namespace ferry::moe::quant
