#include "moe/model/gguf_export.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/machine_limits.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"
#include "moe/model/tokenizer.h"
#include "moe/quant/gguf_writer.h"
#include "moe/quant/quantize.h"

namespace ferry::moe {
namespace {

// Runs fn(begin, end) over [0, n) in `threads` contiguous chunks; the first exception is
// re-thrown after every thread has joined.
void parallel_chunks(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t t = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(threads), n));
  if (t == 1) return fn(0, n);
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex mutex;
  for (std::size_t k = 0; k < t; ++k)
    pool.emplace_back([&, k] {
      try {
        fn(n * k / t, n * (k + 1) / t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

std::string directory_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." ? std::filesystem::absolute(p).filename().string() : name;
}

nlohmann::json read_config_json(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open model config '", path, "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "config '", path, "' is not valid JSON: ", e.what());
  }
}

// HF tensors the converter drops instead of mapping (Model.prepare_tensors).
bool dropped_by_converter(const std::string& name) {
  for (const char* tail : {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"})
    if (name.size() >= std::string(tail).size() && name.compare(name.size() - std::string(tail).size(), std::string::npos, tail) == 0)
      return true;
  return false;
}

}  // namespace

GgufExportReport export_gguf(const std::string& dir, const std::string& out_path, const GgufExportOptions& o) {
  if (!std::filesystem::is_directory(dir)) FERRY_THROW(IoError, "--model '", dir, "' is not a directory");
  const std::unique_ptr<Checkpoint> ckpt = Checkpoint::open(dir);
  const MoeConfig& c = ckpt->config();
  const nlohmann::json hf_config = read_config_json(dir);

  GgufExportReport report;
  report.notes = gguf_check_supported(c);
  const std::vector<GgufTensorPlan> plan = gguf_tensor_plan(c);

  // Every planned HF tensor is in the checkpoint with its shape, and every checkpoint tensor has
  // a place (the converter's "Can not map tensor").
  std::set<std::string> used;
  for (const GgufTensorPlan& t : plan)
    for (const std::string& hf : t.hf_names) {
      ckpt->expect(hf, t.hf_shape);
      used.insert(hf);
    }
  for (const auto& file : ckpt->files())
    for (const TensorInfo& info : file->tensors())
      if (!used.count(info.name) && !dropped_by_converter(info.name))
        FERRY_THROW(FormatError, "tensor '", info.name, "' of '", dir, "' has no place in a GGUF file of ", c.model_type,
                    " (llama.cpp's ", family_of(c.model_type).gguf_architecture, " architecture)");

  std::vector<quant::MixTensor> mix;
  for (const GgufTensorPlan& t : plan) mix.push_back({t.name, t.dims});
  const std::vector<quant::QuantType> types =
      quant::choose_tensor_types(mix, {o.file_type, o.pure, c.num_layers, c.num_experts});

  GgufKeys keys = gguf_model_metadata(c, hf_config, o.name.empty() ? directory_name(dir) : o.name);
  report.architecture = family_of(c.model_type).gguf_architecture;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(dir, c.tokenizer, c.vocab_size);
  gguf_tokenizer_metadata(keys, tokenizer->vocabulary(), c, dir, hf_config);
  gguf_file_type_metadata(keys, o.file_type);

  quant::GgufWriter writer;
  for (const auto& [key, value] : keys.entries()) writer.add(key, value);
  report.metadata_keys = keys.entries().size();
  const int threads = o.threads > 0 ? o.threads : machine_cores();
  const Checkpoint* source = ckpt.get();  // outlives the writer's fills: both end in this function
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const GgufTensorPlan& t = plan[k];
    const quant::QuantType type = types[k];
    writer.add_tensor(t.name, t.dims, type, [&t, type, source, threads, &o, k, n = plan.size()](std::span<std::byte> out) {
      std::int64_t per = 1;
      for (auto d : t.hf_shape) per *= d;
      std::vector<float> values(static_cast<std::size_t>(per) * t.hf_names.size());
      for (std::size_t e = 0; e < t.hf_names.size(); ++e) source->read_f32(t.hf_names[e], t.hf_shape, values.data() + e * per);
      if (t.permute_heads > 0) {
        const std::vector<float> hf = values;
        gguf_permute_rows(hf, values, t.hf_shape[0], t.hf_shape.size() > 1 ? t.hf_shape[1] : 1, t.permute_heads);
      }
      const std::size_t row = t.dims[0];
      const std::size_t rows = values.size() / row;
      const std::size_t row_bytes = quant::quant_row_bytes(type, row);
      parallel_chunks(rows, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r)
          quant::quantize_row(type, values.data() + r * row, out.data() + r * row_bytes, row);
      });
      if (o.progress) o.progress(k + 1, n);
    });
    std::uint64_t rows = 1;
    for (std::size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
    report.tensors.push_back({t.name, t.dims, type, quant::quant_row_bytes(type, t.dims[0]) * rows});
  }
  report.file_bytes = writer.file_bytes();
  writer.write(out_path);
  return report;
}

}  // namespace ferry::moe
