#include "train/data/mnist_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include "core/error.h"
#include "train/data/cifar10_loader.h"
#include "train/data/dataset_source.h"
#include "train/data/gzip_file.h"
#include "train/data/idx_file.h"
#include "train/data/synthetic_dataset.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

class MnistLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ferry_mnist_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a tiny MNIST-format split: n images of 28x28 with pixel (i + k) % 256, labels i % 10.
  void write_split(const std::string& prefix, std::int64_t n_images, std::int64_t n_labels,
                   bool gz) {
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(n_images * 784));
    for (std::size_t k = 0; k < pixels.size(); ++k)
      pixels[k] = static_cast<std::uint8_t>((k / 784 + k % 784) % 256);
    std::vector<std::uint8_t> labels(static_cast<std::size_t>(n_labels));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
    const std::string ext = gz ? ".gz" : "";
    write_idx_file((dir_ / (prefix + "-images-idx3-ubyte" + ext)).string(), {n_images, 28, 28},
                   pixels, gz);
    write_idx_file((dir_ / (prefix + "-labels-idx1-ubyte" + ext)).string(), {n_labels}, labels,
                   gz);
  }

  fs::path dir_;
};

TEST_F(MnistLoaderTest, LoadsGzipAndPlainNormalised) {
  write_split("train", 12, 12, true);
  write_split("t10k", 5, 5, false);
  MnistOptions o;
  o.dir = dir_.string();
  Dataset train = load_mnist(o);
  o.split = Split::kTest;
  Dataset test = load_mnist(o);
  ASSERT_EQ(train.size(), 12);
  ASSERT_EQ(test.size(), 5);
  EXPECT_EQ(train.images.sizes(), (std::vector<std::int64_t>{12, 1, 28, 28}));
  EXPECT_EQ(train.images.scalar_type(), at::kFloat);
  EXPECT_EQ(train.labels.scalar_type(), at::kLong);
  EXPECT_EQ(train.labels[7].item<std::int64_t>(), 7);
  // Item 3, pixel (row 1, col 2) = linear 30: raw (3 + 30) % 256 = 33.
  const float expect = (33.0f / 255.0f - 0.2860f) / 0.3530f;
  EXPECT_NEAR(train.images[3][0][1][2].item<float>(), expect, 1e-6);
}

TEST_F(MnistLoaderTest, LimitKeepsFirstItems) {
  write_split("train", 12, 12, true);
  MnistOptions o;
  o.dir = dir_.string();
  o.limit = 4;
  EXPECT_EQ(load_mnist(o).size(), 4);
}

TEST_F(MnistLoaderTest, CountMismatchNamesBothFiles) {
  write_split("train", 12, 11, true);
  MnistOptions o;
  o.dir = dir_.string();
  try {
    load_mnist(o);
    ADD_FAILURE() << "no exception";
  } catch (const FormatError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("train-images-idx3-ubyte.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("train-labels-idx1-ubyte.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("12 images"), std::string::npos) << m;
    EXPECT_NE(m.find("11 labels"), std::string::npos) << m;
  }
}

TEST_F(MnistLoaderTest, MissingDirectoryAndFilesAreIoErrors) {
  MnistOptions o;
  o.dir = (dir_ / "absent").string();
  EXPECT_THROW(load_mnist(o), IoError);
  write_split("train", 3, 3, true);
  fs::remove(dir_ / "train-labels-idx1-ubyte.gz");
  o.dir = dir_.string();
  try {
    load_mnist(o);
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("train-labels-idx1-ubyte.gz"), std::string::npos)
        << e.what();
  }
}

TEST_F(MnistLoaderTest, ImagesFileInPlaceOfLabelsIsWrongMagic) {
  write_split("train", 3, 3, true);
  fs::copy_file(dir_ / "train-images-idx3-ubyte.gz", dir_ / "train-labels-idx1-ubyte.gz",
                fs::copy_options::overwrite_existing);
  MnistOptions o;
  o.dir = dir_.string();
  EXPECT_THROW(load_mnist(o), FormatError);
}

