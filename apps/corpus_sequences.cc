#include "apps/corpus_sequences.h"

#include "core/corpus.h"
#include "core/error.h"
#include "moe/model/config.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::apps {

std::vector<std::vector<std::int32_t>> corpus_sequences(const std::string& model_dir, const std::string& corpus, int n,
                                                        int len, bool tail) {
  moe::MoeConfig c = moe::load_config(model_dir);
  auto tok = moe::load_tokenizer(model_dir, c.tokenizer, c.vocab_size);
  CorpusOptions co;
  co.max_bytes = 6u << 20;
  auto ids = tok->encode(read_corpus(corpus, co));
  const std::size_t need = static_cast<std::size_t>(n) * len;
  FERRY_REQUIRE(ids.size() >= need, "corpus '", corpus, "' has ", ids.size(), " tokens, need ", need);
  const std::size_t from = tail ? ids.size() - need : 0;
  std::vector<std::vector<std::int32_t>> out;
  for (int i = 0; i < n; ++i) out.emplace_back(ids.begin() + from + i * len, ids.begin() + from + (i + 1) * len);
  return out;
}

}  // namespace ferry::apps
