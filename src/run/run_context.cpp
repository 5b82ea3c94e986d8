#include "gpuctl/run/run_context.h"

namespace gpuctl {

Connection* RunContext::ConnectionTo(const std::string& node) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(node);
  return it == connections_.end() ? nullptr : it->second.get();
}

void RunContext::SetConnection(const std::string& node, std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mutex_);
  connections_[node] = std::move(connection);
}

void RunContext::DropConnection(const std::string& node) {
  std::unique_ptr<Connection> dropped;
  {
    std::lock_guard lock(mutex_);
    auto it = connections_.find(node);
    if (it != connections_.end()) {
      dropped = std::move(it->second);
      connections_.erase(it);
    }
  }
  // Closing an SSH session can block briefly; do it outside the lock.
}

void RunContext::FailNode(const std::string& node, const std::string& error) {
  std::lock_guard lock(mutex_);
  node_errors_.emplace(node, redactor.Apply(error));
}

bool RunContext::IsFailed(const std::string& node) const {
  std::lock_guard lock(mutex_);
  return node_errors_.count(node) > 0;
}

std::map<std::string, std::string> RunContext::NodeErrors() const {
  std::lock_guard lock(mutex_);
  return node_errors_;
}

void RunContext::LeaveOut(const std::string& node) {
  std::lock_guard lock(mutex_);
  left_out_.insert(node);
}

std::vector<const Node*> RunContext::HealthyNodes() const {
  std::vector<const Node*> out;
  std::lock_guard lock(mutex_);
  for (const auto& node : inventory.nodes) {
    if (node_errors_.count(node.name) == 0 && left_out_.count(node.name) == 0) {
      out.push_back(&node);
    }
  }
  return out;
}

void RunContext::SetNodeOs(const std::string& node, const OsRelease& os) {
  std::lock_guard lock(mutex_);
  node_os_[node] = os;
}

std::map<std::string, OsRelease> RunContext::NodeOs() const {
  std::lock_guard lock(mutex_);
  return node_os_;
}

void RunContext::SetNodeHostKey(const std::string& node, const std::string& key) {
  std::lock_guard lock(mutex_);
  node_host_keys_[node] = key;
}

std::map<std::string, std::string> RunContext::NodeHostKeys() const {
  std::lock_guard lock(mutex_);
  return node_host_keys_;
}

}  // namespace gpuctl
