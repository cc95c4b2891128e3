#include "moe/model/gguf_export.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/path_checks.h"
#include "core/machine_limits.h"
#include "core/parallel_chunks.h"
#include "core/units.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"
#include "moe/quant/gguf_writer.h"
#include "moe/quant/quantize.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {
namespace {

std::string directory_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." ? std::filesystem::absolute(p).filename().string() : name;
}

nlohmann::json read_config_json(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  require_regular_file(path, "model config");
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

// One planned tensor read from the checkpoint as float32 (experts stacked, q/k permuted) and
// quantized on `threads` threads; or, stored in `type` (MXFP4 experts), its blocks as they are.
void quantize_from_checkpoint(const Checkpoint& checkpoint, int threads, const GgufTensorPlan& t, quant::QuantType type,
                              std::span<std::byte> out) {
  if (t.split_from.empty() && t.permute_heads == 0 &&
      std::all_of(t.hf_names.begin(), t.hf_names.end(),
                  [&](const std::string& hf) { return checkpoint.stored_blocks(hf) == type; })) {
    const std::size_t per = out.size() / t.hf_names.size();
    for (std::size_t e = 0; e < t.hf_names.size(); ++e) checkpoint.read_blocks(t.hf_names[e], out.data() + e * per);
    return;
  }
  std::int64_t per = 1;
  for (auto d : t.hf_shape) per *= d;
  std::vector<float> values(static_cast<std::size_t>(per) * t.hf_names.size());
  if (!t.split_from.empty()) {  // a part of MLA's kv_b_proj
    const MoeConfig& c = checkpoint.config();
    const std::vector<std::int64_t> whole = mla_kv_b_shape(c);
    std::vector<float> kv_b(static_cast<std::size_t>(whole[0] * whole[1]));
    checkpoint.read_f32(t.split_from, whole, kv_b.data());
    values = mla_kv_b_part(kv_b, t.hf_names.at(0), c);
  } else {
    for (std::size_t e = 0; e < t.hf_names.size(); ++e)
      checkpoint.read_f32(t.hf_names[e], t.hf_shape, values.data() + e * per);
  }
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
}

}  // namespace

GgufExportReport export_gguf(const std::string& dir, const std::string& out_path, const GgufExportOptions& o) {
  if (!std::filesystem::is_directory(dir)) FERRY_THROW(IoError, "--model '", dir, "' is not a directory");
  const std::unique_ptr<Checkpoint> ckpt = Checkpoint::open(dir);
  const MoeConfig& c = ckpt->config();
  const nlohmann::json hf_config = read_config_json(dir);
  gguf_check_supported(c);  // before the checkpoint's tensors are checked against the plan
  const std::vector<GgufTensorPlan> plan = gguf_tensor_plan(c);

  // Every planned HF tensor is in the checkpoint with its shape, and every checkpoint tensor has
  // a place (the converter's "Can not map tensor").
  std::set<std::string> used;
  for (const GgufTensorPlan& t : plan) {
    if (!t.split_from.empty()) {  // MLA's kv_b_proj, split into two
      ckpt->expect(t.split_from, mla_kv_b_shape(c));
      used.insert(t.split_from);
      continue;
    }
    for (const std::string& hf : t.hf_names) {
      ckpt->expect(hf, t.hf_shape);
      for (const std::string& stored : ckpt->stored_names(hf)) used.insert(stored);
    }
  }
  for (const auto& file : ckpt->files())
    for (const TensorInfo& info : file->tensors())
      if (!used.count(info.name) && !dropped_by_converter(info.name))
        FERRY_THROW(FormatError, "tensor '", info.name, "' of '", dir, "' has no place in a GGUF file of ", c.model_type,
                    " (llama.cpp's ", family_of(c.model_type).gguf_architecture, " architecture)");

  GgufModelSource source{c, load_tokenizer(dir, c.tokenizer, c.vocab_size)->vocabulary(), dir,
                         o.name.empty() ? directory_name(dir) : o.name};
  const int threads = o.threads > 0 ? o.threads : machine_cores();
  const Checkpoint* checkpoint = ckpt.get();  // outlives the fills: write_gguf_model runs them
  return write_gguf_model(source, hf_config, out_path, o,
                          [checkpoint, threads](const GgufTensorPlan& t, quant::QuantType type, std::span<std::byte> out) {
                            quantize_from_checkpoint(*checkpoint, threads, t, type, out);
                          });
}

GgufExportReport write_gguf_model(const GgufModelSource& source, const nlohmann::json& hf_config,
                                  const std::string& out_path, const GgufExportOptions& o, const GgufTensorFill& fill) {
  const MoeConfig& c = source.config;
  GgufExportReport report;
  report.notes = gguf_check_supported(c);
  const std::vector<GgufTensorPlan> plan = gguf_tensor_plan(c);
  std::vector<quant::MixTensor> mix;
  for (const GgufTensorPlan& t : plan) mix.push_back({t.name, t.dims});
  std::vector<quant::QuantType> types = quant::choose_tensor_types(mix, {o.file_type, o.pure, c.num_layers, c.num_experts});
  report.file_type = o.file_type;
  const quant::QuantType base = quant::llama_file_type_base(o.file_type);
  if (c.mxfp4_experts &&
      (base == quant::QuantType::kF32 || base == quant::QuantType::kF16 || base == quant::QuantType::kBF16)) {
    for (std::size_t k = 0; k < plan.size(); ++k)  // the converter's file (gguf_export.h)
      if (plan[k].stacked) types[k] = quant::QuantType::kMXFP4;
    report.file_type = quant::LlamaFileType::kMostlyMXFP4_MOE;
  }

  GgufKeys keys = gguf_model_metadata(c, hf_config, source.name);
  report.architecture = family_of(c.model_type).gguf_architecture;
  gguf_tokenizer_metadata(keys, source.vocab, c, source.tokenizer_dir, hf_config);
  gguf_file_type_metadata(keys, report.file_type);

  quant::GgufWriter writer;
  for (const auto& [key, value] : keys.entries()) writer.add(key, value);
  report.metadata_keys = keys.entries().size();
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const GgufTensorPlan& t = plan[k];
    const quant::QuantType type = types[k];
    // `plan`, `fill` and `o` outlive the writer's fills: all end in this function.
    writer.add_tensor(t.name, t.dims, type, [&t, type, &fill, &o, k, n = plan.size()](std::span<std::byte> out) {
      fill(t, type, out);
      if (o.progress) o.progress(k + 1, n);
    });
    std::uint64_t rows = 1;
    for (std::size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
    report.tensors.push_back({t.name, t.dims, type, quant::quant_row_bytes(type, t.dims[0]) * rows});
  }
  report.file_bytes = writer.file_bytes();
  // Refused before a byte is written rather than failing hours into a large file.
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::absolute(out_path, ec).parent_path();
  while (!parent.empty() && !std::filesystem::exists(parent, ec) && parent != parent.parent_path())
    parent = parent.parent_path();
  const std::filesystem::space_info space = std::filesystem::space(parent, ec);
  if (!ec && report.file_bytes > space.available)
    FERRY_THROW(IoError, "'", out_path, "': the GGUF file's ", format_bytes(static_cast<double>(report.file_bytes)),
                " do not fit the ", format_bytes(static_cast<double>(space.available)), " free on ", parent.string());
  writer.write(out_path);
  return report;
}

}  // namespace ferry::moe
