#include "core/path_checks.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/excerpt.h"
#include "core/file.h"
#include "message_of.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ferry_path_checks_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A FIFO, a device or a directory where a file is expected is named for what it is (stat only:
// opening a FIFO would block until a writer came), and MappedFile refuses them the same way.
TEST(PathChecks, SpecialFilesAreNamedAndAFifoIsNeverOpened) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_TRUE(has(message_of<IoError>([&] { require_regular_file(dir / "fifo", "model"); }), "is not a regular file (a FIFO)"));
  EXPECT_TRUE(has(message_of<IoError>([&] { MappedFile::open(dir / "fifo"); }), "(a FIFO)"));
  EXPECT_TRUE(has(message_of<IoError>([] { require_regular_file("/dev/zero", "x"); }), "(a character device)"));
  EXPECT_TRUE(has(message_of<IoError>([&] { require_regular_file(dir.path.string(), "x"); }), "(a directory)"));
  EXPECT_TRUE(has(message_of<IoError>([&] { require_regular_file(dir / "none", "config"); }), "config '"));
  EXPECT_TRUE(has(message_of<IoError>([&] { require_regular_file(dir / "none", "config"); }), "' does not exist"));
  std::ofstream(dir / "f") << "x";
  require_regular_file(dir / "f", "x");
  EXPECT_EQ(file_kind(dir / "f"), "a regular file");
}

// An output naming an input, however spelled (./, .., a symlink, a hard link), is refused; a new
// file next to the inputs is not.
TEST(PathChecks, OutputNamingAnInputIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path / "ck");
  std::ofstream(dir / "ck/config.json") << "{}";
  std::ofstream(dir / "ck/model.safetensors") << "x";
  fs::create_symlink(dir.path / "ck/config.json", dir.path / "sym");
  fs::create_hard_link(dir.path / "ck/model.safetensors", dir.path / "hard");
  const auto inputs = input_files(dir / "ck");
  EXPECT_EQ(inputs.size(), 2u);
  for (const std::string& out : {dir / "ck/config.json", dir / "ck/../ck/./model.safetensors", dir / "sym", dir / "hard"}) {
    const std::string m = message_of<InvalidArgument>([&] { require_output_not_input(out, "--out", inputs, "--model"); });
    EXPECT_TRUE(has(m, "--out '" + out + "' is the input file")) << m;
    EXPECT_TRUE(has(m, "(--model)")) << m;
  }
  require_output_not_input(dir / "ck/new.gguf", "--out", inputs, "--model");
  require_output_not_input(dir / "other.gguf", "--out", inputs, "--model");
  EXPECT_EQ(input_files(dir / "ck/config.json").size(), 1u);
  EXPECT_TRUE(input_files(dir / "missing").empty());
}

TEST(PathChecks, ProgramsMustBeExecutableFiles) {
  TempDir dir;
  require_program("sh", "program");
  require_program("/bin/sh", "program");
  EXPECT_TRUE(has(message_of<InvalidArgument>([] { require_program("no-such-program-ferry", "program"); }), "not found in PATH"));
  EXPECT_TRUE(has(message_of<InvalidArgument>([&] { require_program(dir / "none", "program"); }), "does not exist"));
  std::ofstream(dir / "plain") << "x";
  EXPECT_TRUE(has(message_of<InvalidArgument>([&] { require_program(dir / "plain", "program"); }), "is not executable"));
  EXPECT_TRUE(has(message_of<InvalidArgument>([&] { require_program(dir.path.string() + "/", "program"); }), "(a directory)"));
}

// Echoed strings are bounded and one line: control bytes and bytes that are not UTF-8 escaped,
// long ones cut at a character boundary with their length.
TEST(Excerpt, BoundsEscapesAndKeepsUtf8) {
  EXPECT_EQ(excerpt("blk.0.ffn_up_exps.weight"), "blk.0.ffn_up_exps.weight");
  EXPECT_EQ(excerpt("a\nb\tc\x01"), "a\\nb\\tc\\x01");
  EXPECT_EQ(excerpt("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(excerpt("b\xC3("), "b\\xC3(");
  EXPECT_EQ(excerpt("\xF8\x88"), "\\xF8\\x88");
  const std::string big(1 << 20, 'x');
  const std::string e = excerpt(big);
  EXPECT_EQ(e, std::string(kExcerptBytes, 'x') + "\xE2\x80\xA6(1048576 bytes)");
  // A cut inside a two-byte character keeps the character whole or drops it, never half.
  EXPECT_EQ(excerpt("ab\xC3\xA9", 3), "ab\xE2\x80\xA6(4 bytes)");
}

}  // namespace
}  // namespace ferry
