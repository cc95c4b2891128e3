// Writes the binary seed inputs of tests/fuzz/corpus/ (the text seeds are written by hand):
// well-formed IDX files, safetensors files and one encoded payload per codec and tensor size.
// Usage: fuzz_make_seeds CORPUS_DIR   (run by scripts/fuzz.sh --seeds; the output is committed)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compress/codec_registry.h"
#include "moe/model/safetensors.h"
#include "moe/quant/gguf_writer.h"
#include "moe/quant/quantize.h"

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const void* data, std::size_t n) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims) {
  std::vector<std::uint8_t> b = {0, 0, 8, static_cast<std::uint8_t>(dims.size())};
  std::size_t count = 1;
  for (auto d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
    count *= d;
  }
  for (std::size_t i = 0; i < count; ++i) b.push_back(static_cast<std::uint8_t>(i * 37));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const auto& dims : {std::vector<std::uint32_t>{2, 3, 3}, {1, 1, 1}, {5}, {4}}) {
    auto b = idx_bytes(dims);
    std::string name = "dims";
    for (auto d : dims) name += "_" + std::to_string(d);
    write_file(root / "idx" / name, b.data(), b.size());
  }

  {
    ferry::moe::SafetensorsWriter w;
    std::vector<float> v(24);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 2.0f;
    w.add_f32("a.weight", ferry::moe::DType::kF32, {4, 6}, v.data());
    w.add_f32("b.weight", ferry::moe::DType::kBF16, {2, 3}, v.data());
    w.add_f32("c.bias", ferry::moe::DType::kF16, {5}, v.data());
    w.add_f32("empty", ferry::moe::DType::kF32, {0, 3}, v.data());
    w.set_metadata("format", "pt");
    w.write((root / "safetensors" / "three_dtypes").string());
    ferry::moe::SafetensorsWriter one;
    one.add_f32("x", ferry::moe::DType::kF32, {1}, v.data());
    one.write((root / "safetensors" / "one_scalar").string());
  }

  {
    using namespace ferry::moe::quant;
    std::vector<float> v(256 * 2);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.1f * static_cast<float>(i));
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1);
    w.add_strings("tokenizer.ggml.tokens", {"<s>", "a"});
    w.add_f32s("tokenizer.ggml.scores", {0.0f, -1.0f});
    for (auto type : {QuantType::kF32, QuantType::kF16, QuantType::kBF16, QuantType::kQ8_0, QuantType::kQ4_0,
                      QuantType::kQ4_K, QuantType::kQ6_K}) {
      std::vector<std::byte> bytes(quant_matrix_bytes(type, 2, 256));
      quantize_row(type, v.data(), bytes.data(), v.size());
      w.add_tensor(std::string("t.") + quant_name(type), {256, 2}, type, std::move(bytes));
    }
    w.write((root / "gguf" / "seven_types").string());
  }

  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (const char* spec : {"none", "fp16", "twobit", "onebit", "qsgd", "terngrad", "topk:ratio=0.1",
                           "randomk:ratio=0.1", "dgc:ratio=0.1", "powersgd:rank=2"}) {
    std::string name = spec;
    name = name.substr(0, name.find(':'));
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{42}, std::size_t{100}}) {
      ferry::compress::TensorInfo info{.numel = n};
      if (n % 6 == 0) info.shape = {static_cast<std::int64_t>(n / 6), 6};
      auto codec = ferry::compress::make_codec(spec, info);
      std::vector<float> g(n);
      for (auto& x : g) x = normal(rng);
      std::vector<std::byte> payload;
      for (int step = 0; step < 2; ++step) codec->encode(g, payload);  // step 2: with residual
      write_file(root / ("codec_" + name) / ("numel_" + std::to_string(n)), payload.data(), payload.size());
    }
  }
  std::printf("seeds written under %s\n", root.c_str());
  return 0;
}
