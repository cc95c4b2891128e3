// Length-prefixed records (compress/payload_records.h): what is packed unpacks to the same
// payloads, and a message cut short, with a length past its end or with bytes to spare is a
// FormatError naming the message, never a read past its end.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/payload_records.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

std::vector<std::byte> bytes(std::size_t n, int seed) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>((seed * 31 + i * 7) & 0xff);
  return b;
}

std::string error_of(std::span<const std::byte> message, std::size_t count) {
  try {
    unpack_records(message, count, "message of worker 3");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(PayloadRecords, UnpackGivesBackWhatWasPacked) {
  for (const std::vector<std::size_t>& sizes :
       std::vector<std::vector<std::size_t>>{{}, {0}, {1}, {7, 0, 13}, {8, 8, 8, 8}, {1000, 3}}) {
    std::vector<std::vector<std::byte>> payloads;
    for (std::size_t i = 0; i < sizes.size(); ++i) payloads.push_back(bytes(sizes[i], static_cast<int>(i)));
    std::vector<std::span<const std::byte>> spans(payloads.begin(), payloads.end());
    const std::vector<std::byte> message = pack_records(spans);
    std::vector<std::byte> appended;
    for (const auto& p : payloads) append_record(appended, p);
    EXPECT_EQ(message, appended);
    std::size_t total = 0;
    for (auto n : sizes) total += 8 + n;
    EXPECT_EQ(message.size(), total);
    const auto records = unpack_records(message, sizes.size(), "message");
    ASSERT_EQ(records.size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i)
      EXPECT_EQ(std::vector<std::byte>(records[i].begin(), records[i].end()), payloads[i]) << i;
  }
}

TEST(PayloadRecords, EveryTruncationIsAFormatErrorNamingTheMessage) {
  const std::vector<std::byte> a = bytes(5, 1), b = bytes(11, 2);
  const std::vector<std::span<const std::byte>> spans = {a, b};
  const std::vector<std::byte> message = pack_records(spans);
  for (std::size_t cut = 0; cut < message.size(); ++cut) {
    const std::string e = error_of(std::span(message).first(cut), 2);
    EXPECT_NE(e.find("message of worker 3: "), std::string::npos) << cut << ": " << e;
    EXPECT_NE(e.find("runs past the end (" + std::to_string(cut) + " bytes)"), std::string::npos) << cut << ": " << e;
  }
  EXPECT_EQ(error_of(std::span(message).first(message.size() - 1), 2),
            "message of worker 3: record 1 of 2 (11 bytes at byte 21) runs past the end (31 bytes)");
  EXPECT_EQ(error_of(std::span(message).first(20), 2),
            "message of worker 3: the length of record 1 of 2 at byte 13 runs past the end (20 bytes): truncated message");
}

TEST(PayloadRecords, ALengthLargerThanTheMessageIsAFormatError) {
  const std::vector<std::byte> a = bytes(4, 1);
  const std::vector<std::span<const std::byte>> spans = {a};
  std::vector<std::byte> message = pack_records(spans);
  for (std::uint64_t len : {std::uint64_t{5}, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    std::memcpy(message.data(), &len, sizeof len);
    EXPECT_EQ(error_of(message, 1), "message of worker 3: record 0 of 1 (" + std::to_string(len) +
                                        " bytes at byte 8) runs past the end (12 bytes)");
  }
}

TEST(PayloadRecords, BytesAfterTheLastRecordAreAFormatError) {
  const std::vector<std::byte> a = bytes(4, 1), b = bytes(2, 2);
  const std::vector<std::span<const std::byte>> spans = {a, b};
  const std::vector<std::byte> message = pack_records(spans);
  EXPECT_EQ(error_of(message, 1), "message of worker 3: 10 bytes after the last of its 1 records");
  EXPECT_EQ(error_of(message, 3),
            "message of worker 3: the length of record 2 of 3 at byte 22 runs past the end (22 bytes): truncated message");
}

TEST(CodecEntry, OnlyNoneIsTheIdentity) {
  for (const auto& name : codec_names()) EXPECT_EQ(codec_entry(name).identity, name == "none") << name;
  EXPECT_TRUE(codec_entry("none:ef=1").identity);
  EXPECT_FALSE(codec_entry("twobit:threshold=0.5").identity);
  EXPECT_THROW(codec_entry("fourbit"), InvalidArgument);
}

}  // namespace
}  // namespace ferry::compress
