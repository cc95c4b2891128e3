// SentencePiece tokenizer of real checkpoints (Mixtral's tokenizer.model), when built with it.
#include <memory>
#include <string>

#include "core/error.h"
#include "moe/model/tokenizer.h"

#ifdef FERRY_MOE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace ferry::moe {

#ifdef FERRY_MOE_SENTENCEPIECE
namespace {

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) {
    auto status = sp_.Load(path);
    if (!status.ok()) FERRY_THROW(FormatError, "cannot load SentencePiece model '", path, "': ", status.ToString());
  }
  std::vector<std::int32_t> encode(const std::string& text) const override {
    std::vector<int> ids;
    auto status = sp_.Encode(text, &ids);
    if (!status.ok()) FERRY_THROW(FormatError, "SentencePiece encode failed: ", status.ToString());
    return {ids.begin(), ids.end()};
  }
  std::string decode(const std::vector<std::int32_t>& ids) const override {
    std::vector<int> v(ids.begin(), ids.end());
    std::string out;
    auto status = sp_.Decode(v, &out);
    if (!status.ok()) FERRY_THROW(FormatError, "SentencePiece decode failed: ", status.ToString());
    return out;
  }
  int vocab_size() const override { return sp_.GetPieceSize(); }
  int bos_id() const override { return sp_.bos_id(); }
  std::string name() const override { return "sentencepiece"; }

 private:
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path) {
  return std::make_unique<SentencePieceTokenizer>(model_path);
}
#else
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path) {
  FERRY_THROW(InvalidArgument, "'", model_path, "' needs SentencePiece, but ferry was built without libsentencepiece");
}
#endif

}  // namespace ferry::moe
