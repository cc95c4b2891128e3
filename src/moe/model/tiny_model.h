// Writing checkpoints in the Hugging Face layout, and ferry's random-weight tiny models.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "moe/model/config.h"
#include "moe/model/dtype.h"

namespace ferry::moe {

struct NamedTensor {
  std::string name;                 // Mixtral tensor name
  std::vector<std::int64_t> shape;  // row-major
  std::vector<float> values;        // numel values
  std::vector<std::uint8_t> bytes;  // or, for a U8 tensor (MXFP4's blocks and scales), numel bytes

  NamedTensor() = default;
  NamedTensor(std::string n, std::vector<std::int64_t> s, std::vector<float> v)
      : name(std::move(n)), shape(std::move(s)), values(std::move(v)) {}
  // A U8 tensor.
  static NamedTensor of_bytes(std::string n, std::vector<std::int64_t> s, std::vector<std::uint8_t> b) {
    NamedTensor t(std::move(n), std::move(s), {});
    t.bytes = std::move(b);
    return t;
  }
};

struct CheckpointWriteOptions {
  DType dtype = DType::kF32;  // element type on disk
  int shards = 1;             // >1: model-0000i-of-0000N.safetensors + model.safetensors.index.json
};

// Writes DIR/config.json and the safetensors file(s): `values` in options.dtype, `bytes` as U8.
// Throws IoError.
void write_checkpoint(const std::string& dir, const MoeConfig& config, const std::vector<NamedTensor>& tensors,
                      const CheckpointWriteOptions& options);

// The distribution of each tensor of a random model: linear layers N(0, 1/fan_in), embedding
// N(0, 1), norms N(1, 0.05²) (1 plus a little noise so that tests see them used), biases
// N(0, 0.02²); in checkpoint order.
struct RandomTensorSpec {
  std::string name;                 // HF tensor name
  std::vector<std::int64_t> shape;  // row-major
  double mean = 0;
  double stddev = 1;
};
std::vector<RandomTensorSpec> random_tensor_specs(const MoeConfig& config);

// Every tensor of `config` with random values drawn from random_tensor_specs (std::mt19937_64).
std::vector<NamedTensor> random_tensors(const MoeConfig& config, std::uint64_t seed);

struct TinyModelOptions {
  MoeConfig config;               // shape of the model (byte vocabulary by default)
  std::uint64_t seed = 1;         // weight seed
  CheckpointWriteOptions write;   // dtype and sharding
};

// The config make-tiny writes for `config` (prepared by prepare_tiny_config): ferry's byte
// tokenizer for a vocabulary of 256, validated, and through config.json and back.
MoeConfig tiny_model_config(const MoeConfig& config);

// `ferry moe make-tiny`: a random-weight model of config.model_type's family in DIR.
void make_tiny_model(const std::string& dir, const TinyModelOptions& options);

}  // namespace ferry::moe
