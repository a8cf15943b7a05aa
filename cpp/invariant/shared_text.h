// An invariant's text_description, made of its own characters and the names it quotes.
//
// A description names the functions or variables of its params ("A is called before every call of B").
// Inference holds one per hypothesis, and a hypothesis per pair: with each name's text copied in, a 4 KB
// function name cost 4 KB per pair it took part in. Here a quoted
// name is a 4-byte Name (trace/name.h) at an offset in the text's own characters, so a description
// costs its literal words whatever the length of the names; the whole text is assembled only where it
// is written out (str()). Comparison and equality are those of the assembled strings.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/name.h"

namespace traincheck {

class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text) : literal_(std::move(text)) {}  // NOLINT: a plain text, as read from a file
  SharedText(const char* text) : literal_(text) {}              // NOLINT
  SharedText(std::string_view text) : literal_(text) {}         // NOLINT

  // Appends literal characters, or a name by reference.
  SharedText& operator+=(std::string_view literal) {
    literal_.append(literal);
    return *this;
  }
  SharedText& operator+=(const std::string& literal) { return *this += std::string_view(literal); }
  SharedText& operator+=(const char* literal) { return *this += std::string_view(literal); }
  SharedText& operator+=(Name name) {
    if (!name.empty()) names_.emplace_back(static_cast<uint32_t>(literal_.size()), name);
    return *this;
  }
  SharedText& operator+=(const SharedText& more);
  template <typename T>
  friend SharedText operator+(SharedText text, const T& piece) {
    text += piece;
    return text;
  }

  std::string str() const;  // the assembled text
  size_t size() const;
  size_t own_size() const { return literal_.size(); }  // the characters it holds itself (its names not counted)
  bool empty() const { return literal_.empty() && names_.empty(); }

  // Calls f(std::string_view) for each piece of the text in order (no piece is empty).
  template <typename F>
  void for_each_piece(F&& f) const {
    size_t at = 0;
    for (const auto& [offset, name] : names_) {
      if (offset > at) f(std::string_view(literal_).substr(at, offset - at));
      f(name.view());
      at = offset;
    }
    if (at < literal_.size()) f(std::string_view(literal_).substr(at));
  }

  friend std::strong_ordering operator<=>(const SharedText& a, const SharedText& b);
  friend bool operator==(const SharedText& a, const SharedText& b) { return (a <=> b) == 0; }
  friend bool operator==(const SharedText& a, std::string_view b);
  friend bool operator==(const SharedText& a, const char* b) { return a == std::string_view(b); }
  friend bool operator==(const SharedText& a, const std::string& b) { return a == std::string_view(b); }
  friend std::ostream& operator<<(std::ostream& out, const SharedText& text);

 private:
  std::string literal_;                           // the text without its names
  std::vector<std::pair<uint32_t, Name>> names_;  // each name and the offset in literal_ it stands at
};

}  // namespace traincheck
