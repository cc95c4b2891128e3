// `ferry compare`: runs `ferry train` once per (algorithm, codec[, link]) under identical
// settings (seed, data order, model, link) and reports them side by side: compare.csv,
// compare.md and gnuplot plots (src/train/compare.h). Flags it does not know are passed to
// every `ferry train` run unchanged (e.g. --batch, --lr, --max-steps, --delay-steps).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/command.h"
#include "comm/link/link_options.h"
#include "core/error.h"
#include "train/compare.h"
#include "train/delayed_options.h"

namespace ferry::apps {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Runs argv with stdout and stderr into `log`; returns the exit code (128 + signal if killed).
int run_logged(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  FERRY_CHECK(pid >= 0, "fork failed");
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int run_compare(int argc, char** argv) {
  CLI::App app{"Run several training algorithms under identical settings and compare them", "ferry compare"};
  std::string algos = "ssgd,asgd,odsgd,ssdsgd,cdsgd,localsgd,wfbp", codecs = "none", link = "1Gbps,50us",
              bandwidths, out;
  int np = 4, servers = 1, epochs = 4;
  std::string model = "cnn";
  double target = 0.87;
  train::DelayedOptions twobit;  // only its threshold: the meaning of a bare `twobit`
  bool resume = false;
  app.add_option("--algos", algos, "comma-separated algorithms (compute-only is always added)")->capture_default_str();
  app.add_option("--codecs", codecs, "comma-separated codec specs (where the algorithm supports one)")
      ->capture_default_str();
  app.add_option("--link", link, "emulated NIC: BANDWIDTH,LATENCY")->capture_default_str();
  app.add_option("--bandwidths", bandwidths,
                 "sweep: comma-separated bandwidths, each run with the latency of --link (plots speedup)");
  app.add_option("--np", np, "worker ranks")->capture_default_str();
  app.add_option("--servers", servers, "parameter-server ranks of the ps runs")->capture_default_str();
  app.add_option("--model", model, "mlp | cnn | fcnet")->capture_default_str();
  app.add_option("--epochs", epochs, "passes over the training set")->capture_default_str();
  app.add_option("--target-acc", target, "test accuracy for time_to_target_s")->capture_default_str();
  app.add_option("--threshold", twobit.threshold,
                 "threshold of a bare `twobit` in --codecs, for every algorithm (cdsgd's --threshold)")
      ->capture_default_str();
  app.add_option("--out", out, "output directory")->required();
  app.add_flag("--resume", resume, "reuse runs whose summary.json already exists");
  app.allow_extras();
  app.parse(argc, argv);
  const std::vector<std::string> extras = app.remaining();
  FERRY_REQUIRE(servers >= 1, "--servers must be at least 1 (the delayed algorithms need a server), got ", servers);
  FERRY_REQUIRE(target > 0 && target <= 1, "--target-acc must be in (0, 1], got ", target);
  FERRY_REQUIRE(twobit.threshold > 0, "--threshold must be positive, got ", twobit.threshold);

  std::vector<std::string> links;
  const auto base = comm::parse_link_spec(link);  // validates --link
  if (bandwidths.empty()) {
    links.push_back(link);
  } else {
    const auto comma = link.find(',');
    const std::string latency = comma == std::string::npos ? "" : link.substr(comma);
    for (const auto& bw : split_list(bandwidths)) {
      comm::parse_link_spec(bw + latency);  // validates each bandwidth
      links.push_back(bw + latency);
    }
  }
  (void)base;
  const auto plan = train::compare_plan(split_list(algos), split_list(codecs), links);

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
      args.insert(args.end(), {"--codec", c.codec == "twobit" ? train::cdsgd_default_codec(twobit) : c.codec});
      args.insert(args.end(), extras.begin(), extras.end());
      std::fprintf(stderr, "ferry compare: [%zu/%zu] %s\n", i + 1, plan.size(), c.name.c_str());
      std::filesystem::remove(dir + "/summary.json");
      r.exit_code = run_logged(args, dir + "/log.txt");
      if (r.exit_code != 0)
        std::fprintf(stderr, "ferry compare: %s failed (exit %d), see %s/log.txt\n", c.name.c_str(), r.exit_code,
                     dir.c_str());
    }
    train::load_compare_result(dir, r);
    results.push_back(std::move(r));
  }
  std::string table = train::write_compare_report(out, results, target);
  std::printf("%s\nwrote %s/compare.csv, compare.md and plots\n", table.c_str(), out.c_str());
  return 0;
}

}  // namespace ferry::apps
