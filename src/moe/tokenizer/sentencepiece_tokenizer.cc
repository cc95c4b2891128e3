// SentencePiece tokenizer of real checkpoints (Mixtral's tokenizer.model). SentencePiece lives in
// a small shim library loaded with dlopen (see spm_shim.cc for why); this file is its RAII owner.
#include <dlfcn.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

#ifdef FERRY_MOE_SPM_SHIM_PATH
namespace {

// Owns the dlopen handle of the shim and its function table.
class SpmLibrary {
 public:
  SpmLibrary() {
    handle_ = dlopen(FERRY_MOE_SPM_SHIM_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!handle_) FERRY_THROW(IoError, "cannot load the SentencePiece shim '", FERRY_MOE_SPM_SHIM_PATH, "': ", dlerror());
    load = sym<void* (*)(const char*, char*, int)>("ferry_spm_load");
    free = sym<void (*)(void*)>("ferry_spm_free");
    encode = sym<int (*)(void*, const char*, int, int*, int)>("ferry_spm_encode");
    decode = sym<int (*)(void*, const int*, int, char*, int)>("ferry_spm_decode");
    vocab_size = sym<int (*)(void*)>("ferry_spm_vocab_size");
    bos_id = sym<int (*)(void*)>("ferry_spm_bos_id");
    eos_id = sym<int (*)(void*)>("ferry_spm_eos_id");
    unk_id = sym<int (*)(void*)>("ferry_spm_unk_id");
    piece = sym<int (*)(void*, int, char*, int)>("ferry_spm_piece");
    score = sym<float (*)(void*, int)>("ferry_spm_score");
    type = sym<int (*)(void*, int)>("ferry_spm_type");
  }
  ~SpmLibrary() {
    if (handle_) dlclose(handle_);
  }
  SpmLibrary(const SpmLibrary&) = delete;
  SpmLibrary& operator=(const SpmLibrary&) = delete;

  void* (*load)(const char*, char*, int) = nullptr;
  void (*free)(void*) = nullptr;
  int (*encode)(void*, const char*, int, int*, int) = nullptr;
  int (*decode)(void*, const int*, int, char*, int) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  int (*bos_id)(void*) = nullptr;
  int (*eos_id)(void*) = nullptr;
  int (*unk_id)(void*) = nullptr;
  int (*piece)(void*, int, char*, int) = nullptr;
  float (*score)(void*, int) = nullptr;
  int (*type)(void*, int) = nullptr;

 private:
  template <typename F>
  F sym(const char* name) {
    void* p = dlsym(handle_, name);
    if (!p) FERRY_THROW(IoError, "SentencePiece shim lacks ", name);
    return reinterpret_cast<F>(p);
  }
  void* handle_ = nullptr;
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : lib_(std::make_unique<SpmLibrary>()) {
    char err[512] = {0};
    sp_ = lib_->load(path.c_str(), err, sizeof err);
    if (!sp_) FERRY_THROW(FormatError, "cannot load SentencePiece model '", path, "': ", err);
  }
  ~SentencePieceTokenizer() override {
    if (sp_) lib_->free(sp_);
  }
  std::vector<std::int32_t> encode(const std::string& text) const override {
    std::vector<int> ids(text.size() + 16);
    int n = lib_->encode(sp_, text.data(), static_cast<int>(text.size()), ids.data(), static_cast<int>(ids.size()));
    if (n > static_cast<int>(ids.size())) {
      ids.resize(n);
      n = lib_->encode(sp_, text.data(), static_cast<int>(text.size()), ids.data(), n);
    }
    if (n < 0) FERRY_THROW(FormatError, "SentencePiece could not encode the text");
    return {ids.begin(), ids.begin() + n};
  }
  std::string decode(const std::vector<std::int32_t>& ids) const override {
    std::string out(ids.size() * 8 + 16, '\0');
    int n = lib_->decode(sp_, ids.data(), static_cast<int>(ids.size()), out.data(), static_cast<int>(out.size()));
    if (n > static_cast<int>(out.size())) {
      out.resize(n);
      n = lib_->decode(sp_, ids.data(), static_cast<int>(ids.size()), out.data(), n);
    }
    if (n < 0) FERRY_THROW(FormatError, "SentencePiece could not decode the ids");
    out.resize(n);
    return out;
  }
  int vocab_size() const override { return lib_->vocab_size(sp_); }
  int bos_id() const override { return lib_->bos_id(sp_); }
  std::string name() const override { return "sentencepiece"; }
  // Every piece with its score and type, as llama.cpp's converter reads them
  // (_create_vocab_sentencepiece).
  TokenizerVocab vocabulary() const override {
    TokenizerVocab v;
    v.kind = TokenizerVocab::Kind::kSentencePiece;
    const int n = vocab_size();
    std::string buf(64, '\0');
    for (int id = 0; id < n; ++id) {
      int len = lib_->piece(sp_, id, buf.data(), static_cast<int>(buf.size()));
      if (len > static_cast<int>(buf.size())) {
        buf.resize(len);
        len = lib_->piece(sp_, id, buf.data(), len);
      }
      v.tokens.emplace_back(buf.data(), static_cast<std::size_t>(len));
      v.scores.push_back(lib_->score(sp_, id));
      v.types.push_back(static_cast<TokenType>(lib_->type(sp_, id)));
    }
    v.bos_id = lib_->bos_id(sp_);
    v.eos_id = lib_->eos_id(sp_);
    v.unk_id = lib_->unk_id(sp_);
    return v;
  }

 private:
  std::unique_ptr<SpmLibrary> lib_;
  void* sp_ = nullptr;  // owned; freed through lib_
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
