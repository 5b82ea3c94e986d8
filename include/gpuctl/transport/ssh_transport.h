// SshTransport: the real Transport, over libssh.
//
// One SSH session per node for a whole run; each Command is a channel on it
// running `sh -s` with the script on stdin; when the endpoint becomes root,
// sudo runs the shell (with -n, or -S and the password on stdin followed by
// sync markers, so a sudo that does not ask never feeds it to the shell). Host keys are checked
// against known_hosts: an unknown key is refused unless trust_on_first_use is set (then recorded),
// a changed key is always refused, naming the fingerprint it saw and the one known_hosts records
// (with its file:line), both as SHA256:... like ssh-keygen -l. Identity files are read through
// input_file.h, and a known_hosts that is not a regular file is refused before libssh reads it.
#pragma once

#include <memory>

#include "gpuctl/transport/transport.h"

namespace gpuctl {

std::unique_ptr<Transport> MakeSshTransport();

}  // namespace gpuctl
