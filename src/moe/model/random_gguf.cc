#include "moe/model/random_gguf.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/machine_limits.h"
#include "core/parallel_chunks.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/quantize.h"

namespace ferry::moe {
namespace {

using quant::QuantType;

// Blocks per pool: 4096 Q8_0 blocks are 136 KiB (Q6_K: 840 KiB), within a core's L2 cache, and
// enough distinct blocks that no two rows of a tensor repeat each other.
constexpr std::size_t kPoolBlocks = 4096;

// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): one add and three xor-shift-multiplies per draw.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in (0, 1], never 0 (Box–Muller takes its logarithm).
  double uniform_open0() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

std::uint64_t combine_seed(std::uint64_t a, std::uint64_t b) { return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ull)); }

std::uint64_t name_hash(const std::string& s) {  // FNV-1a
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

struct Normal {
  double mean = 0;
  double stddev = 1;
  auto key() const { return std::make_tuple(std::bit_cast<std::uint64_t>(mean), std::bit_cast<std::uint64_t>(stddev)); }
};

// `n` draws of N(mean, stddev²) by Box–Muller, two per pair of uniforms.
void draw_normal(SplitMix64& rng, const Normal& d, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(rng.uniform_open0()));
    const double phi = 2.0 * M_PI * static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
    out[i] = static_cast<float>(d.mean + d.stddev * r * std::cos(phi));
    if (i + 1 < n) out[i + 1] = static_cast<float>(d.mean + d.stddev * r * std::sin(phi));
  }
}

// The weights of one file: each planned tensor's distribution (by its first HF tensor) and the
// block pools, made on first use. Fills run one tensor at a time (GgufWriter), each on `threads`.
class RandomFiller {
 public:
  RandomFiller(const MoeConfig& config, std::uint64_t seed, int threads) : seed_(seed), threads_(threads) {
    for (const RandomTensorSpec& s : random_tensor_specs(config)) normal_[s.name] = {s.mean, s.stddev};
  }

  void fill(const GgufTensorPlan& t, QuantType type, std::span<std::byte> out) {
    const std::string& source = t.split_from.empty() ? t.hf_names.at(0) : t.split_from;  // MLA's kv_b parts: kv_b's
    const auto it = normal_.find(source);
    FERRY_CHECK(it != normal_.end(), "no distribution for tensor '", source, "'");
    const Normal& d = it->second;
    const std::size_t row = t.dims[0];
    const std::size_t row_bytes = quant::quant_row_bytes(type, row);
    const std::size_t rows = out.size() / row_bytes;
    const std::uint64_t tensor_seed = combine_seed(seed_, name_hash(t.name));
    const quant::QuantTraits& traits = quant::quant_traits(type);
    if (traits.block_elems == 1) {  // a float type: drawn directly
      parallel_chunks(rows, threads_, [&](std::size_t begin, std::size_t end) {
        std::vector<float> values(row);
        for (std::size_t r = begin; r < end; ++r) {
          SplitMix64 rng(combine_seed(tensor_seed, r));
          draw_normal(rng, d, values.data(), row);
          quant::quantize_row(type, values.data(), out.data() + r * row_bytes, row);
        }
      });
      return;
    }
    const std::vector<std::byte>& pool = pool_of(type, d);
    const std::size_t block_bytes = traits.block_bytes, blocks = row / traits.block_elems;
    parallel_chunks(rows, threads_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) {
        SplitMix64 rng(combine_seed(tensor_seed, r));
        std::byte* dst = out.data() + r * row_bytes;
        for (std::size_t b = 0; b < blocks; ++b, dst += block_bytes)
          std::memcpy(dst, pool.data() + (rng.next() >> 52) % kPoolBlocks * block_bytes, block_bytes);
      }
    });
  }

 private:
  // kPoolBlocks blocks of `type` quantized from N(mean, stddev²) draws (seeded by the file's seed,
  // the type and the distribution, so the pool does not depend on which tensor asked first).
  const std::vector<std::byte>& pool_of(QuantType type, const Normal& d) {
    const auto key = std::tuple_cat(std::make_tuple(static_cast<std::uint32_t>(type)), d.key());
    auto it = pools_.find(key);
    if (it != pools_.end()) return it->second;
    const quant::QuantTraits& traits = quant::quant_traits(type);
    std::vector<float> values(kPoolBlocks * traits.block_elems);
    SplitMix64 rng(combine_seed(combine_seed(combine_seed(seed_, static_cast<std::uint64_t>(type)), std::get<0>(d.key())),
                                std::get<1>(d.key())));
    draw_normal(rng, d, values.data(), values.size());
    std::vector<std::byte> pool(kPoolBlocks * traits.block_bytes);
    quant::quantize_row(type, values.data(), pool.data(), values.size());
    return pools_.emplace(key, std::move(pool)).first->second;
  }

  std::uint64_t seed_;
  int threads_;
  std::unordered_map<std::string, Normal> normal_;  // by HF tensor name
  std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, std::vector<std::byte>> pools_;
};

