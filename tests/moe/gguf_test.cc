// GGUF files (moe/quant): what the writer writes the reader reads back, and every way a file can
// be broken gives one FormatError naming the file and the key or tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/gguf_writer.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant {
namespace {

std::vector<std::byte> q8_rows(std::size_t rows, std::size_t n) {
  std::vector<float> x(rows * n);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  std::vector<std::byte> out(quant_matrix_bytes(QuantType::kQ8_0, rows, n));
  quantize_row(QuantType::kQ8_0, x.data(), out.data(), x.size());
  return out;
}

GgufWriter small_writer() {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_f32("llama.rope.freq_base", 1e6f);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_strings("tokenizer.ggml.tokens", {"<s>", "a", "bc"});
  w.add_f32s("tokenizer.ggml.scores", {0.0f, -1.5f, -2.0f});
  w.add_i32s("tokenizer.ggml.token_type", {3, 1, 1});
  w.add_tensor("a.weight", {64, 3}, QuantType::kQ8_0, q8_rows(3, 64));
  std::vector<std::byte> f32(5 * 4);
  for (int i = 0; i < 5; ++i) {
    const float v = i * 0.5f;
    std::memcpy(f32.data() + 4 * i, &v, 4);
  }
  w.add_tensor("b.bias", {5}, QuantType::kF32, f32);
  return w;
}

TEST(Gguf, WhatIsWrittenReadsBack) {
  const auto bytes = small_writer().serialize();
  const auto f = GgufFile::parse(bytes, "small.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), 2);
  EXPECT_EQ(f.get_number("llama.rope.freq_base"), 1e6);
  EXPECT_TRUE(f.get("tokenizer.ggml.add_bos_token").b);
  EXPECT_EQ(f.get("tokenizer.ggml.tokens").strings, (std::vector<std::string>{"<s>", "a", "bc"}));
  EXPECT_EQ(f.get("tokenizer.ggml.scores").numbers, (std::vector<double>{0.0, -1.5, -2.0}));
  EXPECT_EQ(f.get("tokenizer.ggml.token_type").numbers, (std::vector<double>{3, 1, 1}));
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor* a = f.find_tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dims, (std::vector<std::uint64_t>{64, 3}));
  EXPECT_EQ(a->type, QuantType::kQ8_0);
  EXPECT_EQ(a->rows(), 3u);
  EXPECT_EQ(a->offset % 32, 0u);
  const auto expected = q8_rows(3, 64);
  ASSERT_EQ(f.data(*a).size(), expected.size());
  EXPECT_EQ(std::memcmp(f.data(*a).data(), expected.data(), expected.size()), 0);
  const GgufTensor* b = f.find_tensor("b.bias");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->offset % 32, 0u);
  float v;
  std::memcpy(&v, f.data(*b).data() + 16, 4);
  EXPECT_EQ(v, 2.0f);
  EXPECT_EQ(f.find("no.such.key"), nullptr);
}

TEST(Gguf, OpensFromDiskAndNamesTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferry_gguf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.gguf").string();
  small_writer().write(path);
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f.get_int("llama.block_count"), 2);
  try {
    f.get_int("general.architecture");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": metadata key 'general.architecture' is a string, expected an integer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(GgufFile::open((dir / "absent.gguf").string()), IoError);
  std::filesystem::remove_all(dir);
}

// Every prefix of a valid file is a truncated file: a FormatError, never a crash or a read past
// the end (the asan preset checks the latter).
TEST(Gguf, EveryTruncationIsAFormatError) {
  const auto bytes = small_writer().serialize();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      GgufFile::parse(std::span(bytes.data(), n), "cut.gguf");
      FAIL() << "a prefix of " << n << " of " << bytes.size() << " bytes parsed";
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cut.gguf: ", 0), 0u) << e.what();
    }
  }
}

// Builds a file by hand so that one field can be broken at a time.
struct Raw {
  std::vector<std::byte> b;
  template <typename T>
  Raw& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Raw& str(const std::string& s) {
    put<std::uint64_t>(s.size());
    for (char c : s) b.push_back(static_cast<std::byte>(c));
    return *this;
  }
  Raw& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
    for (char c : std::string("GGUF")) b.push_back(static_cast<std::byte>(c));
    return put<std::uint32_t>(version).put<std::uint64_t>(n_tensors).put<std::uint64_t>(n_kv);
  }
  Raw& tensor(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
    str(name).put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) put(d);
    return put(type).put(offset);
  }
  Raw& pad_and_data(std::size_t data_bytes) {
    b.resize((b.size() + 31) / 32 * 32 + data_bytes, std::byte{0});
    return *this;
  }
};

