#include "invariant/invariant.h"

#include <algorithm>

#include "common/output_file.h"
#include "trace/json_parse.h"
#include "trace/trace_store.h"

namespace traincheck {

namespace {

// The relation, then each param's key.
template <typename ParamKey>
std::string relation_and_params(const Invariant& inv, ParamKey&& key) {
  std::string out = inv.relation;
  for (const Param& p : inv.params) {
    out += '|';
    out += key(p);
  }
  return out;
}

}  // namespace

std::string Invariant::identity() const {
  return relation_and_params(*this, [](const Param& p) { return p.to_json(); });
}

std::string Invariant::compact_identity() const {
  return relation_and_params(*this, [](const Param& p) { return p.compact_key(); });
}

std::set<std::string> context_managers_named(const Invariant& invariant) {
  std::set<std::string> out;
  if (!invariant.precondition) return out;
  for (const auto& [group_name, group] : invariant.precondition->groups)
    for (const Conjunction& c : group.disjuncts)
      for (const Clause& clause : c.clauses)
        if (clause.prop_name.starts_with(kContextManagerFieldPrefix))
          out.insert(clause.prop_name.substr(kContextManagerFieldPrefix.size()));
  return out;
}

Value Invariant::to_value() const {
  Array ps;
  for (const Param& p : params) ps.push_back(p.to_value());
  auto count = [](const std::optional<int64_t>& n) { return n ? Value::integer(*n) : Value::null(); };
  Object members{{intern_key("text_description"), Value::string(text_description.str())},
                 {intern_key("relation"), Value::string(relation)},
                 {intern_key("params"), Value::array(std::move(ps))},
                 {intern_key("precondition"), precondition ? precondition->to_value() : Value::string("Failed")},
                 {intern_key("num_positive_examples"), count(num_positive_examples)},
                 {intern_key("num_negative_examples"), count(num_negative_examples)}};
  if (held_on_programs) members.push_back({intern_key("held_on_programs"), Value::integer(*held_on_programs)});
  if (!vetted_on.empty()) {
    Object libraries;
    for (const auto& [library, versions] : vetted_on) {
      Array vs;
      for (const std::string& version : versions) vs.push_back(Value::string(version));
      libraries.push_back({intern_key(library), Value::array(std::move(vs))});
    }
    members.push_back({intern_key("vetted_on"), Value::object(std::move(libraries))});
  }
  return Value::object(std::move(members));
}

std::string Invariant::to_json_line() const { return to_json(to_value(), JsonStyle::Spaced); }

InvariantFormatError::InvariantFormatError(const std::string& file_, size_t line_, const std::string& field_,
                                           const std::string& what)
    : std::runtime_error(file_ + ":" + std::to_string(line_) + (field_.empty() ? "" : ": field '" + field_ + "'") + ": " + what),
      file(file_),
      field(field_),
      line(line_) {}

Invariant invariant_from_value(const Value& v, const std::string& file, size_t line, const RelationNames* relations) {
  auto fail = [&](const std::string& field, const std::string& what) { return InvariantFormatError(file, line, field, what); };
  if (!v.is_object()) throw fail("", "an invariant must be a JSON object");
  Invariant inv;
  const Value* rel = v.find("relation");
  if (rel == nullptr || !rel->is_string()) throw fail("relation", "missing or not a string");
  if (relations != nullptr && std::find(relations->begin(), relations->end(), rel->as_string()) == relations->end())
    throw fail("relation", "unknown relation '" + rel->as_string() + "'");
  inv.relation = rel->as_string();
  if (const Value* t = v.find("text_description"); t != nullptr && t->is_string()) inv.text_description = t->as_string();
  const Value* params = v.find("params");
  if (params == nullptr || !params->is_array()) throw fail("params", "missing or not a list");
  for (size_t i = 0; i < params->as_array().size(); ++i) {
    try {
      inv.params.push_back(param_from_value(params->as_array()[i]));
    } catch (const ParamFormatError& e) {
      throw fail("params[" + std::to_string(i) + "]" + (e.field.empty() ? "" : "." + e.field), e.what());
    }
  }
  const Value* pre = v.find("precondition");
  if (pre != nullptr && pre->is_object()) {
    try {
      inv.precondition = preconditions_from_value(*pre);
    } catch (const PreconditionFormatError& e) {
      throw fail("precondition" + (e.field.empty() ? "" : "." + e.field), e.what());
    }
  } else if (pre != nullptr && !pre->is_null() && !(pre->is_string() && pre->as_string() == "Failed")) {
    throw fail("precondition", "expected an object of groups");
  }
  auto count = [&](std::string_view key) -> std::optional<int64_t> {
    const Value* n = v.find(key);
    if (n == nullptr || n->is_null()) return std::nullopt;
    if (!n->is_number()) throw fail(std::string(key), "not a number");
    return n->as_int();
  };
  inv.num_positive_examples = count("num_positive_examples");
  inv.num_negative_examples = count("num_negative_examples");
  inv.held_on_programs = count("held_on_programs");
  if (const Value* vetted = v.find("vetted_on"); vetted != nullptr && !vetted->is_null()) {
    if (!vetted->is_object()) throw fail("vetted_on", "expected an object of library: [versions]");
    for (const Member& m : vetted->as_object()) {
      const std::string library(key_name(m.key));
      if (!m.value.is_array()) throw fail("vetted_on." + library, "expected a list of versions");
      std::vector<std::string>& versions = inv.vetted_on[library];
      for (const Value& version : m.value.as_array()) {
        if (!version.is_string()) throw fail("vetted_on." + library, "a version must be a string");
        versions.push_back(version.as_string());
      }
    }
  }
  return inv;
}

Invariant invariant_from_json(std::string_view text, const std::string& file, size_t line, const RelationNames* relations) {
  Value v;
  std::string error;
  if (!parse_json(text, v, error)) throw InvariantFormatError(file, line, "", "invalid JSON: " + error);
  return invariant_from_value(v, file, line, relations);
}

std::vector<Invariant> read_invariant_file(const std::string& path, const RelationNames& relations) {
  std::vector<Invariant> out;
  for_each_invariant_in_file(path, relations, [&](Invariant&& inv, size_t) { out.push_back(std::move(inv)); });
  return out;
}

std::vector<Invariant> read_invariant_files(const std::vector<std::string>& paths, const RelationNames& relations) {
  std::vector<Invariant> out;
  std::set<std::string> seen;
  for (const std::string& path : paths)
    for_each_invariant_in_file(path, relations, [&](Invariant&& inv, size_t) {
      if (seen.insert(inv.identity()).second) out.push_back(std::move(inv));
    });
  return out;
}

void for_each_invariant_in_file(const std::string& path, const RelationNames& relations,
                                const std::function<void(Invariant&&, size_t line)>& visit) {
  std::string text, error;
  if (!read_file(path, text, error)) throw InvariantFormatError(path, 0, "", error);
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    ++line;
    std::string_view l(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    visit(invariant_from_json(l, path, line, &relations), line);
  }
}

std::vector<std::string> named_apis(const Invariant& invariant) {
  std::vector<std::string> out;
  for (const Param& p : invariant.params) {
    if (p.type == ParamType::Api) out.push_back(p.api_full_name.str());
    else if (p.type == ParamType::InputOutput && !p.api_name.empty()) out.push_back(p.api_name.str());
  }
  return out;
}

void write_invariant_file(const std::string& path, std::vector<Invariant> invariants) {
  std::stable_sort(invariants.begin(), invariants.end(),
                   [](const Invariant& a, const Invariant& b) { return a.text_description < b.text_description; });
  OutputFile out(path);
  for (const Invariant& inv : invariants) {
    out.write(inv.to_json_line());
    out.write("\n");
  }
  out.close();
}

void write_failed_file(const std::string& path, const std::vector<FailedHypothesis>& failed) {
  OutputFile out(path);
  for (const FailedHypothesis& f : failed) {
    Invariant inv = f.invariant;
    inv.precondition.reset();
    Value v = make_object({{"failed_reason", Value::string(f.reason)},
                           {"invariant", inv.to_value()},
                           {"num_positive_examples", Value::integer(f.num_positive_examples)},
                           {"num_negative_examples", Value::integer(f.num_negative_examples)}});
    out.write(to_json(v, JsonStyle::Spaced));
    out.write("\n");
  }
  out.close();
}

}  // namespace traincheck