TEST(FashionMnist, RealFilesLoadWhenInstalled) {
  if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << kFashionMnistDir;
  MnistOptions o;
  Dataset train = load_mnist(o);
  o.split = Split::kTest;
  Dataset test = load_mnist(o);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images.sizes(), (std::vector<std::int64_t>{10000, 1, 28, 28}));
  // The normalisation constants are the training set's statistics.
  EXPECT_NEAR(train.images.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(train.images.std().item<double>(), 1.0, 0.01);
  // Fashion-MNIST is balanced: 6000 of each class.
  for (int c = 0; c < 10; ++c) EXPECT_EQ(train.labels.eq(c).sum().item<std::int64_t>(), 6000);
}

TEST(Synthetic, DeterministicForASeed) {
  SyntheticOptions o;
  o.size = 64;
  Dataset a = make_synthetic_dataset(o);
  Dataset b = make_synthetic_dataset(o);
  o.seed = 2;
  Dataset c = make_synthetic_dataset(o);
  EXPECT_TRUE(a.images.equal(b.images));
  EXPECT_TRUE(a.labels.equal(b.labels));
  EXPECT_FALSE(a.images.equal(c.images));
  EXPECT_EQ(a.images.sizes(), (std::vector<std::int64_t>{64, 1, 28, 28}));
  EXPECT_GE(a.labels.min().item<std::int64_t>(), 0);
  EXPECT_LT(a.labels.max().item<std::int64_t>(), 10);
}

TEST_F(MnistLoaderTest, Cifar10BinaryLoadsAndRejectsPartialRecords) {
  std::vector<std::uint8_t> bytes;
  for (int r = 0; r < 4; ++r) {
    bytes.push_back(static_cast<std::uint8_t>(r));
    for (int k = 0; k < 3072; ++k) bytes.push_back(static_cast<std::uint8_t>(k / 1024 * 100));
  }
  write_maybe_gzip((dir_ / "test_batch.bin").string(), bytes, false);
  Cifar10Options o;
  o.dir = dir_.string();
  o.split = Split::kTest;
  Dataset d = load_cifar10(o);
  ASSERT_EQ(d.size(), 4);
  EXPECT_EQ(d.images.sizes(), (std::vector<std::int64_t>{4, 3, 32, 32}));
  EXPECT_EQ(d.labels[3].item<std::int64_t>(), 3);
  // Channel 2 (blue) holds raw 200.
  EXPECT_NEAR(d.images[1][2][5][5].item<float>(), (200.0f / 255 - 0.4465f) / 0.2616f, 1e-5);
  bytes.pop_back();
  write_maybe_gzip((dir_ / "test_batch.bin").string(), bytes, false);
  EXPECT_THROW(load_cifar10(o), FormatError);
  o.split = Split::kTrain;
  EXPECT_THROW(load_cifar10(o), IoError);
}

TEST_F(MnistLoaderTest, LoadDatasetPicksTheFormat) {
  write_split("train", 6, 6, true);
  DatasetSourceOptions o;
  o.source = dir_.string();
  EXPECT_EQ(load_dataset(o).images.sizes(), (std::vector<std::int64_t>{6, 1, 28, 28}));
  std::vector<std::uint8_t> record(3073, 1);
  write_maybe_gzip((dir_ / "test_batch.bin").string(), record, false);
  o.split = Split::kTest;
  EXPECT_EQ(load_dataset(o).images.sizes(), (std::vector<std::int64_t>{1, 3, 32, 32}));
}

TEST(Synthetic, SourceTrainAndTestShareClassesNotItems) {
  DatasetSourceOptions o;
  o.source = "synthetic";
  o.synthetic_size = 200;
  Dataset train = load_dataset(o);
  o.split = Split::kTest;
  Dataset test = load_dataset(o);
  ASSERT_EQ(train.size(), 200);
  ASSERT_EQ(test.size(), 200);
  EXPECT_FALSE(train.images.equal(test.images));
  // Items of one class scatter around one pattern in both: train class means are closer to
  // the test items of their class than to those of any other class.
  auto class_mean = [](const Dataset& d, int c) {
    return d.images.index_select(0, d.labels.eq(c).nonzero().flatten()).mean(0);
  };
  for (int c = 0; c < 10; ++c) {
    const at::Tensor train_mean = class_mean(train, c);
    const double same = train_mean.sub(class_mean(test, c)).abs().mean().item<double>();
    const double other =
        train_mean.sub(class_mean(test, (c + 1) % 10)).abs().mean().item<double>();
    EXPECT_LT(same, other) << "class " << c;
  }
  o.source = "/nonexistent/data";
  EXPECT_THROW(load_dataset(o), IoError);
}

}  // namespace
}  // namespace ferry::train
