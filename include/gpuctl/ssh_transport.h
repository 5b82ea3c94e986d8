// SshTransport: the real Transport, over libssh.
//
// One SSH session per node for a whole run; each Command is a channel on it
// running `sh -s` with the script on stdin; when the endpoint becomes root,
// sudo runs the shell (with -n, or -S and the password on stdin followed by
// sync markers, so a sudo that does not ask never feeds it to the shell). Host keys are checked
// against known_hosts: an unknown key is refused unless trust_on_first_use is set (then recorded),
// a changed key is always refused with the fingerprint it saw.
#pragma once

#include <memory>

#include "gpuctl/transport.h"

namespace gpuctl {

std::unique_ptr<Transport> MakeSshTransport();

}  // namespace gpuctl
