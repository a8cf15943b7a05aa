// FieldError: invalid input in one named field of a document being read (a param, a precondition). The
// reader that knows the file and line catches it and says all three (docs/README.md §Architecture: errors
// name file, line and field).
#pragma once

#include <stdexcept>
#include <string>

namespace traincheck {

class FieldError : public std::runtime_error {
 public:
  FieldError(std::string field, const std::string& what) : std::runtime_error(what), field(std::move(field)) {}
  std::string field;
};

}  // namespace traincheck
