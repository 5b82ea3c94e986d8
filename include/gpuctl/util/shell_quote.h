// ShellQuote: POSIX single-quoting. The result is one sh word whatever the
// text holds (quotes, spaces, newlines), used for every value gpuctl puts in
// a script or command line: exported parameters, sudo and ProxyCommand words.
#pragma once

#include <string>

namespace gpuctl {

std::string ShellQuote(const std::string& text);

}  // namespace gpuctl
