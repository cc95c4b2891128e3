// Text corpora for pretraining, prompts and traces: a file, or every matching file under a folder
// (sorted, so runs are reproducible).
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

struct CorpusOptions {
  std::uint64_t max_bytes = 8u << 20;  // stop after this many bytes
  std::string extension = ".py";       // files taken from a folder (empty = every regular file)
  std::uint64_t max_file_bytes = 1u << 20;  // skip larger files (generated tables)
};

// Concatenated text (files separated by a blank line). Throws IoError when the path is missing or
// yields no text.
std::string read_corpus(const std::string& path, const CorpusOptions& options = {});

// The Python standard library sources found on this machine ("" when none).
std::string default_corpus_path();

}  // namespace ferry
