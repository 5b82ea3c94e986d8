/* gpuctl lab stand-in for libcuda.so.1: the driver API's entry points that
 * tell whether CUDA can start. Each answer comes from the node's simulated
 * driver state, asked once per process from cuda-state (Python, shared with
 * the other stand-ins): "<CUresult> <device count>". */
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
static CUresult init_result = 3; /* CUDA_ERROR_NOT_INITIALIZED until cuInit */
static int device_count = 0;

static const struct { CUresult code; const char *name, *text; } errors[] = {
  {0, "CUDA_SUCCESS", "no error"},
  {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
  {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
  {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult cuInit(unsigned int flags) {
  const char *helper = getenv("GPUCTL_LAB_CUDA_STATE");
  char command[512];
  FILE *p;
  if (flags != 0) return 1;
  snprintf(command, sizeof command, "%s --cuinit 2>/dev/null",
           helper && *helper ? helper : "/usr/lib/gpuctl-lab/cuda-state");
  init_result = 999;
  p = popen(command, "r");
  if (p) {
    if (fscanf(p, "%d %d", &init_result, &device_count) != 2) init_result = 999;
    pclose(p);
  }
  return init_result;
}

CUresult cuDeviceGetCount(int *count) {
  if (!count) return 1;
  if (init_result != 0) return init_result;
  *count = device_count;
  return 0;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version) return 1;
  *version = @CUDA_VERSION@;
  return 0;
}

static int find(CUresult code) {
  for (unsigned i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == code) return (int)i;
  return -1;
}

CUresult cuGetErrorName(CUresult code, const char **name) {
  int i = find(code);
  if (!name) return 1;
  if (i < 0) { *name = NULL; return 1; }
  *name = errors[i].name;
  return 0;
}

CUresult cuGetErrorString(CUresult code, const char **text) {
  int i = find(code);
  if (!text) return 1;
  if (i < 0) { *text = NULL; return 1; }
  *text = errors[i].text;
  return 0;
}
