// Syntax checks for names and addresses written in user files.
//
// Loaders use these to reject a typo at validate time, with its line, rather
// than when ssh or kubeadm trips over it halfway through an apply.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuctl {

bool IsIpv4(std::string_view text);
bool IsIpv6(std::string_view text);
// RFC 1123 host name. All-numeric dotted text is not one, so "10.0.0.300"
// is rejected instead of being taken for a name.
bool IsHostname(std::string_view text);
// What a node's address may be: IPv4, IPv6 or a host name.
bool IsAddress(std::string_view text);
// "10.244.0.0/16", "fd00::/64".
bool IsCidr(std::string_view text);
// "198.18.0.10" -> "198.18.0.0/24"; nullopt unless IPv4.
std::optional<std::string> Ipv4Slash24(std::string_view address);
// [user@]host[:port], as `ssh -J` takes it; an IPv6 host with a port goes in
// brackets.
bool IsJumpHost(std::string_view text);
// A POSIX environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvVarName(std::string_view text);

}  // namespace gpuctl
