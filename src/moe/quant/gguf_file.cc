#include "moe/quant/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/excerpt.h"

namespace ferry::moe::quant {
namespace {

constexpr std::uint64_t kMaxDims = 4;       // GGML_MAX_DIMS
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 50;  // far above any model, far below overflow

// Reads little-endian fields from the file with every length checked against what is left.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return bytes_.size() - pos_; }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(std::string_view what) {
    const auto n = read<std::uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void need(std::uint64_t n, std::string_view what) const {
    if (n > left())
      FERRY_THROW(FormatError, name_, ": truncated GGUF file: ", what, " needs ", n, " bytes at offset ", pos_,
                  ", the file has ", left(), " left");
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& name_;
  std::uint64_t pos_ = 0;
};

std::size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    case GgufType::kString: return 8;  // at least its length field
    case GgufType::kArray: return 12;  // at least its element type and count
  }
  return 0;
}

bool known_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(GgufType::kF64); }

// Reads one scalar of type `t` into `v` (i, f, b or s).
void read_scalar(Reader& r, GgufType t, GgufValue& v, const std::string& what, const std::string& name) {
  switch (t) {
    case GgufType::kU8: v.i = r.read<std::uint8_t>(what); return;
    case GgufType::kI8: v.i = r.read<std::int8_t>(what); return;
    case GgufType::kU16: v.i = r.read<std::uint16_t>(what); return;
    case GgufType::kI16: v.i = r.read<std::int16_t>(what); return;
    case GgufType::kU32: v.i = r.read<std::uint32_t>(what); return;
    case GgufType::kI32: v.i = r.read<std::int32_t>(what); return;
    case GgufType::kI64: v.i = r.read<std::int64_t>(what); return;
    case GgufType::kU64: {
      const auto u = r.read<std::uint64_t>(what);
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        FERRY_THROW(FormatError, name, ": ", what, " is ", u, ", larger than ferry accepts (2^63 - 1)");
      v.i = static_cast<std::int64_t>(u);
      return;
    }
    case GgufType::kF32: v.f = r.read<float>(what); return;
    case GgufType::kF64: v.f = r.read<double>(what); return;
    case GgufType::kBool: {
      const auto b = r.read<std::uint8_t>(what);
      if (b > 1) FERRY_THROW(FormatError, name, ": ", what, " is a bool of value ", int(b), " (expected 0 or 1)");
      v.b = b != 0;
      return;
    }
    case GgufType::kString: v.s = r.read_string(what); return;
    case GgufType::kArray: break;
  }
  FERRY_THROW(InternalError, "read_scalar on an array");
}

GgufValue read_value(Reader& r, const std::string& key, const std::string& name) {
  const std::string what = "metadata key '" + excerpt(key) + "'";
  GgufValue v;
  const auto type = r.read<std::uint32_t>(what);
  if (!known_type(type)) FERRY_THROW(FormatError, name, ": ", what, " has unknown value type ", type);
  v.type = static_cast<GgufType>(type);
  if (v.type != GgufType::kArray) {
    read_scalar(r, v.type, v, what, name);
    return v;
  }
  const auto et = r.read<std::uint32_t>(what);
  if (!known_type(et)) FERRY_THROW(FormatError, name, ": ", what, " is an array of unknown type ", et);
  v.element_type = static_cast<GgufType>(et);
  if (v.element_type == GgufType::kArray)
    FERRY_THROW(FormatError, name, ": ", what, " is an array of arrays, which GGUF models do not use");
  const auto n = r.read<std::uint64_t>(what);
  if (n > r.left() / scalar_size(v.element_type))
    FERRY_THROW(FormatError, name, ": ", what, " claims ", n, " elements, more than the ", r.left(),
                " bytes left in the file can hold");
  GgufValue element;
  element.type = v.element_type;
  if (v.element_type == GgufType::kString) {
    v.strings.reserve(n);
    for (std::uint64_t k = 0; k < n; ++k) v.strings.push_back(r.read_string(what));
  } else {
    v.numbers.reserve(n);
    for (std::uint64_t k = 0; k < n; ++k) {
      read_scalar(r, v.element_type, element, what, name);
      v.numbers.push_back(element.is_integer() ? static_cast<double>(element.i)
                          : v.element_type == GgufType::kBool ? (element.b ? 1.0 : 0.0)
                                                              : element.f);
    }
  }
  return v;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto t = static_cast<std::uint32_t>(type);
  return t < std::size(names) ? names[t] : "?";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
    case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64: return true;
    default: return false;
  }
}

