#include "train/data/text_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

class TextDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ferry_text_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  fs::path dir_;
};

TEST_F(TextDatasetTest, WindowsOfBytesAndTheirNextBytes) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>((i * 7 + 3) % 256);
  TextDataOptions o;
  o.path = write("corpus.txt", text);
  o.context = 16;
  o.heldout_bytes = 200;
  const Dataset train = load_text(o);
  // read_corpus appends a blank line ("\n\n") after each file: 1002 bytes, 802 for training.
  ASSERT_EQ(train.size(), (802 - 1) / 16);
  EXPECT_EQ(train.images.sizes(), (std::vector<std::int64_t>{50, 16}));
  EXPECT_EQ(train.num_classes, 256);
  for (std::int64_t i = 0; i < train.size(); ++i)
    for (std::int64_t j = 0; j < 16; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * 16 + j);
      ASSERT_EQ(train.images[i][j].item<std::int64_t>(), static_cast<unsigned char>(text[at]));
      ASSERT_EQ(train.labels[i][j].item<std::int64_t>(), static_cast<unsigned char>(text[at + 1]));
    }
  o.split = Split::kTest;
  const Dataset test = load_text(o);
  ASSERT_EQ(test.size(), (200 - 1) / 16);
  // The test split is the corpus's last 200 bytes: it starts at byte 802.
  EXPECT_EQ(test.images[0][0].item<std::int64_t>(), static_cast<unsigned char>(text[802]));
  o.limit = 3;
  EXPECT_EQ(load_text(o).size(), 3);
}

TEST_F(TextDatasetTest, MissingOrTooShortCorpusIsAClearError) {
  TextDataOptions o;
  o.path = (dir_ / "absent.txt").string();
  try {
    load_text(o);
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.txt"), std::string::npos) << e.what();
  }
  o.path = write("short.txt", "abc");
  o.context = 128;
  EXPECT_THROW(load_text(o), InvalidArgument);
}

TEST_F(TextDatasetTest, DefaultIsThePythonStandardLibrary) {
  TextDataOptions o;
  o.max_bytes = 1 << 16;
  o.limit = 4;
  const Dataset d = load_text(o);
  EXPECT_EQ(d.name, "python-stdlib/train");
  EXPECT_EQ(d.size(), 4);
}

}  // namespace
}  // namespace ferry::train
