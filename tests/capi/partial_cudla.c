/* A library with 3 of the 16 cuDLA functions: what dlakit's cuDLA client must reject by name. */
#include "cudla.h"

cudlaStatus cudlaGetVersion(uint64_t* const version) {
  *version = 1005000;
  return cudlaSuccess;
}
cudlaStatus cudlaDeviceGetCount(uint64_t* const n) {
  *n = 2;
  return cudlaSuccess;
}
cudlaStatus cudlaCreateDevice(uint64_t const device, cudlaDevHandle* const h, uint32_t const flags) {
  (void)device, (void)h, (void)flags;
  return cudlaErrorUnsupportedOperation;
}
