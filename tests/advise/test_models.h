// Synthetic model profiles for the cost-model tests (no profile run: the formulas only).
#pragma once

#include <string>
#include <vector>

#include "advise/cost_model.h"

namespace ferry::advise::testing {

// Tensors of `numels`, forward/backward split evenly, times for batch 64.
inline ModelProfile synthetic_model(const std::string& name, std::vector<std::size_t> numels, double forward_s,
                                    double backward_s, double update_s = 0) {
  ModelProfile m;
  m.name = name;
  m.device = "local";
  m.batch = 64;
  m.forward_s = forward_s;
  m.backward_s = backward_s;
  m.update_s = update_s;
  for (std::size_t i = 0; i < numels.size(); ++i)
    m.tensors.push_back({"t" + std::to_string(i), numels[i], double(i) / numels.size(),
                         double(numels.size() - i) / numels.size(), {}});
  return m;
}

inline Scenario scenario(const ModelProfile& m, int workers, int servers, train::Topology topo, double bandwidth,
                         double latency = 50e-6) {
  Scenario sc;
  sc.model = &m;
  sc.device = device_profile("local");
  sc.batch = 64;
  sc.workers = workers;
  sc.servers = servers;
  sc.topology = topo;
  sc.link = LinkModel{bandwidth, latency, 0};
  std::vector<std::size_t> numels;
  for (const auto& t : m.tensors) numels.push_back(t.numel);
  sc.codec = sc.full = uncompressed_cost(numels);
  return sc;
}

}  // namespace ferry::advise::testing
