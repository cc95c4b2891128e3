// A language-modelling data set from a text corpus: bytes as tokens (vocabulary 256), cut into
// windows of `context` inputs whose labels are the same bytes one position later.
#pragma once

#include <cstdint>
#include <string>

#include "train/data/dataset.h"

namespace ferry::train {

struct TextDataOptions {
  std::string path;               // a text file or a folder ("" or "python-stdlib": the Python standard
                                  // library's .py sources on this machine, as `ferry moe pretrain` reads)
  Split split = Split::kTrain;    // train: the corpus but its last heldout_bytes; test: those
  std::int64_t context = 128;     // tokens per item
  std::int64_t limit = 0;         // keep only the first `limit` items; 0: all
  std::uint64_t max_bytes = 8u << 20;     // corpus bytes read (the first ones, files sorted by path)
  std::uint64_t heldout_bytes = 32u << 10;  // the test split: the corpus's last bytes
};

// Items are windows [i*context, (i+1)*context] of the split's bytes: images = int64 [N, context]
// (the inputs), labels = int64 [N, context] (the next byte of each input), num_classes = 256.
// A folder contributes its .py files when it is the standard library, every regular file
// otherwise. Throws IoError for a missing path or one without text, InvalidArgument when the
// split is shorter than one window.
Dataset load_text(const TextDataOptions& options);

}  // namespace ferry::train
