#include "train/data/text_dataset.h"

#include <ATen/ops/from_blob.h>

#include <vector>

#include "core/corpus.h"
#include "core/error.h"

namespace ferry::train {

Dataset load_text(const TextDataOptions& o) {
  FERRY_REQUIRE_OP(o.context, >=, 1, "text data: context");
  FERRY_REQUIRE_OP(o.limit, >=, 0, "text data: limit");
  const bool stdlib = o.path.empty() || o.path == "python-stdlib";
  const std::string path = stdlib ? default_corpus_path() : o.path;
  if (path.empty()) FERRY_THROW(IoError, "text data: no Python standard library found on this machine; give --data FILE|DIR");
  CorpusOptions co;
  co.max_bytes = o.max_bytes;
  co.extension = stdlib ? ".py" : "";
  const std::string text = read_corpus(path, co);
  const std::string name = (stdlib ? std::string("python-stdlib") : path) + (o.split == Split::kTrain ? "/train" : "/test");
  const std::size_t heldout = std::min<std::size_t>(o.heldout_bytes, text.size() / 2);
  const std::size_t begin = o.split == Split::kTrain ? 0 : text.size() - heldout;
  const std::size_t len = o.split == Split::kTrain ? text.size() - heldout : heldout;
  const auto t = static_cast<std::size_t>(o.context);
  std::int64_t n = len > t ? static_cast<std::int64_t>((len - 1) / t) : 0;
  FERRY_REQUIRE(n >= 1, "text data '", name, "': ", len, " bytes hold no window of ", o.context, " + 1 tokens");
  if (o.limit > 0 && o.limit < n) n = o.limit;
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(n) * t), labels(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = static_cast<unsigned char>(text[begin + i]);
    labels[i] = static_cast<unsigned char>(text[begin + i + 1]);
  }
  Dataset d;
  d.name = name;
  d.num_classes = 256;
  d.images = at::from_blob(inputs.data(), {n, o.context}, at::kLong).clone();
  d.labels = at::from_blob(labels.data(), {n, o.context}, at::kLong).clone();
  return d;
}

}  // namespace ferry::train
