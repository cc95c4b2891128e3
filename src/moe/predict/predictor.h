// Predictors of upcoming expert activations. A policy asks one, at layer l, for the probability
// that each expert of layers l+1 .. l+lookahead is activated by the tokens in flight. The
// next-gate predictor is the baseline here; learned predictors (LLaPor) implement the same
// interface.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ferry::moe {

struct DenseWeights;

// The router of every MoE layer, as float32 views (owned by the engine; valid while it lives).
struct RouterView {
  int num_layers = 0;
  int num_experts = 0;
  int hidden_size = 0;
  int top_k = 0;
  double rms_norm_eps = 1e-5;
  std::vector<const float*> router;    // [layer] -> [E x H]
  std::vector<const float*> ffn_norm;  // [layer] -> [H], the norm applied before the router
  // [layer] -> [E], the bias added to the scores for the choice (nullptr: none; route() in
  // moe/model/decoder_ops.h), and whether the scores are sigmoids (else a softmax). Groups are not
  // modelled: a prediction, not the routing.
  std::vector<const float*> bias;
  bool sigmoid = false;
  std::vector<const float*> logit_bias;  // [layer] -> [E], added to the logits (gpt-oss's router bias; nullptr: none)
};

struct PredictInput {
  int layer = 0;                     // the layer being executed
  const float* hidden = nullptr;     // residual stream entering layer `layer`'s MoE, [num_tokens x hidden_size]; may be null
  int num_tokens = 0;
  int hidden_size = 0;
  std::span<const int> experts_now;  // experts active at `layer`
  bool router_input = false;         // hidden is already layer `layer`'s router input (rmsnorm(x) * ffn_norm,
                                     // what traces record) rather than the residual stream
};

class Predictor {
 public:
  virtual ~Predictor() = default;
  virtual std::string name() const = 0;
  // out[d][e]: probability that expert e of layer layer+1+d is activated, d < lookahead. Rows past
  // the last layer are the next token's layers (layer+1+d - num_layers), returned only by
  // predictors that see past the current token (co-occurrence's cross-token table, the oracle);
  // the others stop at the last layer, so out.size() may be smaller than lookahead.
  virtual void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) = 0;
  // The routing of the token(s) in flight at `layer` (experts and their gate weights; weights may be
  // empty), reported once per layer after it routed. Predictors that learn from history use it.
  virtual void observe(int /*layer*/, std::span<const int> /*experts*/, std::span<const float> /*weights*/) {}
  // True when predict() returns rows past the last layer (the next token's).
  virtual bool sees_past_token() const { return false; }
  // A new sequence starts: forget the history of the previous one.
  virtual void reset_sequence() {}
};

// Next-gate (Pre-gated MoE, mixtral-offloading): applies layer l+d's norm and router to the current
// hidden state; an expert's score is the fraction of tokens whose top-k holds it.
std::unique_ptr<Predictor> make_next_gate_predictor(const RouterView* routers);
// Views of the routers and their norms of every MoE layer of `w` (valid while `w` lives).
RouterView router_view(const DenseWeights& w);

}  // namespace ferry::moe
