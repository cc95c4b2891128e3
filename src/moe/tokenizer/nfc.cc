#include "moe/tokenizer/nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "core/error.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

const icu::Normalizer2& nfc_instance() {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status) || !n) FERRY_THROW(IoError, "ICU has no NFC data: ", u_errorName(status));
  return *n;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
  const icu::Normalizer2& nfc = nfc_instance();
  std::string out;
  out.reserve(text.size());
  for (const Utf8Run& run : utf8_runs(text)) {
    const std::string_view piece = text.substr(run.begin, run.end - run.begin);
    if (!run.valid) {
      out += piece;
      continue;
    }
    if (piece.size() > 0x7fffffff) FERRY_THROW(InvalidArgument, "NFC: a text run of ", piece.size(), " bytes is beyond ICU's 2 GiB");
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece sp(piece.data(), static_cast<std::int32_t>(piece.size()));
    if (nfc.isNormalizedUTF8(sp, status) && U_SUCCESS(status)) {
      out += piece;
      continue;
    }
    status = U_ZERO_ERROR;
    icu::StringByteSink<std::string> sink(&out);
    nfc.normalizeUTF8(0, sp, sink, nullptr, status);
    FERRY_CHECK(U_SUCCESS(status), "ICU NFC of valid UTF-8 failed: ", u_errorName(status));
  }
  return out;
}

}  // namespace ferry::moe