void expect_format_error(const Raw& raw, const std::string& needle) {
  try {
    GgufFile::parse(raw.b, "bad.gguf");
    FAIL() << "parsed; expected: " << needle;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.gguf: ", 0), 0u) << e.what();
  }
}

TEST(Gguf, BrokenFilesNameWhatIsWrong) {
  constexpr std::uint32_t kF32 = 0, kQ8_0 = 8;
  // Valid baseline: two f32 tensors of 8 floats at offsets 0 and 32.
  Raw ok;
  ok.header(2, 0).tensor("x", {8}, kF32, 0).tensor("y", {8}, kF32, 32).pad_and_data(64);
  EXPECT_NO_THROW(GgufFile::parse(ok.b, "ok.gguf"));

  Raw magic;
  magic.b = ok.b;
  magic.b[0] = std::byte{'X'};
  expect_format_error(magic, "not a GGUF file");
  expect_format_error(Raw().header(0, 0, 1), "GGUF version 1");
  expect_format_error(Raw().header(0, 0, 4), "GGUF version 4");
  // Overlap: y starts inside x.
  expect_format_error(Raw().header(2, 0).tensor("x", {16}, kF32, 0).tensor("y", {8}, kF32, 32).pad_and_data(96),
                      "tensor 'y' overlaps tensor 'x'");
  // Misaligned offset.
  expect_format_error(Raw().header(1, 0).tensor("x", {8}, kF32, 4).pad_and_data(64),
                      "tensor 'x' starts at data offset 4, not a multiple of the alignment 32");
  // Past the end.
  expect_format_error(Raw().header(1, 0).tensor("x", {64}, kF32, 0).pad_and_data(100),
                      "tensor 'x' (256 bytes at data offset 0) runs past the end of the file");
  // Types: Q4_1 (3) is a real ggml type ferry does not implement; 99 is none.
  expect_format_error(Raw().header(1, 0).tensor("x", {32}, 3, 0).pad_and_data(64),
                      "tensor 'x' has ggml type 3, which ferry does not implement");
  expect_format_error(Raw().header(1, 0).tensor("x", {32}, 99, 0).pad_and_data(64), "tensor 'x' has ggml type 99");
  // Rows that are not whole blocks.
  expect_format_error(Raw().header(1, 0).tensor("x", {40}, kQ8_0, 0).pad_and_data(64),
                      "tensor 'x' has rows of 40 weights, not whole Q8_0 blocks of 32");
  // Huge and zero dimensions, too many dimensions.
  expect_format_error(Raw().header(1, 0).tensor("x", {1ull << 40, 1ull << 30}, kF32, 0).pad_and_data(64),
                      "tensor 'x' has dimension 1 of size 1073741824");
  expect_format_error(Raw().header(1, 0).tensor("x", {8, 0}, kF32, 0).pad_and_data(64), "dimension 1 of size 0");
  expect_format_error(Raw().header(1, 0).tensor("x", {1, 1, 1, 1, 1}, kF32, 0).pad_and_data(64), "has 5 dimensions");
  // Duplicates.
  expect_format_error(Raw().header(2, 0).tensor("x", {8}, kF32, 0).tensor("x", {8}, kF32, 32).pad_and_data(64),
                      "tensor 'x' appears twice");
  Raw dup_key;
  dup_key.header(0, 2).str("k").put<std::uint32_t>(4).put<std::uint32_t>(1).str("k").put<std::uint32_t>(4).put<std::uint32_t>(2);
  expect_format_error(dup_key, "metadata key 'k' appears twice");
  // Metadata: unknown type, nested array, huge counts, bad bool, bad alignment.
  Raw bad_type;
  bad_type.header(0, 1).str("k").put<std::uint32_t>(13).put<std::uint32_t>(0);
  expect_format_error(bad_type, "metadata key 'k' has unknown value type 13");
  Raw nested;
  nested.header(0, 1).str("k").put<std::uint32_t>(9).put<std::uint32_t>(9).put<std::uint64_t>(1);
  expect_format_error(nested, "metadata key 'k' is an array of arrays");
  Raw huge_array;
  huge_array.header(0, 1).str("k").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(1ull << 60);
  expect_format_error(huge_array, "metadata key 'k' claims 1152921504606846976 elements");
  Raw huge_string;
  huge_string.header(0, 1).str("k").put<std::uint32_t>(8).put<std::uint64_t>(1ull << 62);
  expect_format_error(huge_string, "truncated GGUF file: metadata key 'k' needs 4611686018427387904 bytes");
  Raw bad_bool;
  bad_bool.header(0, 1).str("k").put<std::uint32_t>(7).put<std::uint8_t>(2);
  expect_format_error(bad_bool, "metadata key 'k' is a bool of value 2");
  Raw bad_align;
  bad_align.header(0, 1).str("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(24);
  expect_format_error(bad_align, "'general.alignment' must be a u32 power of two");
  expect_format_error(Raw().header(1ull << 40, 0), "claims 1099511627776 tensors");
  expect_format_error(Raw().header(0, 1ull << 40), "claims 1099511627776 metadata keys");
}

// The streaming writer: tensors whose bytes a fill produces while the file is written give the
// same file as the bytes given up front, in memory (serialize) and on disk (write).
TEST(GgufWriter, StreamedTensorsWriteTheSameBytes) {
  const auto a = q8_rows(3, 64);
  std::vector<std::byte> b(5 * 4);
  for (int i = 0; i < 5; ++i) {
    const float v = i * 0.25f - 1;
    std::memcpy(b.data() + 4 * i, &v, 4);
  }
  auto header = [](GgufWriter& w) {
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 2);
  };
  GgufWriter memory;
  header(memory);
  memory.add_tensor("a.weight", {64, 3}, QuantType::kQ8_0, a);
  memory.add_tensor("b.bias", {5}, QuantType::kF32, b);
  GgufWriter streamed;
  header(streamed);
  int calls = 0;
  streamed.add_tensor("a.weight", {64, 3}, QuantType::kQ8_0, [&](std::span<std::byte> out) {
    ASSERT_EQ(out.size(), a.size());
    std::memcpy(out.data(), a.data(), a.size());
    ++calls;
  });
  streamed.add_tensor("b.bias", {5}, QuantType::kF32, [&](std::span<std::byte> out) {
    ASSERT_EQ(out.size(), b.size());
    std::memcpy(out.data(), b.data(), b.size());
    ++calls;
  });
  const auto expected = memory.serialize();
  EXPECT_EQ(streamed.serialize(), expected);
  EXPECT_EQ(streamed.file_bytes(), expected.size());
  const auto path = (std::filesystem::temp_directory_path() / ("ferry_gguf_stream_" + std::to_string(::getpid()))).string();
  streamed.write(path);
  EXPECT_EQ(calls, 4);  // each fill once per serialize() and once per write()
  std::ifstream in(path, std::ios::binary);
  std::vector<char> disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(disk.size(), expected.size());
  EXPECT_EQ(std::memcmp(disk.data(), expected.data(), expected.size()), 0);
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f.data(*f.find_tensor("b.bias")).size(), 20u);
  std::filesystem::remove(path);
}

