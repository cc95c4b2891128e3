// An in-memory labelled image data set, and a batch drawn from one.
// Tensors are at::Tensor (the same type as torch::Tensor), so this header stays light.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::train {

// Which part of a data set to load.
enum class Split { kTrain, kTest };

// A whole data set held in memory.
struct Dataset {
  std::string name;          // for messages and logs, e.g. "fashion-mnist/train"
  at::Tensor images;         // float32 [N, C, H, W], already normalised; text: int64 tokens [N, T]
  at::Tensor labels;         // int64 [N], values in [0, num_classes); text: next tokens [N, T]
  std::int64_t num_classes = 10;  // number of label values

  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// Some items of a data set: what one worker computes on in one step.
struct Batch {
  at::Tensor images;  // float32 [B, C, H, W]; text: int64 [B, T]
  at::Tensor labels;  // int64 [B]; text: int64 [B, T]

  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// How raw 8-bit pixels become inputs: x = (pixel/255 - mean[c]) / stddev[c].
struct Normalization {
  std::vector<float> mean = {0.2860f};  // per channel (one value: all channels); Fashion-MNIST
  std::vector<float> stddev = {0.3530f};  // per channel (one value: all channels), > 0
};

// Builds a Dataset from raw unsigned-byte pixels laid out [N, C, H, W] and labels [N].
// Throws InvalidArgument when sizes disagree or a label is out of range.
Dataset make_dataset_from_bytes(std::string name, const std::vector<std::uint8_t>& pixels,
                                const std::vector<std::uint8_t>& labels, std::int64_t channels,
                                std::int64_t height, std::int64_t width,
                                std::int64_t num_classes, const Normalization& norm);

// Builds a Dataset from float inputs laid out [N, C, H, W] (used as they are) and labels.
Dataset make_dataset_from_floats(std::string name, const std::vector<float>& inputs,
                                 const std::vector<std::int64_t>& labels, std::int64_t channels,
                                 std::int64_t height, std::int64_t width,
                                 std::int64_t num_classes);

// The items `indices` of `data`, in that order (copies). Indices must be in [0, data.size()).
Batch gather(const Dataset& data, const std::vector<std::int64_t>& indices);

// The first `count` items of `data` (a view, no copy); count <= 0 or >= size: all of it.
Dataset head(const Dataset& data, std::int64_t count);

}  // namespace ferry::train
