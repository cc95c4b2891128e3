// A C interface to SentencePiece, built as its own shared library and loaded with dlopen
// (RTLD_LOCAL | RTLD_DEEPBIND): libsentencepiece bundles and exports protobuf-lite symbols that
// clash with the libprotobuf libtorch links, crashing at start-up when both are linked directly.
#include <algorithm>
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
int ferry_spm_eos_id(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->eos_id(); }
int ferry_spm_unk_id(void* sp) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->unk_id(); }

// Writes up to cap bytes of piece `id`; returns its length (may exceed cap).
int ferry_spm_piece(void* sp, int id, char* text, int cap) {
  const std::string& piece = static_cast<sentencepiece::SentencePieceProcessor*>(sp)->IdToPiece(id);
  std::memcpy(text, piece.data(), std::min<std::size_t>(piece.size(), static_cast<std::size_t>(cap)));
  return static_cast<int>(piece.size());
}

float ferry_spm_score(void* sp, int id) { return static_cast<sentencepiece::SentencePieceProcessor*>(sp)->GetScore(id); }

// SentencePiece's type of piece `id`: 1 normal, 2 unknown, 3 control, 5 unused, 6 byte (as
// llama.cpp's converter asks them, in that order).
int ferry_spm_type(void* sp, int id) {
  const auto* p = static_cast<sentencepiece::SentencePieceProcessor*>(sp);
  if (p->IsUnknown(id)) return 2;
  if (p->IsControl(id)) return 3;
  if (p->IsUnused(id)) return 5;
  if (p->IsByte(id)) return 6;
  return 1;
}

}  // extern "C"
