// `ferry moe logits`: the logits the offloading engine computes for given token sequences, so that
// an independent implementation (tests/moe/hf_reference.py) can check ferry's forward under any
// policy, budget and link. The first --prompt tokens of every sequence are one prefill (logits of
// every position); each later token is one decode step through the KV cache (teacher-forced).
// Output: a NumPy .npy file of float32 [sequences, tokens, vocab].
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/engine_flags.h"
#include "apps/moe_subcommands.h"
#include "core/atomic_write.h"
#include "core/error.h"
#include "core/path_checks.h"
#include "moe/engine/engine.h"

namespace ferry::apps {
namespace {

using moe::EngineOptions;
using moe::MoeEngine;
using moe::TokenBatch;

struct LogitsFlags {
  std::string model, tokens, out;
  EngineOptions engine = [] {
    EngineOptions e;
    e.policy = "ondemand";
    e.device_mem = "100%";
    e.link = "none";
    return e;
  }();
  int prompt = 1, threads = 1;
};

// The sequences of a JSON file [[id, ...], ...]: equal lengths, ids in the vocabulary.
TokenBatch read_sequences(const std::string& path, int vocab) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "--tokens: cannot open '", path, "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "--tokens '", path, "' is not valid JSON: ", e.what());
  }
  FERRY_REQUIRE(j.is_array() && !j.empty(), "--tokens '", path, "': expected a non-empty array of token arrays");
  TokenBatch seqs;
  for (const auto& row : j) {
    FERRY_REQUIRE(row.is_array() && !row.empty(), "--tokens '", path, "': every sequence must be a non-empty array");
    std::vector<std::int32_t> s;
    for (const auto& t : row) {
      FERRY_REQUIRE(t.is_number_integer() && t.get<std::int64_t>() >= 0 && t.get<std::int64_t>() < vocab, "--tokens '",
                    path, "': token ", t.dump(), " is not in the vocabulary [0, ", vocab, ")");
      s.push_back(t.get<std::int32_t>());
    }
    FERRY_REQUIRE(seqs.empty() || s.size() == seqs[0].size(), "--tokens '", path,
                  "': every sequence must have the same length");
    seqs.push_back(std::move(s));
  }
  return seqs;
}

// NumPy's .npy format, version 1.0: magic, header length, a Python dict literal padded to a
// multiple of 64 bytes, then the row-major data.
std::string npy_bytes(const std::vector<float>& data, std::size_t b, std::size_t t, std::size_t v) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(b) + ", " +
                       std::to_string(t) + ", " + std::to_string(v) + "), }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return out;
}

int run_logits(const LogitsFlags& f) {
  std::vector<std::string> inputs = input_files(f.model);
  inputs.push_back(f.tokens);
  require_output_not_input(f.out, "--out", inputs, "--model or --tokens");
  at::set_num_threads(f.threads);
  auto eng = MoeEngine::open(f.model, f.engine);
  const int V = eng->config().vocab_size;
  const TokenBatch seqs = read_sequences(f.tokens, V);
  const std::size_t B = seqs.size(), T = seqs[0].size();
  FERRY_REQUIRE(f.prompt >= 1 && static_cast<std::size_t>(f.prompt) <= T, "--prompt ", f.prompt,
                " must be in 1..", T, " (the sequences' length)");
  const std::size_t P = static_cast<std::size_t>(f.prompt);
  std::vector<float> all(B * T * static_cast<std::size_t>(V));
  auto put = [&](std::size_t b, std::size_t t, const float* row) {
    std::memcpy(all.data() + (b * T + t) * V, row, static_cast<std::size_t>(V) * sizeof(float));
  };
  TokenBatch first(B);
  for (std::size_t b = 0; b < B; ++b) first[b].assign(seqs[b].begin(), seqs[b].begin() + static_cast<std::ptrdiff_t>(P));
  const std::vector<float> pre = eng->forward(first, true);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < P; ++t) put(b, t, pre.data() + (b * P + t) * V);
  for (std::size_t t = P; t < T; ++t) {
    TokenBatch step(B);
    for (std::size_t b = 0; b < B; ++b) step[b] = {seqs[b][t]};
    const std::vector<float> g = eng->forward(step);
    for (std::size_t b = 0; b < B; ++b) put(b, t, g.data() + b * V);
  }
  write_file_atomic(f.out, npy_bytes(all, B, T, static_cast<std::size_t>(V)));
  const auto st = eng->stats();
  std::printf("wrote %s: %zu x %zu x %d logits; %s, hit rate %.3f, %llu bytes moved\n", f.out.c_str(), B, T, V,
              f.engine.policy.c_str(), st.hit_rate(), static_cast<unsigned long long>(st.store.bytes_moved));
  return 0;
}

}  // namespace

MoeSubcommand add_logits_command(CLI::App& moe) {
  auto flags = std::make_shared<LogitsFlags>();
  auto& f = *flags;
  auto* c = moe.add_subcommand("logits", "teacher-forced logits of token sequences (prefill, then decode steps), as .npy");
  c->add_option("--model", f.model, "model directory or GGUF file")->required();
  c->add_option("--tokens", f.tokens, "JSON file: [[id, ...], ...], sequences of equal length")->required();
  c->add_option("--out", f.out, ".npy file of float32 [sequences, tokens, vocab]")->required();
  c->add_option("--prompt", f.prompt, "tokens of the prefill; the rest are decode steps")->capture_default_str();
  add_engine_flags(*c, f.engine);
  c->add_option("--threads", f.threads, "libtorch threads")->check(thread_count())->capture_default_str();
  return MoeSubcommand{c, [flags] { return run_logits(*flags); }};
}

}  // namespace ferry::apps
