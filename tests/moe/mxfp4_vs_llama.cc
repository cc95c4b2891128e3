// ferry's MXFP4 against llama.cpp's own code, in one process: libggml-base.so from LLAMA_LIB_DIR
// (llama.cpp's prebuilt libraries) is loaded with dlopen and its exported functions called on the
// same bytes as ferry's:
//   - dequantize_row_mxfp4 on every (E8M0 exponent, code byte) pair: the same float bits;
//   - ggml_quantize_chunk(GGML_TYPE_MXFP4, ...), what llama-quantize calls, on rows of many
//     magnitudes (Gaussian from 1e-30 to 1e30, exact codes and ties, blocks below 2^-125 whose
//     exponent wraps, zeros and negative zeros, the largest floats): the same bytes;
//   - ggml_validate_row_data: refuses the exponent 255 alone, the rule ferry's loaders mirror
//     (moe/model/finite_blocks.h).
// Skipped (exit 77) without LLAMA_LIB_DIR or its libggml-base.so.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/quant_type.h"
#include "moe/quant/quantize.h"

namespace {

using ferry::moe::quant::QuantType;
constexpr int kGgmlTypeMxfp4 = 39;  // ggml.h's GGML_TYPE_MXFP4

// ggml's C API, the few functions used (ggml.h, ggml-quants.h).
struct Ggml {
  const char* (*type_name)(int type);
  std::size_t (*quantize_chunk)(int type, const float* src, void* dst, std::int64_t start, std::int64_t nrows,
                                std::int64_t n_per_row, const float* imatrix);
  void (*dequantize_row_mxfp4)(const void* x, float* y, std::int64_t k);
  bool (*validate_row_data)(int type, const void* data, std::size_t nbytes);
};

template <typename F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) std::fprintf(stderr, "FAIL: libggml-base.so has no %s\n", name);
  return f != nullptr;
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Every exponent with each of the 256 code bytes at each of the 16 byte positions: 256 × 16 blocks.
void compare_dequantize(const Ggml& g) {
  std::vector<ferry::moe::quant::BlockMXFP4> blocks;
  for (int e = 0; e < 256; ++e)
    for (int k = 0; k < 16; ++k) {
      ferry::moe::quant::BlockMXFP4 b;
      b.e = static_cast<std::uint8_t>(e);
      for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(16 * ((k + j) % 16) + j);
      blocks.push_back(b);
    }
  const std::size_t n = blocks.size() * 32;
  std::vector<float> ours(n), theirs(n);
  ferry::moe::quant::dequantize_row(QuantType::kMXFP4, blocks.data(), ours.data(), n);
  g.dequantize_row_mxfp4(blocks.data(), theirs.data(), static_cast<std::int64_t>(n));
  std::size_t differ = 0, first = n;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&ours[i], &theirs[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  check(differ == 0, "dequantize: " + std::to_string(n) + " weights (every exponent and code byte) bit-equal to "
                         "dequantize_row_mxfp4" + (differ ? ", " + std::to_string(differ) + " differ, first " +
                                                                std::to_string(first) : ""));
}

// Rows of 96 weights (3 blocks), one family of inputs each.
std::vector<std::vector<float>> quantize_inputs() {
  std::vector<std::vector<float>> rows;
  std::mt19937 rng(17);
  for (double sigma : {1e-30, 1e-20, 1e-6, 1e-3, 0.02, 1.0, 7.0, 1e3, 1e20, 1e30}) {
    std::normal_distribution<double> dist(0.0, sigma);
    for (int r = 0; r < 64; ++r) {
      std::vector<float> x(96);
      for (auto& v : x) v = static_cast<float>(dist(rng));
      rows.push_back(x);
    }
  }
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (int r = 0; r < 64; ++r) {  // a block's weights at exact codes and midpoints of a random scale
    std::vector<float> x(96);
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 60) - 30);
    for (auto& v : x) v = scale * 0.25f * static_cast<float>(static_cast<int>(rng() % 49) - 24);
    rows.push_back(x);
  }
  for (int r = 0; r < 64; ++r) {  // scales from 2^-149 to 2^127: subnormal blocks, exponent wrap
    std::vector<float> x(96);
    const int exponent = static_cast<int>(rng() % 277) - 149;
    for (auto& v : x) v = std::ldexp(uni(rng), exponent);
    rows.push_back(x);
  }
  std::vector<float> special(96, 0.0f);
  special[33] = -0.0f;
  special[64] = std::numeric_limits<float>::max();
  special[65] = -std::numeric_limits<float>::max();
  special[66] = std::numeric_limits<float>::denorm_min();
  special[70] = std::numeric_limits<float>::min();
  rows.push_back(special);
  std::vector<float> tiny(96);
  for (int j = 0; j < 96; ++j) tiny[j] = std::numeric_limits<float>::denorm_min() * static_cast<float>(j % 7 - 3);
  rows.push_back(tiny);
  return rows;
}

void compare_quantize(const Ggml& g) {
  const auto rows = quantize_inputs();
  const std::size_t n = 96, row_bytes = ferry::moe::quant::quant_row_bytes(QuantType::kMXFP4, n);
  std::vector<float> x;
  for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
  std::vector<std::uint8_t> ours(rows.size() * row_bytes), theirs(rows.size() * row_bytes, 0xAA);
  ferry::moe::quant::quantize_row(QuantType::kMXFP4, x.data(), ours.data(), x.size());
  const std::size_t written = g.quantize_chunk(kGgmlTypeMxfp4, x.data(), theirs.data(), 0,
                                               static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(n), nullptr);
  std::size_t differ = 0, first = ours.size();
  for (std::size_t i = 0; i < ours.size(); ++i)
    if (ours[i] != theirs[i] && differ++ == 0) first = i;
  check(written == ours.size() && differ == 0,
        "quantize: " + std::to_string(rows.size()) + " rows of " + std::to_string(n) +
            " weights byte-equal to ggml_quantize_chunk(MXFP4)" +
            (differ ? ", " + std::to_string(differ) + " bytes differ, first at " + std::to_string(first) : ""));
}

void compare_validation(const Ggml& g) {
  bool as_documented = true;
  for (int e = 0; e < 256; ++e) {
    ferry::moe::quant::BlockMXFP4 b{};
    b.e = static_cast<std::uint8_t>(e);
    std::memset(b.qs, 0x77, sizeof b.qs);
    as_documented = as_documented && g.validate_row_data(kGgmlTypeMxfp4, &b, sizeof b) == (e != 255);
  }
  check(as_documented, "ggml_validate_row_data refuses the E8M0 exponent 255 and no other");
}

}  // namespace

int main() {
  const char* dir = std::getenv("LLAMA_LIB_DIR");
  const std::string path = std::string(dir ? dir : "") + "/libggml-base.so";
  void* lib = dir ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!lib) {
    std::printf("skipped: set LLAMA_LIB_DIR to llama.cpp's prebuilt libraries (%s)\n", dir ? dlerror() : "unset");
    return 77;
  }
  Ggml g{};
  if (!bind(lib, "ggml_type_name", g.type_name) || !bind(lib, "ggml_quantize_chunk", g.quantize_chunk) ||
      !bind(lib, "dequantize_row_mxfp4", g.dequantize_row_mxfp4) ||
      !bind(lib, "ggml_validate_row_data", g.validate_row_data))
    return 1;
  const std::string name = g.type_name(kGgmlTypeMxfp4);
  check(name == "mxfp4", "ggml type 39 is '" + name + "'");
  if (failures) return 1;
  compare_dequantize(g);
  compare_quantize(g);
  compare_validation(g);
  return failures ? 1 : 0;
}
