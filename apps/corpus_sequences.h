// Token sequences cut from a text corpus, for the `ferry moe` commands that record routing
// (pretrain's statistics, trace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::apps {

// `n` sequences of `len` tokens of `corpus`, tokenised by the model in `model_dir`: from its tail
// (held out from pretraining) when `tail`, else from its start. Throws InvalidArgument when the
// corpus is too short.
std::vector<std::vector<std::int32_t>> corpus_sequences(const std::string& model_dir, const std::string& corpus, int n,
                                                        int len, bool tail);

}  // namespace ferry::apps
