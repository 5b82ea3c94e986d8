#include "gpuctl/view/live_board.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "gpuctl/util/terminal.h"
#include "gpuctl/util/text.h"
#include "gpuctl/view/node_names.h"

namespace gpuctl {
namespace {

constexpr std::size_t kBarCells = 24;
constexpr std::size_t kDefaultRows = 10;  // when the terminal's height is unknown
// Events come from every node's thread; a frame per event would cost more
// than the work it shows on a large cluster.
constexpr auto kMinFrameGap = std::chrono::milliseconds(100);

bool Ended(ItemState s) {
  switch (s) {
    case ItemState::kSatisfied:
    case ItemState::kApplied:
    case ItemState::kNeedsAttention:
    case ItemState::kRefused:
    case ItemState::kFailed:
    case ItemState::kBlocked:
    case ItemState::kUnreachable:
    case ItemState::kProbeFailed:
      return true;
    default:
      return false;
  }
}

// Whole seconds while they are few: the board moves once a second, not ten.
std::string Elapsed(LiveBoard::Clock::duration d) {
  d = std::max(d, LiveBoard::Clock::duration::zero());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  if (ms < std::chrono::seconds(60)) {
    return fmt::format("{}s", ms.count() / 1000);
  }
  return HumanDuration(ms);
}

std::string Bar(std::size_t done, std::size_t total) {
  const std::size_t filled = total == 0 ? kBarCells : std::min(kBarCells, done * kBarCells / total);
  return "[" + std::string(filled, '#') + std::string(kBarCells - filled, '-') + "]";
}

}  // namespace

bool BoardFitsTerminal(bool is_tty, const char* ci, const char* term, int verbosity) {
  if (!is_tty || verbosity > 0) {
    return false;
  }
  if (ci != nullptr && *ci != '\0' && std::strcmp(ci, "false") != 0 && std::strcmp(ci, "0") != 0) {
    return false;
  }
  return term == nullptr || (*term != '\0' && std::strcmp(term, "dumb") != 0);
}

LiveBoard::LiveBoard(std::ostream& out, BoardOptions options, std::vector<std::string> nodes)
    : out_(out),
      options_(options),
      order_(std::move(nodes)),
      started_(Clock::now()),
      last_beat_(started_),
      lines_(options.terminal ? static_cast<std::ostream&>(scrolled_) : out, options.verbosity) {
  for (const std::string& node : order_) {
    work_[node];
  }
  lines_.ShowOk(options_.show_ok);
  lines_.SetTimestamps(!options_.terminal);
  lines_.SetWidth(options_.terminal ? options_.width : 0);
  visible_ = true;
  if (options_.ticker) {
    ticker_ = std::thread([this] { TickerLoop(); });
  }
}

LiveBoard::~LiveBoard() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) {
    ticker_.join();
  }
  Hide();
}

void LiveBoard::TickerLoop() {
  const auto period =
      options_.terminal ? options_.redraw
                        : std::chrono::duration_cast<std::chrono::milliseconds>(options_.heartbeat);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // A timed wait is the point here: the clock is what moves the board.
    wake_.wait_for(lock, period);
    if (stopping_) {
      break;
    }
    lock.unlock();
    Tick(Clock::now());
    lock.lock();
  }
}

void LiveBoard::Expect(const Plan& plan) {
  std::lock_guard lock(mutex_);
  expected_items_.clear();
  for (auto& [node, work] : work_) {
    work.expected = 0;
    work.finished = 0;
  }
  for (const PlanItem& item : plan.items()) {
    if (Ended(item.state)) {
      continue;
    }
    if (Work* work = Find(item.node)) {
      ++work->expected;
      expected_items_.insert(item.id);
    }
  }
}

void LiveBoard::Hide() {
  std::lock_guard lock(mutex_);
  visible_ = false;
  if (options_.terminal) {
    Draw(Clock::now());
  }
}

void LiveBoard::Show() {
  std::lock_guard lock(mutex_);
  visible_ = true;
  if (options_.terminal) {
    Draw(Clock::now());
  }
}

LiveBoard::Work* LiveBoard::Find(const std::string& node) {
  auto found = work_.find(node);
  return found == work_.end() ? nullptr : &found->second;
}

