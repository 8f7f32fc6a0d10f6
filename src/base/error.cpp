#include "base/error.h"

namespace dlakit {

const char* status_name(Status s) {
  switch (s) {
    case Status::kInvalidArgument:
      return "InvalidArgument";
    case Status::kParseError:
      return "ParseError";
    case Status::kUnsupported:
      return "Unsupported";
    case Status::kShapeError:
      return "ShapeError";
    case Status::kIoError:
      return "IoError";
    case Status::kInternal:
      return "Internal";
  }
  return "Unknown";
}

}  // namespace dlakit
