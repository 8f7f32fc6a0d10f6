/* The calls of fuzz_capi that pass a raw 32-bit value where cudla.h says enum, made from C as a C caller
 * makes them (in C++ an enum holding a value outside its enumerators is undefined behaviour, which UBSan
 * would report in the fuzz target instead of in dlakit). */
#include <stdint.h>

#include "cudla.h"

cudlaStatus fuzz_module_get_attributes(cudlaModule m, uint32_t which, cudlaModuleAttribute* a) {
  return cudlaModuleGetAttributes(m, (cudlaModuleAttributeType)which, a);
}

cudlaStatus fuzz_device_get_attribute(cudlaDevHandle d, uint32_t which, cudlaDevAttribute* a) {
  return cudlaDeviceGetAttribute(d, (cudlaDevAttributeType)which, a);
}