// The normal pieces of the SentencePiece-style vocabulary, in score order: "▁", then one character
// of a small alphabet with and without "▁", then strings of lowercase letters of growing length,
// each with and without "▁" (so that the tokenizer's merges reach every piece), until `n` pieces.
std::vector<std::string> spm_pieces(std::size_t n) {
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581
  static const std::string kLower = "etaoinshrdlucmfwypvbgkjqxz";
  const std::string singles = kLower + "ETAOINSHRDLUCMFWYPVBGKJQXZ0123456789.,!?'\"-:;()";
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (out.size() < n) out.push_back(kSpace + s);
    if (out.size() < n) out.push_back(s);
  };
  if (n > 0) out.push_back(kSpace);
  for (char ch : singles) add(std::string(1, ch));
  for (std::size_t len = 2; out.size() < n; ++len) {
    std::vector<std::size_t> digit(len, 0);  // an odometer over kLower
    for (bool more = true; more && out.size() < n;) {
      std::string s;
      for (std::size_t i : digit) s += kLower[i];
      add(s);
      std::size_t k = len;
      while (k > 0 && ++digit[k - 1] == kLower.size()) digit[--k] = 0;
      more = k > 0;
    }
  }
  return out;
}

}  // namespace

TokenizerVocab random_gguf_vocabulary(int n) {
  if (n == 256) return ByteTokenizer().vocabulary();
  FERRY_REQUIRE(n >= 260, "--vocab ", n, ": a GGUF model takes 256 (ferry's byte tokens) or at least 260 (a ",
                "SentencePiece-style vocabulary: <unk>, <s>, </s>, 256 byte pieces and normal pieces)");
  TokenizerVocab v;
  v.kind = TokenizerVocab::Kind::kSentencePiece;
  auto add = [&](std::string piece, TokenType type, float score) {
    v.tokens.push_back(std::move(piece));
    v.types.push_back(type);
    v.scores.push_back(score);
  };
  add("<unk>", TokenType::kUnknown, 0);
  add("<s>", TokenType::kControl, 0);
  add("</s>", TokenType::kControl, 0);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, TokenType::kByte, 0);
  }
  const std::vector<std::string> pieces = spm_pieces(static_cast<std::size_t>(n) - v.tokens.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) add(pieces[i], TokenType::kNormal, -static_cast<float>(i));
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

GgufExportReport write_random_gguf(const std::string& out_path, const RandomGgufOptions& o) {
  const MoeConfig c = tiny_model_config(o.config);
  GgufModelSource source{c, random_gguf_vocabulary(c.vocab_size), /*tokenizer_dir=*/"",
                         o.gguf.name.empty() ? std::filesystem::path(out_path).stem().string() : o.gguf.name};
  // make-tiny's config.json; a SentencePiece vocabulary names its BOS and EOS there, as Mixtral's
  // config.json does (the converter's special vocabulary reads them).
  nlohmann::json hf_config = config_to_json(c);
  if (source.vocab.kind == TokenizerVocab::Kind::kSentencePiece) {
    hf_config["bos_token_id"] = source.vocab.bos_id;
    hf_config["eos_token_id"] = source.vocab.eos_id;
  }
  RandomFiller filler(c, o.seed, o.gguf.threads > 0 ? o.gguf.threads : machine_cores());
  return write_gguf_model(source, hf_config, out_path, o.gguf,
                          [&filler](const GgufTensorPlan& t, QuantType type, std::span<std::byte> out) {
                            filler.fill(t, type, out);
                          });
}

}  // namespace ferry::moe