// A fill that throws leaves no file behind (nor PATH.part), and an unwritable path is an IoError.
TEST(GgufWriter, FailedWriteLeavesNothing) {
  const auto path = (std::filesystem::temp_directory_path() / ("ferry_gguf_fail_" + std::to_string(::getpid()))).string();
  GgufWriter w;
  w.add_tensor("x", {32}, QuantType::kF32, [](std::span<std::byte>) { throw FormatError("bad source"); });
  EXPECT_THROW(w.write(path), FormatError);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  EXPECT_THROW(w.write("/nonexistent-dir/x.gguf"), IoError);
}

// Any metadata value the reader returns can be written back as it was read.
TEST(GgufWriter, ValuesReadBackWriteTheSameBytes) {
  const auto bytes = small_writer().serialize();
  const auto f = GgufFile::parse(bytes, "small.gguf");
  GgufWriter again;
  for (const char* key : {"general.architecture", "llama.block_count", "llama.rope.freq_base",
                          "tokenizer.ggml.add_bos_token", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                          "tokenizer.ggml.token_type"})
    again.add(key, f.get(key));
  const auto copy = again.serialize();
  const auto g = GgufFile::parse(copy, "copy.gguf");
  for (const auto& [key, value] : f.metadata()) {
    const GgufValue& v = g.get(key);
    EXPECT_EQ(v.type, value.type) << key;
    EXPECT_EQ(v.i, value.i) << key;
    EXPECT_EQ(v.f, value.f) << key;
    EXPECT_EQ(v.s, value.s) << key;
    EXPECT_EQ(v.strings, value.strings) << key;
    EXPECT_EQ(v.numbers, value.numbers) << key;
  }
}

}  // namespace
}  // namespace ferry::moe::quant
