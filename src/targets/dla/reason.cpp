#include "targets/dla/reason.h"

namespace dlakit::dla {

const char* reason_code_name(ReasonCode c) {
  switch (c) {
#define X(name, text)    \
  case ReasonCode::name: \
    return #name;
    DLAKIT_REASON_CODES(X)
#undef X
  }
  return "?";
}

const char* reason_code_text(ReasonCode c) {
  switch (c) {
#define X(name, text)    \
  case ReasonCode::name: \
    return text;
    DLAKIT_REASON_CODES(X)
#undef X
  }
  return "?";
}

}  // namespace dlakit::dla
