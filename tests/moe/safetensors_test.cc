#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/model/safetensors.h"
#include "moe/model/weights.h"
#include "moe/store/host_pool.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// Writes a safetensors file from a raw header string and `data_bytes` zero bytes of data.
void write_raw(const std::string& path, const std::string& header, std::size_t data_bytes,
               std::uint64_t header_len_override = 0) {
  std::ofstream out(path, std::ios::binary);
  std::uint64_t n = header_len_override ? header_len_override : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  std::string zeros(data_bytes, '\0');
  out << zeros;
}

// Expects FormatError whose message contains every fragment.
template <typename... Frags>
void expect_format_error(const std::string& path, Frags... frags) {
  try {
    SafetensorsFile::open(path);
    FAIL() << "no error for " << path;
  } catch (const FormatError& e) {
    std::string msg = e.what();
    for (const char* f : {frags...}) EXPECT_NE(msg.find(f), std::string::npos) << msg << " lacks '" << f << "'";
    EXPECT_NE(msg.find(path), std::string::npos) << "message must name the file: " << msg;
  }
}

TEST(Safetensors, RoundTripAllDtypes) {
  TempDir dir;
  std::vector<float> v = {1.0f, -2.5f, 0.15625f, 3.0e-3f, 65504.f, -0.0f};
  SafetensorsWriter w;
  w.add_f32("a", DType::kF32, {2, 3}, v.data());
  w.add_f32("b", DType::kBF16, {6}, v.data());
  w.add_f32("c", DType::kF16, {3, 2}, v.data());
  w.set_metadata("format", "pt");
  w.write(dir / "m.safetensors");
  auto f = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  for (const char* name : {"a", "b", "c"}) {
    const TensorInfo& t = f.at(name);
    std::vector<float> back(6);
    convert_to_f32(t.dtype, f.data(t), back.data(), 6);
    const double tol = t.dtype == DType::kF32 ? 0 : (t.dtype == DType::kBF16 ? 1e-2 : 1e-3);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(back[i], v[i], tol * std::abs(v[i]) + 1e-6) << name << i;
  }
  EXPECT_EQ(f.at("a").shape, (std::vector<std::int64_t>{2, 3}));
}

TEST(Safetensors, TruncatedBelowHeaderLength) {
  TempDir dir;
  std::ofstream(dir / "t.safetensors", std::ios::binary) << "abc";
  expect_format_error(dir / "t.safetensors", "truncated");
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  TempDir dir;
  write_raw(dir / "h.safetensors", "{}", 0, 1000);
  expect_format_error(dir / "h.safetensors", "header length 1000", "past end of file");
}

TEST(Safetensors, InvalidJson) {
  TempDir dir;
  write_raw(dir / "j.safetensors", "{\"a\": [", 0);
  expect_format_error(dir / "j.safetensors", "not valid JSON");
}

TEST(Safetensors, OverlappingSpans) {
  TempDir dir;
  write_raw(dir / "o.safetensors",
            R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
            R"( "y": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
            24);
  expect_format_error(dir / "o.safetensors", "'x'", "'y'", "overlap");
}

TEST(Safetensors, ShapeDtypeMismatch) {
  TempDir dir;
  write_raw(dir / "s.safetensors", R"({"x": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 24]}})", 24);
  expect_format_error(dir / "s.safetensors", "'x'", "[2, 3]", "12 bytes", "24 bytes");
}

TEST(Safetensors, UnknownDtype) {
  TempDir dir;
  write_raw(dir / "d.safetensors", R"({"x": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}})", 2);
  expect_format_error(dir / "d.safetensors", "unknown dtype 'Q4_K'");
}

TEST(Safetensors, DataTruncated) {
  TempDir dir;
  write_raw(dir / "p.safetensors", R"({"x": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})", 20);
  expect_format_error(dir / "p.safetensors", "'x'", "past the end");
}

TEST(Safetensors, MissingFileIsIoError) {
  EXPECT_THROW(SafetensorsFile::open("/nonexistent/model.safetensors"), IoError);
}

