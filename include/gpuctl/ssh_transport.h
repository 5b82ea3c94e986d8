// SshTransport: the real Transport, over libssh.
//
// One SSH session per node for a whole run; each Command is a channel on it
// running `sh -s` (or `sudo -S -p '' sh -s` when the endpoint becomes root)
// with the script on stdin. Host keys are checked against known_hosts: an
// unknown key is refused unless trust_on_first_use is set (then recorded), a
// changed key is always refused with the fingerprint it saw.
#pragma once

#include <memory>

#include "gpuctl/transport.h"

namespace gpuctl {

std::unique_ptr<Transport> MakeSshTransport();

}  // namespace gpuctl
