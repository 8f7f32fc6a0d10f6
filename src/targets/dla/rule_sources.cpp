#include "targets/dla/rule_sources.h"

namespace dlakit::dla {

const char* confidence_name(Confidence c) {
  switch (c) {
    case Confidence::kDocumented:
      return "documented";
    case Confidence::kObserved:
      return "observed";
    case Confidence::kAssumed:
      return "assumed";
  }
  return "?";
}

const RuleInfo& rule_info(Rule r) {
  static const RuleInfo table[] = {
#define X(e, id, conf, source, text) {id, Confidence::conf, source, text},
      DLAKIT_DLA_RULES(X)
#undef X
  };
  return table[static_cast<int>(r)];
}

}  // namespace dlakit::dla
