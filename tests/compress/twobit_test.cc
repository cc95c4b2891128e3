// twobit against a transcription of MXNet's quantize_2bit / dequantize_2bit kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "compress/codec_registry.h"
#include "compress/twobit_codec.h"
#include "compress/wire_format.h"
#include "core/error.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

// MXNet 1.x src/operator/contrib/gradient_compression-inl.h, quantize_2bit::Map, one block of
// 16 values per output float (here: uint32 word), literally.
void mxnet_quantize(std::vector<std::uint32_t>& out, const std::vector<float>& grad,
                    std::vector<float>& residual, float neg_threshold, float pos_threshold) {
  const int original_size = static_cast<int>(grad.size());
  out.assign((grad.size() + 15) / 16, 0);
  for (int out_block_id = 0; out_block_id < static_cast<int>(out.size()); ++out_block_id) {
    std::uint32_t* compr_block = out.data() + out_block_id;
    *compr_block = 0;
    const int start = out_block_id << 4;
    const int end = (start + 16 <= original_size) ? start + 16 : original_size;
    char* block_ptr = reinterpret_cast<char*>(compr_block);
    const std::uint8_t posbits[] = {0xc0, 0x30, 0x0c, 0x03};
    const std::uint8_t negbits[] = {0x80, 0x20, 0x08, 0x02};
    for (int i = start; i < end; i++) {
      char* curr_byte = block_ptr + ((i - start) >> 2);
      residual[i] += grad[i];
      if (residual[i] >= pos_threshold) {
        *curr_byte |= posbits[(i & 3)];
        residual[i] -= pos_threshold;
      } else if (residual[i] <= neg_threshold) {
        *curr_byte |= negbits[(i & 3)];
        residual[i] -= neg_threshold;
      }
    }
  }
}

// dequantize_2bit::Map.
void mxnet_dequantize(std::vector<float>& out, const std::vector<std::uint32_t>& in,
                      float neg_threshold, float pos_threshold) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char* ch_ptr = reinterpret_cast<const char*>(in.data() + (i >> 4));
    ch_ptr += ((i & 15) >> 2);
    const int posbits[] = {0xc0, 0x30, 0x0c, 0x03};
    const int negbits[] = {0x80, 0x20, 0x08, 0x02};
    const int col = i & 3;
    const std::uint8_t mask = posbits[col];
    const std::uint8_t negmask = negbits[col];
    const std::uint8_t masked = *ch_ptr & mask;
    if (masked == mask) {
      out[i] = pos_threshold;
    } else if (masked == negmask) {
      out[i] = neg_threshold;
    } else {
      out[i] = 0;
    }
  }
}

// Every encoder loop this CPU can run (AVX-512, AVX2, SSE2/scalar), each checked on its own.
std::vector<TwobitKernel> kernels() {
  std::vector<TwobitKernel> out;
  for (auto k : {TwobitKernel::kAvx512, TwobitKernel::kAvx2, TwobitKernel::kBaseline})
    if (twobit_kernel_supported(k)) out.push_back(k);
  return out;
}

void check_against_mxnet(std::size_t n, float t, int steps, TwobitKernel kernel) {
  SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)));
  TwobitCodec c({.threshold = t, .kernel = kernel}, testing::info_1d(n));
  std::vector<float> ref_residual(n, 0.0f), ref_decoded(n), decoded(n), acc(n, 1.0f);
  std::vector<std::uint32_t> ref_words;
  std::vector<std::byte> payload;
  for (int s = 0; s < steps; ++s) {
    const auto g = testing::normal_vector(n, 100 + s, 0.4f);
    c.encode(g, payload);
    mxnet_quantize(ref_words, g, ref_residual, -t, t);
    ASSERT_EQ(payload.size(), kHeaderBytes + 4 * ref_words.size());
    ASSERT_EQ(std::memcmp(payload.data() + kHeaderBytes, ref_words.data(), 4 * ref_words.size()), 0)
        << "n=" << n << " step " << s;
    ASSERT_EQ(std::memcmp(c.residual().data(), ref_residual.data(), 4 * n), 0)
        << "residual differs, n=" << n << " step " << s;
    mxnet_dequantize(ref_decoded, ref_words, -t, t);
    c.decode(payload, decoded);
    ASSERT_EQ(decoded, ref_decoded);
    std::vector<float> expect_acc = acc;
    for (std::size_t i = 0; i < n; ++i) expect_acc[i] += ref_decoded[i];
    c.decode_add(payload, acc);
    ASSERT_EQ(acc, expect_acc);
  }
}

