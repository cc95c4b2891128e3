#include "advise/scenario_spec.h"

namespace ferry::advise {

ScenarioSpec spec_of(const RunRecord& r) {
  ScenarioSpec s;
  s.algo = r.algo;
  s.model = r.model;
  s.device = "local";
  s.batch = r.batch;
  s.workers = r.workers;
  s.servers = r.servers;
  s.topology = train::parse_topology(r.topology);
  s.bandwidth_bytes_per_s = r.bandwidth_bytes_per_s;
  s.latency_s = r.latency_s;
  s.codec = r.codec;
  s.steps = r.steps;
  return s;
}

Scenario make_scenario(const ScenarioSpec& s, ProfileBook& book) {
  const ModelProfile& m = book.model(s.model, s.batch);
  Scenario sc;
  sc.model = &m;
  sc.device = device_profile(s.device);
  sc.batch = s.batch;
  sc.workers = s.workers;
  sc.servers = s.servers;
  sc.topology = s.topology;
  sc.link = LinkModel{s.bandwidth_bytes_per_s, s.latency_s, 0};
  sc.codec = book.codec(s.codec, m);
  sc.full = book.fp32(m);
  sc.steps = s.steps;
  return sc;
}

Prediction predict_spec(const ScenarioSpec& s, ProfileBook& book, const MachineConstants& k) {
  return predict(s.algo, make_scenario(s, book), k);
}

}  // namespace ferry::advise
