/* A plain C cuDLA client that includes only cudla.h: the hybrid-mode steps on any loadable, model-agnostic.
 * Usage: hybrid_steps LOADABLE INPUT.bin OUTPUT.bin [CORE]
 * INPUT.bin holds every input buffer back to back (descriptor sizes); OUTPUT.bin receives the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudla.h"

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudlaStatus s_ = (call);                                                              \
    if (s_ != cudlaSuccess) {                                                             \
      fprintf(stderr, "%s failed with status %d at line %d\n", #call, (int)s_, __LINE__); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

static unsigned char* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* b = (unsigned char*)malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return b;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: hybrid_steps LOADABLE INPUT.bin OUTPUT.bin [CORE]\n");
    return 2;
  }
  uint64_t core = argc > 4 ? (uint64_t)atoi(argv[4]) : 0, version = 0, count = 0;
  /* 1. version and devices */
  CHECK(cudlaGetVersion(&version));
  CHECK(cudlaDeviceGetCount(&count));
  printf("cuDLA %llu, %llu DLA cores\n", (unsigned long long)version, (unsigned long long)count);
  /* 2. create a device in hybrid mode */
  cudlaDevHandle dev = NULL;
  CHECK(cudlaCreateDevice(core, &dev, CUDLA_CUDA_DLA));
  /* 3. load the loadable from memory */
  size_t size = 0, in_size = 0;
  unsigned char* blob = read_all(argv[1], &size);
  if (!blob) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  cudlaModule mod = NULL;
  CHECK(cudlaModuleLoadFromMemory(dev, blob, size, &mod, 0));
  /* 4. the tensor descriptors keep this code model-agnostic */
  cudlaModuleAttribute attr;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_NUM_INPUT_TENSORS, &attr));
  uint32_t nin = attr.numInputTensors;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_NUM_OUTPUT_TENSORS, &attr));
  uint32_t nout = attr.numOutputTensors;
  cudlaModuleTensorDescriptor* din = (cudlaModuleTensorDescriptor*)calloc(nin, sizeof *din);
  cudlaModuleTensorDescriptor* dout = (cudlaModuleTensorDescriptor*)calloc(nout, sizeof *dout);
  attr.inputTensorDesc = din;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_INPUT_TENSOR_DESCRIPTORS, &attr));
  attr.outputTensorDesc = dout;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_OUTPUT_TENSOR_DESCRIPTORS, &attr));
  /* 5. allocate buffers by the descriptors' sizes and 6. register them */
  uint64_t** in_reg = (uint64_t**)calloc(nin, sizeof(uint64_t*));
  uint64_t** out_reg = (uint64_t**)calloc(nout, sizeof(uint64_t*));
  void** in_buf = (void**)calloc(nin, sizeof(void*));
  void** out_buf = (void**)calloc(nout, sizeof(void*));
  for (uint32_t i = 0; i < nin; ++i) {
    printf("input  %s: %llu bytes, n%llu c%llu h%llu w%llu, format %u type %u\n", din[i].name,
           (unsigned long long)din[i].size, (unsigned long long)din[i].n, (unsigned long long)din[i].c,
           (unsigned long long)din[i].h, (unsigned long long)din[i].w, din[i].dataFormat, din[i].dataType);
    if (posix_memalign(&in_buf[i], 64, din[i].size)) return 1;
    CHECK(cudlaMemRegister(dev, (const uint64_t*)in_buf[i], din[i].size, &in_reg[i], 0));
  }
  for (uint32_t i = 0; i < nout; ++i) {
    printf("output %s: %llu bytes\n", dout[i].name, (unsigned long long)dout[i].size);
    if (posix_memalign(&out_buf[i], 64, dout[i].size)) return 1;
    CHECK(cudlaMemRegister(dev, (const uint64_t*)out_buf[i], dout[i].size, &out_reg[i], 0));
  }
  /* 7. copy the input in */
  unsigned char* input = read_all(argv[2], &in_size);
  size_t off = 0;
  for (uint32_t i = 0; i < nin; ++i) {
    if (!input || off + din[i].size > in_size) {
      fprintf(stderr, "%s is too short\n", argv[2]);
      return 1;
    }
    memcpy(in_buf[i], input + off, din[i].size);
    off += din[i].size;
  }
  /* 8. submit the task (NULL stream: it has run when the call returns) */
  cudlaTask task;
  memset(&task, 0, sizeof task);
  task.moduleHandle = mod;
  task.inputTensor = (const uint64_t* const*)in_reg;
  task.numInputTensors = nin;
  task.outputTensor = out_reg;
  task.numOutputTensors = nout;
  CHECK(cudlaSubmitTask(dev, &task, 1, NULL, 0));
  CHECK(cudlaGetLastError(dev));
  /* 9. read the output, then free every handle */
  FILE* f = fopen(argv[3], "wb");
  for (uint32_t i = 0; i < nout; ++i) fwrite(out_buf[i], 1, dout[i].size, f);
  fclose(f);
  for (uint32_t i = 0; i < nin; ++i) CHECK(cudlaMemUnregister(dev, in_reg[i]));
  for (uint32_t i = 0; i < nout; ++i) CHECK(cudlaMemUnregister(dev, out_reg[i]));
  CHECK(cudlaModuleUnload(mod, 0));
  CHECK(cudlaDestroyDevice(dev));
  for (uint32_t i = 0; i < nin; ++i) free(in_buf[i]);
  for (uint32_t i = 0; i < nout; ++i) free(out_buf[i]);
  free(in_reg);
  free(out_reg);
  free(in_buf);
  free(out_buf);
  free(din);
  free(dout);
  free(blob);
  free(input);
  printf("ok\n");
  return 0;
}
