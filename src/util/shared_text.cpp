#include "gpuctl/util/shared_text.h"

#include <ostream>

#include "gpuctl/util/digest.h"

namespace gpuctl {
namespace {
// Longer values are stood for by their digest; a node's own values (its
// name, its GPU count) stay readable in what is hashed.
constexpr std::size_t kDigestAbove = 128;
}  // namespace

SharedText::Held::Held(std::string t) : text(std::move(t)) {
  if (text.size() > kDigestAbove) {
    digest = Digest(text);
  }
}

std::ostream& operator<<(std::ostream& out, const SharedText& text) { return out << text.str(); }

}  // namespace gpuctl
