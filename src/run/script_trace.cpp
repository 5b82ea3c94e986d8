#include "gpuctl/run/script_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "gpuctl/util/shell_quote.h"

namespace gpuctl {

namespace {

class TracingTransport;

class TracingConnection : public Connection {
 public:
  TracingConnection(std::unique_ptr<Connection> inner, TracingTransport& owner, std::string node)
      : inner_(std::move(inner)), owner_(owner), node_(std::move(node)) {}
  CommandResult Run(const Command& command) override;
  [[nodiscard]] bool Alive() const override { return inner_->Alive(); }

 private:
  std::unique_ptr<Connection> inner_;
  TracingTransport& owner_;
  std::string node_;
};

class TracingTransport : public Transport {
 public:
  TracingTransport(std::unique_ptr<Transport> inner, std::string dir)
      : inner_(std::move(inner)), dir_(std::move(dir)) {
    // An existing directory is kept: one trace may span several commands
    // (plan, apply, check), each adding its own files.
    if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
      throw std::runtime_error(fmt::format("GPUCTL_TRACE_SCRIPTS: cannot create {}", dir_));
    }
  }

  std::unique_ptr<Connection> Connect(const Endpoint& endpoint) override {
    return std::make_unique<TracingConnection>(inner_->Connect(endpoint), *this, endpoint.node);
  }

  void SetRedactor(const Redactor& redactor) { redactor_ = &redactor; }

  // What the node reads on stdin (the exports, then the script), redacted.
  void Write(const std::string& node, const Command& command) {
    if (redactor_ == nullptr) {
      // A bug in the caller, not input: refusing beats writing a secret.
      throw std::logic_error("script trace without a redactor");
    }
    std::string text;
    for (const auto& [name, value] : command.env) {
      text += "export " + name + "=" + ShellQuote(value) + "\n";
    }
    text += command.script;
    text = redactor_->Apply(std::move(text));
    // The pid keeps several gpuctl commands tracing into one DIR apart.
    const std::string path =
        fmt::format("{}/{}-{:06}-{}.sh", dir_, getpid(), sequence_.fetch_add(1), node);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      throw std::runtime_error(fmt::format("GPUCTL_TRACE_SCRIPTS: cannot create {}", path));
    }
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(fd, text.data() + done, text.size() - done);
      if (n <= 0) {
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    close(fd);
  }

 private:
  std::unique_ptr<Transport> inner_;
  std::string dir_;
  const Redactor* redactor_ = nullptr;
  std::atomic<unsigned> sequence_{0};
};

CommandResult TracingConnection::Run(const Command& command) {
  owner_.Write(node_, command);
  return inner_->Run(command);
}

}  // namespace

std::unique_ptr<Transport> TraceScriptsFromEnv(std::unique_ptr<Transport> inner) {
  const char* dir = std::getenv("GPUCTL_TRACE_SCRIPTS");
  if (dir == nullptr || *dir == '\0') {
    return inner;
  }
  return std::make_unique<TracingTransport>(std::move(inner), dir);
}

void TraceRedactor(Transport& transport, const Redactor& redactor) {
  if (auto* tracing = dynamic_cast<TracingTransport*>(&transport)) {
    tracing->SetRedactor(redactor);
  }
}

}  // namespace gpuctl
