#include "invariant/relation.h"

#include <algorithm>

namespace traincheck {

void Relation::merge(Hypothesis& into, Hypothesis&& other) const {
  std::move(other.positives.begin(), other.positives.end(), std::back_inserter(into.positives));
  std::move(other.negatives.begin(), other.negatives.end(), std::back_inserter(into.negatives));
  for (std::string& s : other.valid_stages)
    if (std::find(into.valid_stages.begin(), into.valid_stages.end(), s) == into.valid_stages.end())
      into.valid_stages.push_back(std::move(s));
  std::sort(into.valid_stages.begin(), into.valid_stages.end());
  for (const TraceStore* t : other.generated_by) into.generated_by.push_back(t);
}

std::vector<Relation::OnlineCheckOf> Relation::make_online_checks(const std::vector<const Invariant*>& invariants,
                                                                  const ApiSignatures* signatures) const {
  std::vector<OnlineCheckOf> checks;
  for (size_t i = 0; i < invariants.size(); ++i)
    if (std::unique_ptr<OnlineCheck> check = make_online_check(*invariants[i], signatures))
      checks.push_back(OnlineCheckOf{std::move(check), {i}});
  return checks;
}

std::string invariant_label(const Relation* relation, const Invariant& invariant) {
  std::string label = relation ? relation->display_name(invariant) : std::string();
  return label.empty() ? invariant.text_description.str() : label;
}

}  // namespace traincheck