std::uint64_t GgufTensor::elements() const {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  MappedFile map = MappedFile::open(path);
  std::span<const std::byte> bytes(map.data(), map.size());
  GgufFile f = parse(bytes, path);
  f.map_ = std::move(map);  // the mapping's address does not change when its owner moves
  return f;
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.bytes_ = bytes;
  f.name_ = std::move(name);
  Reader r(bytes, f.name_);
  char magic[4];
  r.need(4, "the magic");
  std::memcpy(magic, bytes.data(), 4);
  if (std::memcmp(magic, "GGUF", 4) != 0) FERRY_THROW(FormatError, f.name_, ": not a GGUF file (no 'GGUF' magic)");
  r.read<std::uint32_t>("the magic");
  f.version_ = r.read<std::uint32_t>("the version");
  if (f.version_ != 2 && f.version_ != 3)
    FERRY_THROW(FormatError, f.name_, ": GGUF version ", f.version_, " (ferry reads versions 2 and 3)");
  const auto n_tensors = r.read<std::uint64_t>("the tensor count");
  const auto n_kv = r.read<std::uint64_t>("the metadata count");
  if (n_kv > r.left() / 12)  // key length + value type at least
    FERRY_THROW(FormatError, f.name_, ": claims ", n_kv, " metadata keys, more than the file can hold");
  for (std::uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.read_string("metadata key " + std::to_string(k));
    GgufValue v = read_value(r, key, f.name_);
    if (!f.metadata_.emplace(key, std::move(v)).second)
      FERRY_THROW(FormatError, f.name_, ": metadata key '", excerpt(key), "' appears twice");
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    if (a->type != GgufType::kU32 || a->i <= 0 || (a->i & (a->i - 1)) != 0)
      FERRY_THROW(FormatError, f.name_, ": metadata key 'general.alignment' must be a u32 power of two");
    f.alignment_ = static_cast<std::uint64_t>(a->i);
  }
  if (n_tensors > r.left() / 24)  // name length, n_dims, type and offset at least
    FERRY_THROW(FormatError, f.name_, ": claims ", n_tensors, " tensors, more than the file can hold");
  std::vector<std::uint64_t> relative(n_tensors);
  for (std::uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = r.read_string("tensor " + std::to_string(k) + "'s name");
    const std::string what = "tensor '" + excerpt(t.name) + "'";
    const auto n_dims = r.read<std::uint32_t>(what);
    if (n_dims < 1 || n_dims > kMaxDims)
      FERRY_THROW(FormatError, f.name_, ": ", what, " has ", n_dims, " dimensions (expected 1 to ", kMaxDims, ")");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = r.read<std::uint64_t>(what);
      if (dim == 0 || dim > kMaxElements || elements > kMaxElements / dim)
        FERRY_THROW(FormatError, f.name_, ": ", what, " has dimension ", d, " of size ", dim,
                    dim == 0 ? " (must be greater than 0)" : " (the tensor would exceed 2^50 elements)");
      elements *= dim;
      t.dims.push_back(dim);
    }
    const auto ggml_type = r.read<std::uint32_t>(what);
    const auto type = quant_type_from_ggml(ggml_type);
    if (!type)
      FERRY_THROW(FormatError, f.name_, ": ", what, " has ggml type ", ggml_type,
                  ", which ferry does not implement (it reads ", quant_stored_type_names(), ")");
    t.type = *type;
    if (!quant_row_fits(t.type, t.dims[0]))
      FERRY_THROW(FormatError, f.name_, ": ", what, " has rows of ", t.dims[0], " weights, not whole ",
                  quant_name(t.type), " blocks of ", quant_traits(t.type).block_elems);
    t.bytes = quant_row_bytes(t.type, t.dims[0]) * (elements / t.dims[0]);
    relative[k] = r.read<std::uint64_t>(what);
    if (relative[k] % f.alignment_ != 0)
      FERRY_THROW(FormatError, f.name_, ": ", what, " starts at data offset ", relative[k],
                  ", not a multiple of the alignment ", f.alignment_);
    if (!f.tensor_index_.emplace(t.name, k).second)
      FERRY_THROW(FormatError, f.name_, ": tensor '", excerpt(t.name), "' appears twice");
    f.tensors_.push_back(std::move(t));
  }
  f.data_offset_ = (r.pos() + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  const std::uint64_t data_bytes = bytes.size() > f.data_offset_ ? bytes.size() - f.data_offset_ : 0;
  std::vector<std::size_t> order(n_tensors);
  for (std::size_t k = 0; k < order.size(); ++k) {
    order[k] = k;
    auto& t = f.tensors_[k];
    if (relative[k] > data_bytes || t.bytes > data_bytes - relative[k])
      FERRY_THROW(FormatError, f.name_, ": tensor '", excerpt(t.name), "' (", t.bytes, " bytes at data offset ", relative[k],
                  ") runs past the end of the file (", data_bytes, " bytes of data) for its ", t.rows(), " rows of ",
                  t.row_length(), " ", quant_name(t.type), " weights");
    t.offset = f.data_offset_ + relative[k];
  }
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return f.tensors_[a].offset < f.tensors_[b].offset; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto& prev = f.tensors_[order[k - 1]];
    const auto& cur = f.tensors_[order[k]];
    if (prev.offset + prev.bytes > cur.offset)
      FERRY_THROW(FormatError, f.name_, ": tensor '", excerpt(cur.name), "' overlaps tensor '", excerpt(prev.name), "'");
  }
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue& GgufFile::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) FERRY_THROW(FormatError, name_, ": metadata key '", key, "' is missing");
  return *v;
}

std::int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = get(key);
  if (!v.is_integer())
    FERRY_THROW(FormatError, name_, ": metadata key '", key, "' is a ", gguf_type_name(v.type), ", expected an integer");
  return v.i;
}

double GgufFile::get_number(std::string_view key) const {
  const GgufValue& v = get(key);
  if (!v.is_number())
    FERRY_THROW(FormatError, name_, ": metadata key '", key, "' is a ", gguf_type_name(v.type), ", expected a number");
  return v.is_integer() ? static_cast<double>(v.i) : v.f;
}

const std::string& GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = get(key);
  if (v.type != GgufType::kString)
    FERRY_THROW(FormatError, name_, ": metadata key '", key, "' is a ", gguf_type_name(v.type), ", expected a string");
  return v.s;
}

std::span<const std::byte> GgufFile::data(const GgufTensor& tensor) const {
  return bytes_.subspan(tensor.offset, tensor.bytes);
}

}  // namespace ferry::moe::quant
