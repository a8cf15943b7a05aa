#include "invariant/shared_text.h"

#include <ostream>

namespace traincheck {

namespace {

// Walks a text's pieces one character run at a time without assembling it.
class PieceCursor {
 public:
  explicit PieceCursor(const SharedText& text) {
    text.for_each_piece([&](std::string_view p) { pieces_.push_back(p); });
  }
  bool done() const { return index_ == pieces_.size(); }
  std::string_view rest() const { return pieces_[index_].substr(offset_); }
  void advance(size_t n) {
    offset_ += n;
    if (offset_ == pieces_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }

 private:
  std::vector<std::string_view> pieces_;
  size_t index_ = 0, offset_ = 0;
};

}  // namespace

std::string SharedText::str() const {
  std::string out;
  out.reserve(size());
  for_each_piece([&](std::string_view p) { out.append(p); });
  return out;
}

SharedText& SharedText::operator+=(const SharedText& more) {
  const auto shift = static_cast<uint32_t>(literal_.size());
  literal_ += more.literal_;
  for (const auto& [offset, name] : more.names_) names_.emplace_back(shift + offset, name);
  return *this;
}

size_t SharedText::size() const {
  size_t n = literal_.size();
  for (const auto& [offset, name] : names_) n += name.view().size();
  return n;
}

std::strong_ordering operator<=>(const SharedText& a, const SharedText& b) {
  if (a.names_.empty() && b.names_.empty()) return a.literal_.compare(b.literal_) <=> 0;
  PieceCursor x(a), y(b);
  while (!x.done() && !y.done()) {
    const std::string_view p = x.rest(), q = y.rest();
    const size_t n = std::min(p.size(), q.size());
    if (const int c = p.substr(0, n).compare(q.substr(0, n)); c != 0) return c <=> 0;
    x.advance(n);
    y.advance(n);
  }
  return !x.done() <=> !y.done();
}

bool operator==(const SharedText& a, std::string_view b) {
  if (a.names_.empty()) return std::string_view(a.literal_).compare(b) == 0;
  bool equal = true;
  size_t at = 0;
  a.for_each_piece([&](std::string_view p) {
    equal = equal && at <= b.size() && b.substr(at, p.size()) == p;
    at += p.size();
  });
  return equal && at == b.size();
}

std::ostream& operator<<(std::ostream& out, const SharedText& text) {
  text.for_each_piece([&](std::string_view p) { out << p; });
  return out;
}

}  // namespace traincheck