void LiveBoard::PhaseStarted(const std::string& title) {
  std::lock_guard lock(mutex_);
  lines_.PhaseStarted(title);
  phase_ = title;
  unit_ = title == "connect" || title == "probe" || title == "check" ? Unit::kNodes
          : title == "apply"                                         ? Unit::kSteps
                                                                     : Unit::kNone;
  const auto now = Clock::now();
  for (auto& [node, work] : work_) {
    work.step.clear();
    work.note.clear();
    work.since = now;
    if (unit_ == Unit::kNodes) {
      work.expected = work.failed ? 0 : 1;
      work.finished = 0;
    }
  }
  Changed();
}

void LiveBoard::NodeConnected(const std::string& node, std::chrono::milliseconds took) {
  std::lock_guard lock(mutex_);
  lines_.NodeConnected(node, took);
  if (Work* work = Find(node); work != nullptr && unit_ == Unit::kNodes) {
    work->finished = work->expected;
  }
  Changed();
}

void LiveBoard::NodeFailed(const std::string& node, const std::string& error) {
  std::lock_guard lock(mutex_);
  lines_.NodeFailed(node, error);
  if (Work* work = Find(node)) {
    work->failed = true;
    work->step.clear();
    work->note.clear();
    if (unit_ == Unit::kNodes) {
      work->finished = work->expected;
    }
  }
  Changed();
}

void LiveBoard::CommandStarted(const std::string& node, const std::string& step, Activity activity,
                               const std::string& script) {
  std::lock_guard lock(mutex_);
  lines_.CommandStarted(node, step, activity, script);
  // A probe batch reports its steps only once the whole batch has answered:
  // in the probe and check phases the node is shown as one unit instead.
  Work* work = Find(node);
  if (work != nullptr && unit_ != Unit::kNodes) {
    work->step = step;
    work->activity = activity;
    work->note.clear();
    work->since = Clock::now();
  }
  Changed();
}

void LiveBoard::CommandFinished(const std::string& node, const std::string& step, Activity activity,
                                const CommandResult& result) {
  std::lock_guard lock(mutex_);
  lines_.CommandFinished(node, step, activity, result);
  if (Work* work = Find(node); work != nullptr && work->step == step) {
    work->step.clear();
    work->since = Clock::now();  // waiting (for a slot, another node) from now
  }
  Changed();
}

void LiveBoard::ItemUpdated(const PlanItem& item) {
  std::lock_guard lock(mutex_);
  lines_.ItemUpdated(item);
  Work* work = Find(item.node);
  if (work == nullptr) {
    return;
  }
  if (unit_ == Unit::kNodes) {
    work->finished = work->expected;
  } else if (unit_ == Unit::kSteps && Ended(item.state) && expected_items_.erase(item.id) > 0) {
    ++work->finished;
  }
  if (item.state == ItemState::kFailed) {
    work->failed = true;
  }
  Changed();
}

void LiveBoard::Note(const std::string& node, const std::string& message) {
  std::lock_guard lock(mutex_);
  lines_.Note(node, message);
  if (Work* work = Find(node)) {
    work->step.clear();
    work->note = message;
    work->since = Clock::now();
  }
  Changed();
}

std::vector<LiveBoard::Row> LiveBoard::Rows() const {
  const std::string idle = phase_ == "connect" ? "connecting"
                           : phase_ == "check" ? "checking"
                                               : "probing";
  std::vector<Row> rows;
  std::map<std::string, std::size_t> by_text;
  for (const std::string& node : order_) {
    const Work& work = work_.at(node);
    std::string text;
    if (!work.step.empty()) {
      text = fmt::format("{:<28} {}", work.step, ToString(work.activity));
    } else if (!work.note.empty()) {
      text = work.note;
    } else if (unit_ == Unit::kNodes && !work.failed && work.finished < work.expected) {
      text = idle;
    } else {
      continue;
    }
    auto [at, fresh] = by_text.try_emplace(text, rows.size());
    if (fresh) {
      rows.push_back({{}, text, work.since});
    }
    Row& row = rows[at->second];
    row.names.push_back(node);
    row.since = std::min(row.since, work.since);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.since < b.since; });
  return rows;
}