TEST(Checkpoint, MissingTensorAndWrongShapeNamed) {
  TempDir dir;
  MoeConfig c = testing::tiny_config();
  auto tensors = random_tensors(c, 3);
  TensorNames n(c);
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [&](const NamedTensor& t) { return t.name == n.expert(1, 5, 2); }),
                tensors.end());
  write_checkpoint(dir.path(), c, tensors, {});
  auto ck = Checkpoint::open(dir.path());
  try {
    ck->at(n.expert(1, 5, 2));
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.block_sparse_moe.experts.5.w2.weight"), std::string::npos);
  }
  try {
    ck->expect(n.router(0), {4, 32});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("[8, 32]"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, ShardedEqualsSingle) {
  TempDir dir;
  MoeConfig c = testing::tiny_config();
  auto tensors = random_tensors(c, 4);
  write_checkpoint(dir / "one", c, tensors, {DType::kBF16, 1});
  write_checkpoint(dir / "three", c, tensors, {DType::kBF16, 3});
  auto a = Checkpoint::open(dir / "one");
  auto b = Checkpoint::open(dir / "three");
  EXPECT_EQ(b->files().size(), 3u);
  for (const auto& t : tensors) {
    std::vector<float> x(t.values.size()), y(t.values.size());
    a->read_f32(t.name, t.shape, x.data());
    b->read_f32(t.name, t.shape, y.data());
    ASSERT_EQ(x, y) << t.name;
  }
}

TEST(Checkpoint, ConfigErrorsAreClear) {
  TempDir dir;
  std::ofstream(dir / "config.json") << R"({"model_type": "mixtral", "vocab_size": 10})";
  try {
    load_config(dir.path());
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Checkpoint::open(dir / "absent"), IoError);
}

// NaN or Inf in a weight, and rms_norm_eps < 0 or rope_theta <= 0 in the config, made garbage
// text; they are refused at load, naming the tensor or the field.
TEST(Checkpoint, NonFiniteWeightsAndBadNormOrRopeAreRefused) {
  TempDir dir;
  MoeConfig c = testing::tiny_config();
  TensorNames n(c);
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    auto tensors = random_tensors(c, 5);
    for (auto& t : tensors)
      if (t.name == n.expert(1, 2, 3)) t.values[7] = bad;
    write_checkpoint(dir / "w", c, tensors, {DType::kBF16, 1});
    auto ck = Checkpoint::open(dir / "w");
    std::vector<float> out(static_cast<std::size_t>(c.intermediate_size) * c.hidden_size);
    try {
      ck->read_f32(n.expert(1, 2, 3), {c.intermediate_size, c.hidden_size}, out.data());
      ADD_FAILURE() << "read " << bad;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(n.expert(1, 2, 3)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("at element 7: weights must be finite"), std::string::npos) << e.what();
    }
    // Every other tensor still reads.
    ck->read_f32(n.expert(1, 2, 1), {c.intermediate_size, c.hidden_size}, out.data());
  }
  for (const auto& [key, value, want] : {std::tuple{"rms_norm_eps", -1e-5, "rms_norm_eps must be finite and at least 0"},
                                         std::tuple{"rope_theta", 0.0, "rope_theta must be finite and greater than 0"},
                                         std::tuple{"rope_theta", -10000.0, "rope_theta must be"}}) {
    nlohmann::json j = config_to_json(c);
    j[key] = value;
    try {
      config_from_json(j, "cfg");
      ADD_FAILURE() << key << " = " << value;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

// A config whose sizes are far beyond its files' (hidden_size 1e9) allocated before the tensors
// were checked (std::bad_alloc); the shapes are checked first.
TEST(Checkpoint, HugeConfigSizesFailOnTheFirstTensorNotInAnAllocation) {
  TempDir dir;
  MoeConfig c = testing::tiny_config();
  write_checkpoint(dir.path(), c, random_tensors(c, 6), {});
  nlohmann::json j = config_to_json(c);
  j["hidden_size"] = 1000000000;
  j["head_dim"] = c.head_dim;
  std::ofstream(dir / "config.json") << j.dump();
  auto ck = Checkpoint::open(dir.path());
  try {
    load_dense_weights(*ck);
    ADD_FAILURE() << "loaded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("1000000000"), std::string::npos) << e.what();
  }
  try {
    HostPool::load(*ck);
    ADD_FAILURE() << "loaded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("1000000000"), std::string::npos) << e.what();
  }
}

// Found by UBSan while writing the fuzz seeds: an empty F32 tensor made the dtype conversion
// call memcpy with a null buffer (undefined even for 0 bytes).
TEST(Safetensors, EmptyTensorRoundTrip) {
  TempDir dir;
  const float one = 2.0f;
  SafetensorsWriter w;
  w.add_f32("empty", DType::kF32, {0, 3}, nullptr);
  w.add_f32("one", DType::kF32, {1}, &one);
  w.write(dir / "e.safetensors");
  auto f = SafetensorsFile::open(dir / "e.safetensors");
  EXPECT_EQ(f.at("empty").numel(), 0);
  EXPECT_EQ(f.at("empty").nbytes(), 0u);
  float back = 0;
  convert_to_f32(DType::kF32, f.data(f.at("one")), &back, 1);
  EXPECT_EQ(back, 2.0f);
  convert_to_f32(DType::kF32, nullptr, nullptr, 0);  // nothing to convert: no access at all
}

}  // namespace
}  // namespace ferry::moe
