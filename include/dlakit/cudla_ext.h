/* dlakit's additions to the cuDLA C ABI for the CPU-emulated DLA (no CUDA streams here). */
#ifndef DLAKIT_CUDLA_EXT_H
#define DLAKIT_CUDLA_EXT_H
#include "cudla.h"
#ifdef __cplusplus
extern "C" {
#endif
/* The context of the most recent failing cuDLA call (what, where, the value and the limit). */
const char* dlakitCudlaLastMessage(void);
/* Waits for every task submitted on a non-NULL stream by this device (cudaStreamSynchronize's role). */
cudlaStatus dlakitCudlaSynchronize(cudlaDevHandle const devHandle);
#ifdef __cplusplus
}
#endif
#endif
