// Progress display: a bar with rate and ETA on a terminal, plain periodic lines otherwise.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ferry {

struct ProgressOptions {
  std::string label = "";      // shown before the bar
  std::string unit = "it";     // name of one step, for the rate ("it/s", "samples/s")
  double line_interval_s = 5;  // non-terminal output: seconds between plain lines
  bool force_plain = false;    // plain lines even on a terminal
  std::FILE* out = stderr;     // where to draw
};

class Progress {
 public:
  Progress(std::int64_t total, ProgressOptions options = {});
  ~Progress();
  // Sets the number of steps done and an optional status text ("loss 0.42").
  void update(std::int64_t done, const std::string& status = "");
  // Draws the final state and ends the line.
  void finish(const std::string& status = "");

 private:
  void draw(bool final_draw);

  std::int64_t total_;
  std::int64_t done_ = 0;
  std::string status_;
  ProgressOptions options_;
  bool tty_;
  bool finished_ = false;
  double start_s_;
  double last_draw_s_ = -1e9;
};

}  // namespace ferry