// units=rms: each encode uses t = threshold x RMS of its gradient (computed here independently),
// so the words, the residual and the header's t equal MXNet's kernels run with that t, step by step.
TEST(Twobit, RmsUnitsEqualMxnetWithThePerCallThreshold) {
  const std::size_t n = 1000;
  const float k = 1.5f;
  for (TwobitKernel kernel : kernels()) {
    TwobitCodec c({.threshold = k, .units = TwobitUnits::kRms, .kernel = kernel}, testing::info_1d(n));
    std::vector<float> ref_residual(n, 0.0f);
    std::vector<std::uint32_t> ref_words;
    std::vector<std::byte> payload;
    for (int s = 0; s < 4; ++s) {
      const auto g = testing::normal_vector(n, 300 + s, 0.05f * (s + 1));  // a scale that changes
      double sq = 0;  // the RMS of what is quantised: residual + gradient
      for (std::size_t i = 0; i < n; ++i) {
        const float v = ref_residual[i] + g[i];
        sq += static_cast<double>(v) * v;
      }
      const float t = static_cast<float>(k * std::sqrt(sq / n));
      c.encode(g, payload);
      mxnet_quantize(ref_words, g, ref_residual, -t, t);
      EXPECT_EQ(read_header(payload, CodecId::kTwobit, n).aux, float_bits(t)) << "step " << s;
      ASSERT_EQ(std::memcmp(payload.data() + kHeaderBytes, ref_words.data(), 4 * ref_words.size()), 0) << s;
      ASSERT_EQ(std::memcmp(c.residual().data(), ref_residual.data(), 4 * n), 0) << s;
    }
  }
  // An all-zero gradient still sends a valid (positive) t and decodes to zeros.
  TwobitCodec z({.threshold = k, .units = TwobitUnits::kRms}, testing::info_1d(8));
  std::vector<std::byte> payload;
  std::vector<float> out(8, 1.0f);
  z.encode(std::vector<float>(8, 0.0f), payload);
  z.decode(payload, out);
  EXPECT_EQ(out, std::vector<float>(8, 0.0f));
}

