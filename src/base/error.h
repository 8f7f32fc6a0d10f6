// Error handling: one exception type that carries a status, a readable name and the context.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dlakit {

// Bad user input and "valid but not supported here" are different things; callers branch on them.
enum class Status {
  kInvalidArgument,  // the caller passed something wrong (bad flag, wrong input name or shape)
  kParseError,       // a file is malformed, truncated or foreign
  kUnsupported,      // valid, but dlakit does not implement it (op, attribute value, dtype)
  kShapeError,       // shapes do not agree (found during inference or at run time)
  kIoError,          // a file could not be opened, read or written
  kInternal,         // a bug in dlakit: an invariant broke
};

const char* status_name(Status s);

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// cat("a", 1, 'b') -> "a1b": builds messages without a formatting library.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Status status, Args&&... args) {
  throw Error(status, cat(std::forward<Args>(args)...));
}

#define DLAKIT_CHECK(cond, status, ...)               \
  do {                                                \
    if (!(cond)) ::dlakit::fail(status, __VA_ARGS__); \
  } while (0)

}  // namespace dlakit
