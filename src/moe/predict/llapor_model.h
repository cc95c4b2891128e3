// LLaPor's networks, features and file format (inference in plain C++; training is in
// llapor_fit.cc). Per MoE layer l a small network maps features of the token at layer l to the
// probability that each expert of layers l+1 .. l+D is activated (D = lookahead).
//
// Networks: blocks of Linear -> GELU -> Dropout. A *shallow* net is one block and an output
// Linear; a *gated* net adds a residual block with a gating unit,
//   h <- h + GELU(W_r h + b_r) * sigmoid(W_g h + b_g),
// before the output Linear; sigmoid gives the D x E probabilities. Layers near the input and the
// output get shallow nets, middle layers gated ones (grouping: see LlaporFitOptions::groups).
//
// Features:
//   hidden mode:  PCA (whitened, fitted per layer on the trace) of the router input of layer l,
//                 optionally followed by the token's gate weights at l (0 for experts not chosen).
//   history mode: gate weights (0 for experts not chosen) of this token at layers l, l-1, ..,
//                 l-C+1, of each of the H previous tokens at layers l, l+1, .., l+D, and a one-hot of
//                 l. The features are relative to l, so one network can serve every layer
//                 (share_layers), which multiplies the training rows by the number of layers.
//
// Files (DIR): llapor.json (shape, grouping, fit report) and llapor.safetensors (pca.L.mean,
// pca.L.components, pca.L.variance, net.I.{in,res,gate,out}.{weight,bias}).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/predict/pca.h"

namespace ferry::moe {

enum class LlaporMode { kHidden, kHistory };
const char* llapor_mode_name(LlaporMode m);

struct LlaporShape {
  LlaporMode mode = LlaporMode::kHidden;
  int num_layers = 0;
  int num_experts = 0;
  int top_k = 0;
  int lookahead = 3;        // D
  int hidden_size = 0;      // hidden mode: router input width
  int pca_dims = 0;         // hidden mode
  bool routing_features = false;  // hidden mode: also this layer's gate weights (E values)
  int context_layers = 4;   // history mode: C
  int previous_tokens = 2;  // history mode: H
  int width = 128;          // hidden units of every block
};

struct LlaporDense {
  int in = 0, out = 0;
  std::vector<float> weight;  // [out x in]
  std::vector<float> bias;    // [out]
  void apply(const float* x, float* y) const;
};

struct LlaporNet {
  bool gated = false;
  LlaporDense in, res, gate, out;  // res and gate only when gated
};

// One token's routing as gate weights [layer x E] (0 = not chosen); experts without weights get 1/k.
void routing_to_weights(const std::vector<std::vector<int>>& experts, const std::vector<std::vector<float>>& weights,
                        int num_experts, std::vector<float>& out);

class LlaporModel {
 public:
  LlaporShape shape;
  std::vector<Pca> pca;           // [layer], hidden mode (empty entries for the last layer)
  std::vector<LlaporNet> nets;
  std::vector<int> net_of_layer;  // [layer] -> index into nets; -1 for the last layer
  nlohmann::json report;          // what fit measured (saved with the model)

  int feature_dims() const;
  // Hidden mode: features of the router input `x` [hidden_size] entering layer `layer`'s router and
  // (routing_features) the token's gate weights at that layer [E] (null reads as zeros).
  void hidden_features(int layer, const float* x, const float* gate_weights, float* out) const;
  // History mode: `current` and `previous[h]` are [layer x E] gate weights (previous[0] = the token
  // before); only layers <= `layer` of `current` are read; a null previous token reads as zeros.
  void history_features(int layer, const float* current, const std::vector<const float*>& previous,
                        float* out) const;
  // probs[d * E + e] for d < lookahead (rows past the last layer are left unspecified).
  void forward(int layer, const float* features, float* probs) const;

  void save(const std::string& dir) const;
  // Throws IoError (missing files) or FormatError (corrupt or inconsistent) naming the file.
  static LlaporModel load(const std::string& dir);
};

}  // namespace ferry::moe