// per=row: each row r of a (rows x cols) tensor is MXNet's quantisation with its own
// t_r = threshold x RMS(residual + gradient of that row), computed here independently, row by
// row with the reference kernels; the payload carries the rows' t and decodes to +-t_r.
TEST(Twobit, PerRowThresholdsAreMxnetRowByRow) {
  const std::size_t rows = 3, cols = 40, n = rows * cols;  // rows do not start on a word boundary
  const float k = 2.0f;
  TwobitCodec c({.threshold = k, .units = TwobitUnits::kRms, .per_row = true},
                TensorInfo{.numel = n, .shape = {3, 5, 8}});
  EXPECT_EQ(c.encoded_size_bytes(), kHeaderBytes + 4 * rows + 4 * ((n + 15) / 16));
  std::vector<std::vector<float>> ref_residual(rows, std::vector<float>(cols, 0.0f));
  std::vector<std::byte> payload;
  std::vector<float> acc(n, 1.0f);
  for (int s = 0; s < 3; ++s) {
    auto g = testing::normal_vector(n, 500 + s);
    for (std::size_t i = cols; i < 2 * cols; ++i) g[i] *= 0.01f;  // a row of another scale
    c.encode(g, payload);
    ASSERT_EQ(payload.size(), c.encoded_size_bytes());
    std::vector<float> decoded(n), expect_acc = acc;
    c.decode(payload, decoded);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::vector<float> gr(g.begin() + r * cols, g.begin() + (r + 1) * cols);
      double sq = 0;
      for (std::size_t j = 0; j < cols; ++j) {
        const float v = ref_residual[r][j] + gr[j];
        sq += static_cast<double>(v) * v;
      }
      const float t = static_cast<float>(k * std::sqrt(sq / cols));
      float sent_t = 0;
      std::memcpy(&sent_t, payload.data() + kHeaderBytes + 4 * r, 4);
      EXPECT_EQ(sent_t, t) << "row " << r << " step " << s;
      std::vector<std::uint32_t> words;
      mxnet_quantize(words, gr, ref_residual[r], -t, t);
      std::vector<float> ref_decoded(cols);
      mxnet_dequantize(ref_decoded, words, -t, t);
      for (std::size_t j = 0; j < cols; ++j) {
        ASSERT_EQ(decoded[r * cols + j], ref_decoded[j]) << "row " << r << " col " << j << " step " << s;
        ASSERT_EQ(c.residual()[r * cols + j], ref_residual[r][j]) << "row " << r << " col " << j;
        expect_acc[r * cols + j] += ref_decoded[j];
      }
    }
    c.decode_add(payload, acc);
    ASSERT_EQ(acc, expect_acc);
  }
  // The row of small gradients got a t of its own scale: it sends.
  std::vector<float> decoded(n);
  c.decode(payload, decoded);
  EXPECT_TRUE(std::any_of(decoded.begin() + cols, decoded.begin() + 2 * cols, [](float v) { return v != 0.0f; }));
  // A per-tensor payload, or a wrong row count, is refused without touching the output.
  TwobitCodec per_tensor({.threshold = k, .units = TwobitUnits::kRms}, TensorInfo{.numel = n, .shape = {3, 40}});
  std::vector<std::byte> other;
  per_tensor.encode(testing::normal_vector(n, 9), other);
  std::vector<float> untouched(n, 7.0f);
  EXPECT_THROW(c.decode(other, untouched), FormatError);
  EXPECT_THROW(per_tensor.decode(payload, untouched), FormatError);
  EXPECT_EQ(untouched, std::vector<float>(n, 7.0f));
  // Spec: per=row needs units=rms; a 1-D tensor has one row, the per-tensor format.
  EXPECT_EQ(canonical_codec_spec("twobit:threshold=2,units=rms,per=row"),
            "twobit:threshold=2,units=rms,per=row,momentum_at=worker,raw_1d=1");
  EXPECT_THROW(canonical_codec_spec("twobit:threshold=2,per=row"), InvalidArgument);
  EXPECT_THROW(canonical_codec_spec("twobit:units=rms,per=column"), InvalidArgument);
  TwobitCodec flat({.threshold = k, .units = TwobitUnits::kRms, .per_row = true}, testing::info_1d(n));
  EXPECT_EQ(flat.encoded_size_bytes(), TwobitCodec::size_bytes(n));
}

TEST(Twobit, UnitsKeyIsParsedAndUnknownUnitsAreRefused) {
  auto rms = make_codec("twobit:threshold=2,units=rms", testing::info_1d(4));
  std::vector<std::byte> payload;
  rms->encode(std::vector<float>{1, -1, 1, -1}, payload);  // RMS 1: t = 2
  EXPECT_EQ(read_header(payload, CodecId::kTwobit, 4).aux, float_bits(2.0f));
  try {
    make_codec("twobit:units=lbs", testing::info_1d(4));
    FAIL() << "units=lbs accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("units"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mxnet"), std::string::npos) << e.what();
  }
  // units=mxnet needs the batch: without one the codec builds (a server decodes with it) but
  // refuses to encode.
  auto no_batch = make_codec("twobit:threshold=0.5,units=mxnet", testing::info_1d(4));
  EXPECT_THROW(no_batch->encode(std::vector<float>{1, -1, 1, -1}, payload), InvalidArgument);
}

// MXNet's threshold is on the batch-summed gradient: on ferry's batch-mean gradient,
// units=mxnet with batch B must be units=absolute with threshold / B, payload and residual bit
// for bit, with a power-of-two B (exact) and with one that rounds.
TEST(Twobit, MxnetUnitsEqualAbsoluteThresholdOverBatch) {
  const std::size_t n = 1001;
  for (std::int64_t batch : {64, 48}) {
    TensorInfo info = testing::info_1d(n);
    info.batch = batch;
    auto mx = make_codec("twobit:threshold=0.5,units=mxnet", info);
    const float t = static_cast<float>(0.5 / static_cast<double>(batch));  // independent of the codec
    TwobitCodec abs({.threshold = t}, testing::info_1d(n));
    if (batch == 64) {
      EXPECT_EQ(t, 0.0078125f);
      auto spec = make_codec("twobit:threshold=0.0078125", testing::info_1d(n));  // MXNet's 0.5 at B = 64
      std::vector<std::byte> a, b;
      const auto g = testing::normal_vector(n, 5, 0.01f);
      spec->encode(g, a);
      TwobitCodec again({.threshold = 0.5f, .units = TwobitUnits::kMxnet}, info);
      again.encode(g, b);
      EXPECT_EQ(a, b);
    }
    std::vector<std::byte> pm, pa;
    for (int s = 0; s < 5; ++s) {
      const auto g = testing::normal_vector(n, 40 + s, 0.01f);
      mx->encode(g, pm);
      abs.encode(g, pa);
      ASSERT_EQ(pm, pa) << "batch " << batch << " step " << s;
      ASSERT_EQ(std::memcmp(mx->residual().data(), abs.residual().data(), 4 * n), 0) << batch << " " << s;
    }
    EXPECT_EQ(read_header(pm, CodecId::kTwobit, n).aux, float_bits(t));
  }
}

