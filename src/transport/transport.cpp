#include "gpuctl/transport/transport.h"

#include <cstdlib>

#include "gpuctl/util/shell_quote.h"

namespace gpuctl {

std::string EnvAssignment(const std::string& name, const std::string& value) {
  const std::string assignment = name + "=" + ShellQuote(value) + "\n";
  return value.size() > kMaxExportedValue ? assignment : "export " + assignment;
}

Endpoint Endpoint::For(const Node& node) {
  Endpoint e;
  e.node = node.name;
  e.host = node.address;
  e.port = node.ssh.port;
  e.user = node.ssh.user;
  e.identity_file = node.ssh.identity_file;
  e.known_hosts = node.ssh.known_hosts;
  e.jump_host = node.ssh.jump_host;
  e.become = node.ssh.become;
  e.become_password_env = node.ssh.become_password_env;
  if (!node.ssh.become_password_env.empty()) {
    if (const char* value = std::getenv(node.ssh.become_password_env.c_str())) {
      e.become_password = value;
    }
  }
  e.connect_timeout = std::chrono::seconds(node.ssh.connect_timeout_s);
  e.command_timeout = std::chrono::seconds(node.ssh.command_timeout_s);
  return e;
}

}  // namespace gpuctl
