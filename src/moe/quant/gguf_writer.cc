#include "moe/quant/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/atomic_write.h"
#include "core/error.h"

namespace ferry::moe::quant {

GgufWriter::GgufWriter(std::uint64_t alignment) : alignment_(alignment) {
  FERRY_REQUIRE(alignment > 0 && (alignment & (alignment - 1)) == 0, "GGUF alignment ", alignment,
                " is not a power of two");
  if (alignment != 32) add_u32("general.alignment", static_cast<std::uint32_t>(alignment));
}

template <typename T>
void GgufWriter::put(std::vector<std::byte>& out, T value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

void GgufWriter::put_string(std::vector<std::byte>& out, const std::string& s) {
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

// One scalar of `type` from the fields of `v` that GgufFile fills for it (numbers of an array
// come as doubles in v.f or v.i, see add()).
void GgufWriter::put_scalar(GgufType type, const GgufValue& v) {
  switch (type) {
    case GgufType::kU8: return put(kv_, static_cast<std::uint8_t>(v.i));
    case GgufType::kI8: return put(kv_, static_cast<std::int8_t>(v.i));
    case GgufType::kU16: return put(kv_, static_cast<std::uint16_t>(v.i));
    case GgufType::kI16: return put(kv_, static_cast<std::int16_t>(v.i));
    case GgufType::kU32: return put(kv_, static_cast<std::uint32_t>(v.i));
    case GgufType::kI32: return put(kv_, static_cast<std::int32_t>(v.i));
    case GgufType::kU64: return put(kv_, static_cast<std::uint64_t>(v.i));
    case GgufType::kI64: return put(kv_, static_cast<std::int64_t>(v.i));
    case GgufType::kF32: return put(kv_, static_cast<float>(v.f));
    case GgufType::kF64: return put(kv_, v.f);
    case GgufType::kBool: return put<std::uint8_t>(kv_, v.b ? 1 : 0);
    case GgufType::kString: return put_string(kv_, v.s);
    case GgufType::kArray: break;
  }
  FERRY_THROW(InvalidArgument, "GGUF value of type ", gguf_type_name(type), " cannot be written as a scalar");
}

void GgufWriter::add(const std::string& k, const GgufValue& v) {
  if (v.type != GgufType::kArray) {
    key(k, v.type);
    put_scalar(v.type, v);
    return;
  }
  FERRY_REQUIRE(v.element_type != GgufType::kArray, "GGUF key '", k, "': arrays of arrays are not written");
  key(k, GgufType::kArray);
  put<std::uint32_t>(kv_, static_cast<std::uint32_t>(v.element_type));
  put<std::uint64_t>(kv_, v.array_size());
  if (v.element_type == GgufType::kString) {
    for (const auto& s : v.strings) put_string(kv_, s);
    return;
  }
  GgufValue element;
  for (double x : v.numbers) {
    element.i = static_cast<std::int64_t>(x);
    element.f = x;
    element.b = x != 0;
    put_scalar(v.element_type, element);
  }
}

void GgufWriter::check_tensor(const std::string& name, const std::vector<std::uint64_t>& dims, QuantType type) const {
  FERRY_REQUIRE(!dims.empty() && dims.size() <= 4, "tensor '", name, "' has ", dims.size(), " dimensions (1 to 4)");
  FERRY_REQUIRE(std::all_of(dims.begin(), dims.end(), [](std::uint64_t d) { return d > 0; }), "tensor '", name,
                "' has a dimension of size 0");
  FERRY_REQUIRE(quant_row_fits(type, dims[0]), "tensor '", name, "' has rows of ", dims[0], " weights, not whole ",
                quant_name(type), " blocks of ", quant_traits(type).block_elems);
  for (const auto& t : tensors_) FERRY_REQUIRE(t.name != name, "tensor '", name, "' added twice");
}

namespace {
std::uint64_t tensor_bytes(const std::vector<std::uint64_t>& dims, QuantType type) {
  std::uint64_t rows = 1;
  for (std::size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
  return quant_row_bytes(type, dims[0]) * rows;
}
}  // namespace

void GgufWriter::add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type,
                            std::vector<std::byte> bytes) {
  check_tensor(name, dims, type);
  const std::uint64_t expected = tensor_bytes(dims, type);
  FERRY_REQUIRE(bytes.size() == expected, "tensor '", name, "' has ", bytes.size(), " bytes, its shape in ",
                quant_name(type), " needs ", expected);
  tensors_.push_back({name, std::move(dims), type, expected, std::move(bytes), {}});
}

void GgufWriter::add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type, TensorFill fill) {
  check_tensor(name, dims, type);
  FERRY_REQUIRE(static_cast<bool>(fill), "tensor '", name, "' has no fill");
  const std::uint64_t bytes = tensor_bytes(dims, type);
  tensors_.push_back({name, std::move(dims), type, bytes, {}, std::move(fill)});
}

std::vector<std::byte> GgufWriter::header() const {
  std::vector<std::byte> out;
  const char magic[4] = {'G', 'G', 'U', 'F'};
  out.insert(out.end(), reinterpret_cast<const std::byte*>(magic), reinterpret_cast<const std::byte*>(magic) + 4);
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, n_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.dims.size()));
    for (auto d : t.dims) put<std::uint64_t>(out, d);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
    put<std::uint64_t>(out, offset);
    offset = aligned(offset + t.bytes);
  }
  if (!tensors_.empty()) out.resize(aligned(out.size()), std::byte{0});  // the data section starts aligned
  return out;
}

std::uint64_t GgufWriter::file_bytes() const {
  std::uint64_t n = header().size();
  for (std::size_t k = 0; k < tensors_.size(); ++k)
    n += k + 1 < tensors_.size() ? aligned(tensors_[k].bytes) : tensors_[k].bytes;
  return n;
}

void GgufWriter::emit(const std::function<void(std::span<const std::byte>)>& sink) const {
  sink(header());
  const std::vector<std::byte> zeros(alignment_, std::byte{0});
  std::vector<std::byte> buffer;  // one streamed tensor at a time
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    if (t.fill) {
      buffer.assign(t.bytes, std::byte{0});
      t.fill(std::span<std::byte>(buffer));
      sink(buffer);
    } else {
      sink(t.data);
    }
    // Padding between tensors; none after the last one (as ggml's gguf writer, and the
    // reader's bounds allow either).
    if (k + 1 < tensors_.size()) sink(std::span<const std::byte>(zeros.data(), aligned(t.bytes) - t.bytes));
  }
}

std::vector<std::byte> GgufWriter::serialize() const {
  std::vector<std::byte> out;
  emit([&](std::span<const std::byte> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  AtomicFileWriter file(path);
  emit([&](std::span<const std::byte> bytes) { file.append(bytes); });
  file.commit();
}

}  // namespace ferry::moe::quant
