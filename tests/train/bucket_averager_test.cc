// The DDP hook's C++ half (train/bucket_averager.h) against `ferry train`'s allreduce codecs
// (TensorAllreduceCodecs): for every codec, on world sizes 1-7 and odd tensor sizes, buckets
// regrouped from one step to the next average to the allreduce path's sum divided by the world,
// bit for bit, step after step (error feedback, PowerSGD's Q and random streams included); a
// worker's message that does not hold its records is an error naming the worker.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "comm/local/local_communicator.h"
#include "compress/codec_registry.h"
#include "compress/codec_spec.h"
#include "core/error.h"
#include "train/bucket_averager.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"

namespace ferry::train {
namespace {

const std::vector<std::vector<std::int64_t>> kShapes = {{7, 5}, {5}, {3, 4, 2}, {13}, {1}, {9, 3}, {4, 1, 3, 3}};

// Step -> the buckets (tensor indices) of that step. Step 0 sees the tensors in model order,
// so that the averager's first-seen tensor ids are the allreduce path's.
const std::vector<std::vector<std::vector<std::size_t>>> kBuckets = {
    {{0, 1, 2}, {3, 4, 5, 6}}, {{6, 5}, {0}, {4, 3, 2, 1}}, {{0, 1, 2, 3, 4, 5, 6}}};

std::vector<float> gradient(int rank, int step, std::size_t numel) {
  std::mt19937 rng(static_cast<unsigned>(1000 * rank + 10 * step + 1));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(numel);
  for (float& x : g) x = normal(rng);
  return g;
}

std::vector<std::string> every_codec() {
  std::vector<std::string> specs;
  for (const auto& name : compress::codec_names())
    if (!compress::codec_entry(name).identity) specs.push_back(name);
  for (const char* s : {"twobit:threshold=0.05", "twobit:threshold=0.05,raw_1d=0", "fp16:ef=1", "qsgd:ef=1,levels=3",
                        "topk:ratio=0.3", "randomk:ratio=0.3", "dgc:ratio=0.3", "powersgd:rank=2,raw_1d=0"})
    specs.push_back(s);
  for (auto& s : specs) s = compress::canonical_codec_spec_on_aggregate(s);  // the hook's spec
  return specs;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(BucketAverager, EqualsTheAllreduceCodecsOverTheWorldBitForBit) {
  torch::set_num_threads(1);
  for (const std::string& spec : every_codec()) {
    for (int world : {1, 2, 3, 4, 7}) {
      std::mutex mu;
      int mismatches = 0;
      comm::run_local_ranks(world, [&](comm::Communicator& comm) {
        std::vector<at::Tensor> tensors;
        for (const auto& shape : kShapes) tensors.push_back(torch::zeros(shape));
        FlatParams params(tensors);
        TensorAllreduceCodecs reference(spec, params, comm.rank());
        BucketAverager averager(spec);
        for (std::size_t step = 0; step < kBuckets.size(); ++step) {
          // The allreduce path: the whole model at once, then the mean.
          std::vector<std::vector<float>> grads;
          for (std::size_t i = 0; i < kShapes.size(); ++i) {
            grads.push_back(gradient(comm.rank(), static_cast<int>(step * 100 + i), params.numels()[i]));
            std::copy(grads[i].begin(), grads[i].end(), params.grads().begin() + params.offset(i));
          }
          reference.allreduce_sum(comm, params.grads());
          // The hook's path: bucket by bucket.
          for (const auto& bucket : kBuckets[step]) {
            std::vector<compress::Codec*> codecs;
            std::vector<float> flat;
            for (std::size_t i : bucket) {
              codecs.push_back(averager.codec_of(i, kShapes[i], comm.rank()));
              flat.insert(flat.end(), grads[i].begin(), grads[i].end());
            }
            averager.average(collectives_of(comm), codecs, flat);
            std::size_t at = 0;
            for (std::size_t i : bucket) {
              std::vector<float> want(params.grads().begin() + params.offset(i),
                                      params.grads().begin() + params.offset(i) + params.numels()[i]);
              for (float& x : want) x /= static_cast<float>(world);
              const std::vector<float> got(flat.begin() + at, flat.begin() + at + params.numels()[i]);
              at += params.numels()[i];
              if (!same_bits(got, want)) {
                std::lock_guard lock(mu);
                ADD_FAILURE() << spec << ", world " << world << ", rank " << comm.rank() << ", step " << step
                              << ", tensor " << i;
                ++mismatches;
              }
            }
          }
        }
      });
      ASSERT_EQ(mismatches, 0) << spec;
    }
  }
}

TEST(BucketAverager, AveragesDecodedPayloadsAndRefusesAMessageCutShort) {
  BucketAverager averager("twobit:threshold=0.5");
  compress::Codec* codec = averager.codec_of(42, {2, 2}, 0);
  EXPECT_EQ(averager.codec_of(42, {2, 2}, 0), codec);  // one codec per parameter
  std::vector<std::vector<std::byte>> sent;
  std::size_t cut = 0;
  BucketCollectives net;
  net.world_size = 2;
  net.message_name = "message of worker";
  net.allgather = [&](std::span<const std::byte> mine) {
    sent.emplace_back(mine.begin(), mine.end());
    std::vector<std::byte> other(mine.begin(), mine.end() - static_cast<std::ptrdiff_t>(cut));
    return std::vector<std::vector<std::byte>>{std::vector<std::byte>(mine.begin(), mine.end()), other};
  };
  std::vector<float> flat = {1.0f, -1.0f, 0.25f, 0.0f};
  std::span<compress::Codec* const> codecs(&codec, 1);
  averager.average(net, codecs, flat);
  EXPECT_EQ(flat, (std::vector<float>{0.5f, -0.5f, 0.0f, 0.0f}));  // two workers' 0.5, -0.5 averaged
  ASSERT_EQ(sent.size(), 1u);
  std::uint64_t length = 0;
  std::memcpy(&length, sent[0].data(), sizeof length);
  EXPECT_EQ(sent[0].size(), sizeof length + length);  // one record: this bucket's one payload
  cut = 1;
  flat = {1.0f, -1.0f, 0.25f, 0.0f};
  try {
    averager.average(net, codecs, flat);
    ADD_FAILURE() << "a message cut short was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("message of worker 1: record 0 of 1", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace ferry::train
