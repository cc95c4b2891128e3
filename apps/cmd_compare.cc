// `ferry compare`: runs `ferry train` once per (algorithm, codec[, link]) under identical
// settings (seed, data order, model, link) and reports them side by side: compare.csv,
// compare.md and gnuplot plots (src/train/compare.h). The other flags of ferry train are passed
// to every run unchanged (e.g. --batch, --lr, --max-steps, --delay-steps); anything else is
// refused before the first run. Exits non-zero, naming them, when runs fail.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/child_process.h"
#include "apps/cli.h"
#include "apps/command.h"
#include "apps/link_flag.h"
#include "apps/train_flags.h"
#include "apps/render_plots.h"
#include "comm/link/link_options.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/spec.h"
#include "core/units.h"
#include "train/compare.h"
#include "train/models/model.h"
#include "train/strategy.h"

namespace ferry::apps {
namespace {

// "none,topk:ratio=0.05,ef=0,twobit" -> none | topk:ratio=0.05,ef=0 | twobit (--codecs; --algos
// alike: "ssgd,diloco:inner_steps=20,outer_lr=1"): core/spec.h's join_spec_items, and a first
// item that is an option without a spec before it is an error naming `flag` and what it lists.
std::vector<std::string> split_spec_list(const std::string& s, const char* flag, const char* what) {
  std::vector<std::string> out = join_spec_items(split_list(s));
  if (!out.empty()) {
    const std::string& first = out.front();
    FERRY_REQUIRE(first.find('=') == std::string::npos || first.find(':') < first.find('='), flag, ": '", first,
                  "' is an option without ", what, " before it");
  }
  return out;
}

// The flags compare passes on to every `ferry train` run must be flags of ferry train, and not
// ones compare sets for each run itself. Checked before any run starts.
void check_passed_flags(const std::vector<std::string>& extras) {
  if (extras.empty()) return;
  CLI::App train_app{"", "ferry train"};
  train::TrainOptions o;
  TrainFlags flags(train_app, o, train::OptionPlace::kCompare);
  std::vector<std::string> args = {"ferry train"};
  args.insert(args.end(), extras.begin(), extras.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    train_app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    FERRY_THROW(InvalidArgument, "flag for the runs refused (ferry compare passes only ferry train's flags on): ",
                e.what());
  }
  const std::pair<const char*, const char*> own[] = {
      {"--algo", "--algos LIST"},     {"--codec", "--codecs LIST"}, {"--topology", "the algorithm's topology"},
      {"--np", "--np"},               {"--servers", "--servers"},   {"--model", "--model"},
      {"--epochs", "--epochs"},       {"--link", "--link or --bandwidths"}, {"--out", "--out"},
      {"--eval-each-epoch", "always on"}};
  for (const auto& [flag, instead] : own)
    FERRY_REQUIRE(train_app.count(flag) == 0, flag, " is set by ferry compare for each run (", instead,
                  "); it cannot be passed on");
}

}  // namespace

int run_compare(int argc, char** argv) {
  CLI::App app{"Run several training algorithms under identical settings and compare them", "ferry compare"};
  init_app(app);
  std::string algos = "ssgd,asgd,odsgd,ssdsgd,cdsgd,localsgd,wfbp", codecs = "none", link = "1Gbps,50us",
              bandwidths, out;
  int np = 4, servers = 1, epochs = 4;
  std::string model = "cnn";
  double target_acc = 0.87, target_ppl = 0;
  // The meaning of a bare `twobit`: cdsgd's default codec, with this threshold for every algorithm.
  std::vector<train::SpecShorthand> twobit = {{"--threshold", "threshold", ""}};
  bool resume = false;
  train::register_builtin_strategies();  // before the help text lists them
  app.add_option("--algos", algos,
                 "comma-separated algorithm specs (compute-only is always added); a comma followed by KEY=VALUE "
                 "continues the spec before it: ssgd,diloco:inner_steps=20,outer_lr=1 is two. NAME: " +
                     choices(train::strategy_names()))
      ->capture_default_str();
  app.add_option("--codecs", codecs,
                 "comma-separated codec specs, where the algorithm takes one; a comma followed by KEY=VALUE "
                 "continues the spec before it: none,topk:ratio=0.05,ef=0 is two codecs. NAME: " +
                     choices(compress::codec_names()))
      ->capture_default_str();
  add_link_flag(app, link);
  app.add_option("--bandwidths", bandwidths,
                 "sweep: comma-separated bandwidths, each run with the latency of --link (plots speedup)");
  app.add_option("--np", np, "worker ranks")->capture_default_str();
  app.add_option("--servers", servers, "parameter-server ranks of the ps runs")->capture_default_str();
  app.add_option("--model", model, choices(train::model_names()))->capture_default_str();
  app.add_option("--epochs", epochs, "passes over the training set")->capture_default_str();
  app.add_option("--target-acc", target_acc, "image models: test accuracy for time_to_target_s")->capture_default_str();
  app.add_option("--target-ppl", target_ppl, "token models (gpt): test perplexity for time_to_target_s (required)");
  app.add_option("--threshold", twobit.front().value,
                 "threshold of a bare `twobit` in --codecs, for every algorithm (cdsgd's threshold; default 0.005)");
  app.add_option("--out", out, "output directory")->required();
  app.add_flag("--resume", resume, "reuse runs whose summary.json already exists");
  app.allow_extras();
  parse_command_line(app, argc, argv);
  const std::vector<std::string> extras = app.remaining();
  check_passed_flags(extras);
  FERRY_REQUIRE(servers >= 1, "--servers must be at least 1 (the delayed algorithms need a server), got ", servers);
  const bool tokens = train::model_input(model) == train::ModelInput::kTokens;
  FERRY_REQUIRE(!tokens || app.count("--target-acc") == 0, "--target-acc: --model ", model,
                " is a language model; give --target-ppl");
  FERRY_REQUIRE(tokens || app.count("--target-ppl") == 0, "--target-ppl: --model ", model,
                " is a classifier; give --target-acc");
  FERRY_REQUIRE(!tokens || target_ppl >= 1, "--target-ppl: --model ", model,
                " needs a target test perplexity >= 1 (e.g. --target-ppl 6), got ", target_ppl);
  FERRY_REQUIRE_IN(target_acc, 0, 1, "(]", "--target-acc");
  const train::QualityTarget target{tokens, tokens ? target_ppl : target_acc};
  train::compare_run_codec("twobit", twobit);  // a bad --threshold before any run

  std::vector<std::string> links;
  const comm::LinkOptions base = comm::parse_link_spec(link);  // validates --link
  if (bandwidths.empty()) {
    links.push_back(link);
  } else {
    // Each bandwidth with the latency of --link, as BANDWIDTH[,LATENCY].
    const std::string latency = base.latency_s > 0 ? "," + duration_text(base.latency_s) : "";
    for (const auto& bw : split_list(bandwidths)) {
      comm::parse_link_spec(bw + latency);  // validates each bandwidth
      links.push_back(bw + latency);
    }
  }
  const auto plan = train::compare_plan(split_spec_list(algos, "--algos", "an algorithm"),
                                        split_spec_list(codecs, "--codecs", "a codec"), links);

  std::filesystem::create_directories(out + "/runs");
  const std::string self = self_executable();
  std::vector<train::CompareResult> results;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const auto& c = plan[i];
    const std::string dir = out + "/runs/" + c.name;
    std::filesystem::create_directories(dir);
    train::CompareResult r;
    r.config = c;
    if (!(resume && std::filesystem::exists(dir + "/summary.json"))) {
      std::vector<std::string> args = {self, "train", "--algo", c.algo, "--topology", c.topology, "--np",
                                       std::to_string(np), "--model", model, "--epochs", std::to_string(epochs),
                                       "--link", c.link, "--eval-each-epoch", "--no-progress", "--out", dir};
      if (c.topology == "ps") args.insert(args.end(), {"--servers", std::to_string(servers)});
      // A bare `twobit` means one threshold for every algorithm: the one cdsgd uses by default.
      args.insert(args.end(), {"--codec", train::compare_run_codec(c.codec, twobit)});
      args.insert(args.end(), extras.begin(), extras.end());
      std::fprintf(stderr, "ferry compare: [%zu/%zu] %s\n", i + 1, plan.size(), c.name.c_str());
      std::filesystem::remove(dir + "/summary.json");
      const ChildResult run = run_child(args, ChildOptions{dir + "/log.txt"});
      r.exit_code = run.exit_code;
      if (run.signal != 0) {
        std::fprintf(stderr, "ferry compare: stopped by signal %d (%s) during %s; its job was ended\n", run.signal,
                     strsignal(run.signal), c.name.c_str());
        return signalled_exit_code(run.signal);
      }
      if (r.exit_code != 0)
        std::fprintf(stderr, "ferry compare: %s failed (exit %d), see %s/log.txt\n", c.name.c_str(), r.exit_code,
                     dir.c_str());
    }
    train::load_compare_result(dir, target, r);
    results.push_back(std::move(r));
  }
  const train::CompareReport report = train::write_compare_report(out, results, target);
  render_plots(report.plots, "ferry compare");
  std::printf("%s\nwrote %s/compare.csv, compare.md and plots\n", report.markdown.c_str(), out.c_str());
  std::string failed;
  for (const auto& r : results)
    if (r.exit_code != 0) failed += (failed.empty() ? "" : ", ") + r.config.name + " (exit " + std::to_string(r.exit_code) + ")";
  if (!failed.empty()) {
    std::fprintf(stderr, "ferry compare: error: runs failed: %s; their logs are in %s/runs/<run>/log.txt\n",
                 failed.c_str(), out.c_str());
    return 1;
  }
  return 0;
}

}  // namespace ferry::apps