TEST(Twobit, BitForBitWithMxnetSmallSizes) {
  for (std::size_t n : {1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 100})
    for (auto k : kernels()) check_against_mxnet(n, 0.5f, 20, k);
}

TEST(Twobit, BitForBitWithMxnetLarge) {
  for (auto k : kernels()) check_against_mxnet(1000003, 0.25f, 3, k);
}

// Values on the decision boundaries and IEEE specials, spread over whole 16-value blocks so the
// vector paths (SSE2 / AVX2 / AVX-512, each that this CPU runs) see them in every lane.
TEST(Twobit, BitForBitWithMxnetSpecialValues) {
  const float t = 0.5f;
  const float specials[] = {t, -t, std::nextafter(t, 0.0f), -std::nextafter(t, 0.0f), 0.0f, -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(), 1e30f, -1e30f, 0.25f};
  const std::size_t n = 16 * 37 + 5;
  for (auto kernel : kernels()) {
    SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)));
    TwobitCodec c({.threshold = t, .kernel = kernel}, testing::info_1d(n));
    std::vector<float> ref_residual(n, 0.0f);
    std::vector<std::uint32_t> ref_words;
    std::vector<std::byte> payload;
    for (int s = 0; s < 6; ++s) {
      std::vector<float> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = specials[(i * 7 + s * 3) % std::size(specials)];
      c.encode(g, payload);
      mxnet_quantize(ref_words, g, ref_residual, -t, t);
      ASSERT_EQ(std::memcmp(payload.data() + kHeaderBytes, ref_words.data(), 4 * ref_words.size()),
                0)
          << "step " << s;
      ASSERT_EQ(std::memcmp(c.residual().data(), ref_residual.data(), 4 * n), 0) << "step " << s;
    }
  }
}

TEST(Twobit, HeaderCarriesThresholdAndSizeFormula) {
  for (std::size_t n : testing::edge_sizes()) {
    TwobitCodec c({.threshold = 0.75f}, testing::info_1d(n));
    std::vector<std::byte> payload;
    c.encode(testing::normal_vector(n, 1), payload);
    EXPECT_EQ(payload.size(), 16 + 4 * ((n + 15) / 16)) << n;
    EXPECT_EQ(c.encoded_size_bytes(), payload.size());
    PayloadHeader h = read_header(payload, CodecId::kTwobit, n);
    EXPECT_EQ(bits_float(h.aux), 0.75f);
  }
}

TEST(Twobit, ThresholdCrossingExamples) {
  // t = 1: 0.6 -> nothing, residual 0.6; +0.6 -> 1.2 >= 1 sends +1, residual 0.2.
  TwobitCodec c({.threshold = 1.0f}, testing::info_1d(3));
  std::vector<std::byte> p;
  std::vector<float> d(3);
  c.encode(std::vector<float>{0.6f, -1.0f, 2.5f}, p);
  c.decode(p, d);
  EXPECT_EQ(d, (std::vector<float>{0.0f, -1.0f, 1.0f}));
  EXPECT_FLOAT_EQ(c.residual()[0], 0.6f);
  EXPECT_FLOAT_EQ(c.residual()[1], 0.0f);
  EXPECT_FLOAT_EQ(c.residual()[2], 1.5f);  // only one t per step, the rest stays
  c.encode(std::vector<float>{0.6f, 0.0f, 0.0f}, p);
  c.decode(p, d);
  EXPECT_EQ(d, (std::vector<float>{1.0f, 0.0f, 1.0f}));
  EXPECT_NEAR(c.residual()[0], 0.2f, 1e-6);
  EXPECT_FLOAT_EQ(c.residual()[2], 0.5f);
}

}  // namespace
}  // namespace ferry::compress
