#include "core/progress.h"

#include <unistd.h>

#include <algorithm>

#include "core/clock.h"

namespace ferry {

Progress::Progress(std::int64_t total, ProgressOptions options)
    : total_(std::max<std::int64_t>(total, 1)),
      options_(std::move(options)),
      tty_(!options_.force_plain && isatty(fileno(options_.out))),
      start_s_(now_s()) {}

Progress::~Progress() {
  if (!finished_ && tty_) std::fputc('\n', options_.out);
}

void Progress::update(std::int64_t done, const std::string& status) {
  done_ = done;
  status_ = status;
  double now = now_s();
  double interval = tty_ ? 0.1 : options_.line_interval_s;
  if (now - last_draw_s_ >= interval) {
    last_draw_s_ = now;
    draw(false);
  }
}

void Progress::finish(const std::string& status) {
  if (finished_) return;
  if (!status.empty()) status_ = status;
  done_ = std::max(done_, std::int64_t{0});
  draw(true);
  finished_ = true;
}

void Progress::draw(bool final_draw) {
  double elapsed = now_s() - start_s_;
  double rate = elapsed > 0 ? done_ / elapsed : 0;
  double eta = rate > 0 ? (total_ - done_) / rate : 0;
  double frac = std::clamp(static_cast<double>(done_) / total_, 0.0, 1.0);
  if (tty_) {
    constexpr int kWidth = 28;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(options_.out, "\r%s [%s] %3.0f%% %lld/%lld  %.1f %s/s  ETA %.0fs  %s\x1b[K", options_.label.c_str(),
                 bar.c_str(), frac * 100, static_cast<long long>(done_), static_cast<long long>(total_), rate,
                 options_.unit.c_str(), final_draw ? 0.0 : eta, status_.c_str());
    if (final_draw) std::fputc('\n', options_.out);
  } else {
    std::fprintf(options_.out, "%s %3.0f%% %lld/%lld  %.1f %s/s  elapsed %.0fs  ETA %.0fs  %s\n",
                 options_.label.c_str(), frac * 100, static_cast<long long>(done_),
                 static_cast<long long>(total_), rate, options_.unit.c_str(), elapsed, final_draw ? 0.0 : eta,
                 status_.c_str());
  }
  std::fflush(options_.out);
}

}  // namespace ferry
