#include "compress/payload_records.h"

#include <cstdint>
#include <cstring>

#include "core/error.h"

namespace ferry::compress {

void append_record(std::vector<std::byte>& message, std::span<const std::byte> payload) {
  const std::uint64_t len = payload.size();
  const std::size_t at = message.size();
  message.resize(at + sizeof len + payload.size());
  std::memcpy(message.data() + at, &len, sizeof len);
  if (!payload.empty()) std::memcpy(message.data() + at + sizeof len, payload.data(), payload.size());
}

std::vector<std::byte> pack_records(std::span<const std::span<const std::byte>> payloads) {
  std::size_t total = 0;
  for (const auto& p : payloads) total += sizeof(std::uint64_t) + p.size();
  std::vector<std::byte> message;
  message.reserve(total);
  for (const auto& p : payloads) append_record(message, p);
  return message;
}

std::vector<std::span<const std::byte>> unpack_records(std::span<const std::byte> message, std::size_t count,
                                                       std::string_view what) {
  std::vector<std::span<const std::byte>> records;
  records.reserve(count);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t len = 0;
    if (message.size() - pos < sizeof len)
      FERRY_THROW(FormatError, what, ": the length of record ", i, " of ", count, " at byte ", pos,
                  " runs past the end (", message.size(), " bytes): truncated message");
    std::memcpy(&len, message.data() + pos, sizeof len);
    pos += sizeof len;
    if (message.size() - pos < len)
      FERRY_THROW(FormatError, what, ": record ", i, " of ", count, " (", len, " bytes at byte ", pos,
                  ") runs past the end (", message.size(), " bytes)");
    records.push_back(message.subspan(pos, static_cast<std::size_t>(len)));
    pos += static_cast<std::size_t>(len);
  }
  if (pos != message.size())
    FERRY_THROW(FormatError, what, ": ", message.size() - pos, " bytes after the last of its ", count, " records");
  return records;
}

}  // namespace ferry::compress
