// State records built from the line of an earlier record of the same variable, without parsing.
//
// A tracked variable's state lines repeat themselves: a model's parameter is written once or a few
// times a step, and from one step to the next its line changes only in a handful of values, the
// varying fields (kVaryingFields: its time, step, data and grad digests and addresses, and the
// tracker's claims). At 50k parameter tensors, parsing those lines was most of the in-process
// checker's work (bench/README.md, consistency_scale). A template keeps a parsed line: its text, the
// spans of its varying values in it, and its other fields in one shared object (Record::share_fields).
// A later line of the same variable and source matches when its bytes outside those spans are the
// template's, byte for byte, and each span holds a JSON literal this reads exactly as the parser does
// (an integer within int64, true, false, null; for "time", an integer): its record is then the
// template's shared fields plus the new varying values, the same fields and values the parser would
// have given it (tests/cpp/check/var_line_templates_test.cpp holds the two side by side).
//
// A line no template matches is parsed as before, and may become a template: up to
// kTemplatesPerVariable per variable and source (a parameter's records at zero_grad, before and after
// the optimizer's step, with its claims: a few shapes), and up to a byte budget in all, past which
// new lines are parsed and nothing more is learned. A record whose varying key appears more than once
// (in the line or among its fields) is never a template.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <memory>
#include <vector>

#include "trace/record.h"

namespace traincheck {

class VarLineTemplates {
 public:
  static constexpr size_t kTemplatesPerVariable = 4;
  static constexpr size_t kDefaultBudgetBytes = size_t{256} << 20;

  explicit VarLineTemplates(size_t budget_bytes = kDefaultBudgetBytes) : budget_bytes_(budget_bytes) {}

  // The record of a state line of `source` (an index the caller keeps per source), built from a
  // template; false (and `out` unspecified) when none matches.
  bool build(uint32_t source, std::string_view line, Record& out);
  // Keeps `line`, which the trace reader parsed into `record` (its fields own, none shared), as a
  // template for later lines of its variable. False when it cannot be one (not a state record, a
  // varying key twice, an escaped name) or the budget is spent.
  bool learn(uint32_t source, std::string_view line, const Record& record);

  uint64_t built() const { return built_; }      // records built from templates
  size_t templates() const { return slab_.size() - free_.size(); }
  size_t bytes() const { return bytes_; }         // what the templates hold (estimated)

 private:
  struct Span {
    size_t begin = 0, end = 0;  // the value's bytes in the template's text
    uint8_t field = 0;          // index into kVaryingFields
  };
  // A template in slab_, as long as its generation is the slot's (a slot is reused once evicted).
  struct Link {
    uint32_t index = UINT32_MAX;
    uint32_t generation = 0;
  };
  struct Template {
    std::string text;
    std::vector<Span> spans;      // in text order
    std::vector<uint8_t> by_key;  // span indexes in key order: the record's own fields are sorted by key
    Record base;                  // the static fields, shared; no own fields
    size_t cost = 0;              // its bytes, as counted against the budget
    uint32_t generation = 0;
    bool live = false;
    // The template its source's next line matched last time: a model's records come in the same order
    // every step, so the next line is tried against it first, without looking its variable up.
    Link next;
  };
  struct Key {
    uint32_t source;
    std::string_view name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept;
  };

  static bool match(const Template& t, std::string_view line, Record& out);
  bool valid(Link l) const { return l.index < slab_.size() && slab_[l.index].live && slab_[l.index].generation == l.generation; }
  Link link_of(uint32_t index) const { return Link{index, slab_[index].generation}; }
  // Records that `index` matched (or was learned from) the line after the source's last one.
  void followed(uint32_t source, uint32_t index);
  uint32_t store(Template t);
  void evict(uint32_t index);

  std::vector<Template> slab_;
  std::vector<uint32_t> free_;  // evicted slots
  // Per variable and source, its templates' slots, most recently matched first.
  std::unordered_map<Key, std::vector<uint32_t>, KeyHash> variables_;  // keys view `names_`
  std::vector<std::unique_ptr<std::string>> names_;                   // the variables' names, never moved
  std::vector<Link> last_;  // per source: the template of its last line built or learned
  size_t budget_bytes_;
  size_t bytes_ = 0;
  uint64_t built_ = 0;
};

}  // namespace traincheck
