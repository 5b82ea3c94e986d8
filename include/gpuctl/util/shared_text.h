// SharedText: an immutable string that every copy shares.
//
// A cluster-wide parameter (every node's /etc/hosts line, the Slurm node
// list) is as long as the cluster is large. Built once and shared by each
// plan item that declares it, a plan grows linearly with the number of
// nodes; copied into each item, it grew with the square.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace gpuctl {

class SharedText {
 public:
  SharedText() : SharedText(std::string()) {}
  // Implicit on purpose: a SharedText stands wherever a string value did.
  SharedText(std::string text)  // NOLINT(google-explicit-constructor)
      : text_(std::make_shared<const Held>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT

  [[nodiscard]] const std::string& str() const { return text_->text; }
  operator const std::string&() const { return text_->text; }  // NOLINT
  [[nodiscard]] std::size_t size() const { return text_->text.size(); }
  [[nodiscard]] bool empty() const { return text_->text.empty(); }

  // The digest of a long text, computed once here rather than by every
  // digest of something that holds it; "" for a short text, which such a
  // digest covers as it is.
  [[nodiscard]] const std::string& LongTextDigest() const { return text_->digest; }

  friend bool operator==(const SharedText& a, const SharedText& b) { return a.str() == b.str(); }
  friend bool operator!=(const SharedText& a, const SharedText& b) { return !(a == b); }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.str() == b; }
  friend bool operator!=(const SharedText& a, std::string_view b) { return a.str() != b; }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }
  friend bool operator!=(const SharedText& a, const std::string& b) { return a.str() != b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }
  friend bool operator!=(const SharedText& a, const char* b) { return a.str() != b; }
  friend std::ostream& operator<<(std::ostream& out, const SharedText& text);

 private:
  struct Held {
    explicit Held(std::string t);
    std::string text;
    std::string digest;  // of a long text; empty for a short one
  };
  std::shared_ptr<const Held> text_;
};

}  // namespace gpuctl
