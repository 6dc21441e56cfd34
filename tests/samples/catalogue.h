// The shipped rule catalogue (RULES_DIR), loaded once per test binary; load errors fail the test
// that first asks for it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint::testing {

inline std::shared_ptr<const RuleSet> catalogue() {
  static std::shared_ptr<const RuleSet> rules = [] {
    std::vector<std::string> errors;
    auto r = edge::load_rules_from(RULES_DIR, errors);
    for (const auto& e : errors) ADD_FAILURE() << e;
    return r;
  }();
  return rules;
}

}  // namespace attribution::blueprint::testing