std::string LiveBoard::Summary(Clock::time_point now) const {
  std::size_t expected = 0;
  std::size_t finished = 0;
  std::size_t done = 0;
  std::size_t running = 0;
  std::size_t waiting = 0;
  std::size_t failed = 0;
  for (const auto& [node, work] : work_) {
    expected += work.expected;
    finished += std::min(work.finished, work.expected);
    if (work.expected == 0 && !(unit_ == Unit::kSteps && work.failed)) {
      continue;
    }
    if (work.failed) {
      ++failed;
    } else if (work.finished >= work.expected) {
      ++done;
    } else if (!work.step.empty() || !work.note.empty()) {
      ++running;
    } else {
      ++waiting;
    }
  }
  const std::string elapsed = Elapsed(now - started_);
  switch (unit_) {
    case Unit::kSteps:
      return fmt::format("{} {} {}/{} steps  nodes: {} done, {} running, {} waiting, {} failed  {}",
                         phase_, Bar(finished, expected), finished, expected, done, running,
                         waiting, failed, elapsed);
    case Unit::kNodes:
      return fmt::format("{} {} {}/{} nodes, {} failed  {}", phase_, Bar(finished, expected),
                         finished, expected, failed, elapsed);
    case Unit::kNone:
      break;
  }
  return fmt::format("{}  {}", phase_.empty() ? "starting" : phase_, elapsed);
}

std::size_t LiveBoard::MaxRows() const {
  std::size_t height = options_.height;
  if (options_.size_fd >= 0) {
    height = TerminalHeight(options_.size_fd);
  }
  // Half the screen at most, so the finished lines above stay readable.
  return height == 0 ? kDefaultRows : std::max<std::size_t>(1, height / 2 - 1);
}

std::vector<std::string> LiveBoard::Render(Clock::time_point now) const {
  const std::vector<Row> rows = Rows();
  const std::size_t room = MaxRows();
  const std::size_t shown = rows.size() <= room ? rows.size() : room - 1;
  std::vector<std::string> out;
  std::size_t label_width = 0;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& names = rows[i].names;
    labels.push_back(names.size() == 1
                         ? names.front()
                         : fmt::format("{} ({})", CompressNodeNames(names), names.size()));
    label_width = std::max(label_width, labels.back().size());
  }
  for (std::size_t i = 0; i < shown; ++i) {
    out.push_back(fmt::format("  {:<{}}  {}  {}", labels[i], std::max<std::size_t>(label_width, 12),
                              rows[i].text, Elapsed(now - rows[i].since)));
  }
  if (shown < rows.size()) {
    std::size_t more = 0;
    for (std::size_t i = shown; i < rows.size(); ++i) {
      more += rows[i].names.size();
    }
    out.push_back(fmt::format("  ... and {} more node{} at work", more, more == 1 ? "" : "s"));
  }
  out.push_back(Summary(now));
  return out;
}

void LiveBoard::Changed() {
  if (!options_.terminal || !options_.ticker) {
    return;  // plain lines were written as they came; without a ticker, Tick draws
  }
  const auto now = Clock::now();
  // Hidden, a finished line is still written at once; shown, at most one
  // frame per kMinFrameGap (the ticker writes what waits).
  if (visible_ ? now - last_draw_ >= kMinFrameGap : scrolled_.tellp() > 0) {
    Draw(now);
  }
}

void LiveBoard::Draw(Clock::time_point now) {
  std::string frame;
  if (drawn_ > 0) {
    // The cursor rests at the start of the line below the board: up to its
    // first line, then clear to the end of the screen.
    frame += fmt::format("\r\x1b[{}A\x1b[J", drawn_);
  }
  frame += scrolled_.str();
  scrolled_.str("");
  drawn_ = 0;
  if (visible_) {
    std::size_t width = options_.size_fd >= 0 ? TerminalWidth(options_.size_fd) : options_.width;
    // One column spare: a line that fills the row would wrap on some
    // terminals and the next frame would erase one line too few.
    width = width == 0 ? 79 : width - 1;
    for (const std::string& line : Render(now)) {
      frame += FitLine(line, width) + "\n";
      ++drawn_;
    }
  }
  out_ << frame << std::flush;
  last_draw_ = now;
}

void LiveBoard::WriteHeartbeat(Clock::time_point now) {
  const std::vector<std::string> board = Render(now);
  if (board.size() < 2) {
    return;  // nothing at work: the summary alone says nothing new
  }
  const std::string stamp = TimeOfDay() + " ";
  std::string text = stamp + "== " + board.back() + "\n";
  for (std::size_t i = 0; i + 1 < board.size(); ++i) {
    text += stamp + board[i] + "\n";
  }
  out_ << text << std::flush;
}

void LiveBoard::Tick(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (!visible_) {
    return;
  }
  if (options_.terminal) {
    Draw(now);
  } else if (now - last_beat_ >= options_.heartbeat) {
    last_beat_ = now;
    WriteHeartbeat(now);
  }
}

}  // namespace gpuctl
