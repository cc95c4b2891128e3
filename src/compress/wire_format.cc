#include "compress/wire_format.h"

#include <string>

#include "core/error.h"

namespace ferry::compress {

const char* codec_id_name(CodecId id) {
  switch (id) {
    case CodecId::kNone: return "none";
    case CodecId::kFp16: return "fp16";
    case CodecId::kTwobit: return "twobit";
    case CodecId::kOnebit: return "onebit";
    case CodecId::kQsgd: return "qsgd";
    case CodecId::kTerngrad: return "terngrad";
    case CodecId::kTopk: return "topk";
    case CodecId::kRandomk: return "randomk";
    case CodecId::kDgc: return "dgc";
    case CodecId::kPowersgd: return "powersgd";
  }
  return "unknown";
}

void write_header(std::vector<std::byte>& out, std::size_t total_bytes, const PayloadHeader& h) {
  out.resize(total_bytes);
  std::byte* p = out.data();
  p[0] = std::byte{kWireMagic};
  p[1] = static_cast<std::byte>(h.codec);
  p[2] = std::byte{kWireVersion};
  p[3] = std::byte{h.flags};
  store_le<std::uint32_t>(p + 4, h.aux);
  store_le<std::uint64_t>(p + 8, h.numel);
}

PayloadHeader read_header(std::span<const std::byte> payload, CodecId expected,
                          std::size_t expected_numel, std::uint8_t max_flags) {
  const char* name = codec_id_name(expected);
  if (payload.size() < kHeaderBytes)
    FERRY_THROW(FormatError, name, " payload: ", payload.size(), " bytes, shorter than the ",
                kHeaderBytes, "-byte header");
  const std::byte* p = payload.data();
  if (std::to_integer<std::uint8_t>(p[0]) != kWireMagic)
    FERRY_THROW(FormatError, name, " payload: bad magic byte 0x", std::hex,
                std::to_integer<int>(p[0]), " (expected 0x46)");
  auto id = std::to_integer<std::uint8_t>(p[1]);
  if (id != static_cast<std::uint8_t>(expected))
    FERRY_THROW(FormatError, name, " payload: codec id ", int(id), " (",
                codec_id_name(static_cast<CodecId>(id)), "), expected ",
                int(static_cast<std::uint8_t>(expected)));
  auto version = std::to_integer<std::uint8_t>(p[2]);
  if (version != kWireVersion)
    FERRY_THROW(FormatError, name, " payload: format version ", int(version), ", expected ",
                int(kWireVersion));
  PayloadHeader h;
  h.codec = expected;
  h.flags = std::to_integer<std::uint8_t>(p[3]);
  if (h.flags > max_flags)
    FERRY_THROW(FormatError, name, " payload: flags byte ", int(h.flags), ", this codec defines ",
                max_flags == 0 ? std::string("none") : "at most " + std::to_string(int(max_flags)));
  h.aux = load_le<std::uint32_t>(p + 4);
  h.numel = load_le<std::uint64_t>(p + 8);
  if (h.numel != expected_numel)
    FERRY_THROW(FormatError, name, " payload: header says ", h.numel,
                " elements, the tensor has ", expected_numel);
  return h;
}

void check_payload_size(std::span<const std::byte> payload, std::size_t expected_bytes,
                        CodecId codec) {
  if (payload.size() != expected_bytes)
    FERRY_THROW(FormatError, codec_id_name(codec), " payload: ", payload.size(),
                " bytes, expected ", expected_bytes);
}

}  // namespace ferry::compress
