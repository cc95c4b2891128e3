// A C interface to SentencePiece, built as its own shared library and loaded with dlopen
// (RTLD_LOCAL | RTLD_DEEPBIND): libsentencepiece bundles and exports protobuf-lite symbols that
// clash with the libprotobuf libtorch links, crashing at start-up when both are linked directly.
#include <cstring>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

extern "C" {

// Returns a processor, or nullptr with the reason copied into err (err_len bytes).
void* ferry_spm_load(const char* path, char* err, int err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  auto status = sp->Load(path);
  if (!status.ok()) {
    std::strncpy(err, status.ToString().c_str(), static_cast<std::size_t>(err_len - 1));
    err[err_len - 1] = '\0';
    delete sp;
    return nullptr;
  }
  return sp;
}

void ferry_spm_free(void* sp) { delete static_cast<sentencepiece::SentencePieceProcessor*>(sp); }

// Writes up to cap ids; returns the number of ids (may exceed cap: call again), -1 on error.
int ferry_spm_encode(void* sp, const char* text, int len, int* ids, int cap) {
  std::vector<int> out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Encode(std::string(text, len), &out).ok()) return -1;
  for (int i = 0; i < static_cast<int>(out.size()) && i < cap; ++i) ids[i] = out[i];
  return static_cast<int>(out.size());
}

// Writes up to cap bytes; returns the text length (may exceed cap), -1 on error.
int ferry_spm_decode(void* sp, const int* ids, int n, char* text, int cap) {
  std::string out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(sp)->Decode(std::vector<int>(ids, ids + n), &out).ok())
    return -1;
  std::memcpy(text, out.data(), std::min<std::size_t>(out.size(), static_cast<std::size_t>(cap)));
  return static_cast<int>(out.size());
}

int ferry_spm_vocab_size(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->GetPieceSize(); }
int ferry_spm_bos_id(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->bos_id(); }

}  // extern "C"
