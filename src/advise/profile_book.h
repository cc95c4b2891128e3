// The measured inputs of every prediction, each taken once per process: a model's profile per
// (model, batch) and a codec's cost per (codec, model). A zoo model's profile is read from a
// profile directory when it holds NAME_bBATCH.json (the calibration's own profiles by default:
// the machine constants, compute_scale above all, are ratios to the profiles they were fitted
// with, so a projection, a validation and a calibration must read the same ones), else
// measured (zoo_profiler.h) and, when the directory is writable, stored there.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "advise/codec_cost.h"
#include "advise/model_profile.h"

namespace ferry::advise {

struct ProfileBookOptions {
  std::string dir;      // zoo profiles NAME_bBATCH.json; empty: measure every model
  bool write = false;   // store profiles measured here in `dir` (read-only otherwise)
};

class ProfileBook {
 public:
  ProfileBook() = default;
  explicit ProfileBook(ProfileBookOptions options) : options_(std::move(options)) {}
  // A zoo model name (read from the directory or profiled here) or a profile file (any path
  // ending in .json, or an existing file). References stay valid while the book lives.
  const ModelProfile& model(const std::string& name_or_file, std::int64_t batch);
  // Where model(name, batch) came from: the file read, or "measured now".
  std::string origin(const std::string& name_or_file, std::int64_t batch) const;
  const CodecCost& codec(const std::string& spec, const ModelProfile& model);
  const CodecCost& fp32(const ModelProfile& model);
  const ProfileBookOptions& options() const { return options_; }

 private:
  ProfileBookOptions options_;
  std::map<std::string, std::unique_ptr<ModelProfile>> models_;
  std::map<std::string, std::string> origins_;
  std::map<std::string, std::unique_ptr<CodecCost>> codecs_;
};

}  // namespace ferry::advise
