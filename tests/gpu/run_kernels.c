/* Loads every NVVM binary embedded in this program (found through the `mlirgpu_registry` section that every
 * mlirgpu object carries) with the CUDA driver API, runs the kernels it knows and checks their results on the
 * host. The driver is opened at run time (dlopen), so the program builds and links on machines without one.
 *
 * Known kernels: `saxpy` (examples/saxpy) and the libdevice-calling `mish` and `pow_sin_f64`
 * (examples/neutral/softplus.mlir, memref arguments passed as the expanded descriptors MLIR's lowering makes).
 *
 * Exit status: 0 when every binary loaded and every kernel's results match, 1 on any failure, 77 when there is no
 * CUDA driver or no GPU (the test then skips). */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* struct mlirgpu_binary and MLIRGPU_FOREACH_BINARY come from the headers mlirgpu wrote (gcc -include). */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                           void **, void **);
  CUresult (*CtxSynchronize)(void);
  CUresult (*GetErrorString)(CUresult, const char **);
} cu;

static int failures;

static const char *error_text(CUresult status) {
  const char *text = NULL;
  if (cu.GetErrorString) cu.GetErrorString(status, &text);
  return text ? text : "unknown CUDA error";
}

#define CHECK(call, what)                                                                 \
  do {                                                                                    \
    CUresult status_ = (call);                                                            \
    if (status_ != 0) {                                                                   \
      printf("FAIL %s: %s (%d)\n", what, error_text(status_), status_);                   \
      failures++;                                                                         \
      return;                                                                             \
    }                                                                                     \
  } while (0)

static int open_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return 0;
#define LOAD(field, name) \
  if (!(*(void **)&cu.field = dlsym(lib, name))) return 0;
  LOAD(Init, "cuInit") LOAD(DeviceGet, "cuDeviceGet") LOAD(DeviceGetAttribute, "cuDeviceGetAttribute")
  LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") LOAD(CtxSetCurrent, "cuCtxSetCurrent")
  LOAD(ModuleLoadData, "cuModuleLoadData") LOAD(ModuleGetFunction, "cuModuleGetFunction")
  LOAD(ModuleUnload, "cuModuleUnload") LOAD(MemAlloc, "cuMemAlloc_v2") LOAD(MemFree, "cuMemFree_v2")
  LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2") LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2") LOAD(LaunchKernel, "cuLaunchKernel")
  LOAD(CtxSynchronize, "cuCtxSynchronize") LOAD(GetErrorString, "cuGetErrorString")
#undef LOAD
  return 1;
}

/* |got - want| within `rel` of |want| (plus `abs_tol`), for every element; prints the first mismatch. */
static int close_enough(const char *what, const double *got, const double *want, int n, double rel, double abs_tol) {
  for (int i = 0; i < n; i++) {
    if (!(fabs(got[i] - want[i]) <= rel * fabs(want[i]) + abs_tol)) {
      printf("FAIL %s: element %d is %.17g, expected %.17g\n", what, i, got[i], want[i]);
      return 0;
    }
  }
  return 1;
}

static void run_saxpy(CUmodule module, const char *label) {
  enum { N = 1000 };
  float x[N], y[N], out[N];
  double got[N], want[N];
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = 1000.0f - (float)i;
  CUfunction fn;
  CHECK(cu.ModuleGetFunction(&fn, module, "saxpy"), label);
  CUdeviceptr dx, dy;
  CHECK(cu.MemAlloc(&dx, sizeof x), label);
  CHECK(cu.MemAlloc(&dy, sizeof y), label);
  CHECK(cu.MemcpyHtoD(dx, x, sizeof x), label);
  CHECK(cu.MemcpyHtoD(dy, y, sizeof y), label);
  int n = N;
  float a = 3.0f;
  void *args[] = {&n, &a, &dx, &dy};
  /* saxpy reads its block size from %ntid, so any block size works; 256 matches the ROCDL variant. */
  CHECK(cu.LaunchKernel(fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL), label);
  CHECK(cu.CtxSynchronize(), label);
  CHECK(cu.MemcpyDtoH(out, dy, sizeof out), label);
  cu.MemFree(dx);
  cu.MemFree(dy);
  for (int i = 0; i < N; i++) got[i] = out[i], want[i] = (double)(a * x[i] + y[i]);
  if (close_enough(label, got, want, N, 0.0, 0.0)) printf("ok   %s: saxpy on %d elements\n", label, N);
  else failures++;
}

static void run_mish(CUmodule module, const char *label) {
  enum { N = 777 };
  float x[N], y[N];
  double got[N], want[N];
  for (int i = 0; i < N; i++) x[i] = -8.0f + 16.0f * (float)i / N;
  CUfunction fn;
  CHECK(cu.ModuleGetFunction(&fn, module, "mish"), label);
  CUdeviceptr dx, dy;
  CHECK(cu.MemAlloc(&dx, sizeof x), label);
  CHECK(cu.MemAlloc(&dy, sizeof y), label);
  CHECK(cu.MemcpyHtoD(dx, x, sizeof x), label);
  int64_t offset = 0, size = N, stride = 1;
  void *args[] = {&dx, &dx, &offset, &size, &stride, &dy, &dy, &offset, &size, &stride};
  CHECK(cu.LaunchKernel(fn, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL), label);
  CHECK(cu.CtxSynchronize(), label);
  CHECK(cu.MemcpyDtoH(y, dy, sizeof y), label);
  cu.MemFree(dx);
  cu.MemFree(dy);
  for (int i = 0; i < N; i++) got[i] = y[i], want[i] = log1p(exp((double)x[i])) * tanh((double)x[i]);
  if (close_enough(label, got, want, N, 4e-6, 1e-7)) printf("ok   %s: mish (libdevice expf/log1pf/tanhf) on %d elements\n", label, N);
  else failures++;
}

static void run_pow_sin(CUmodule module, const char *label) {
  enum { N = 512 };
  double a[N], out[N], want[N];
  for (int i = 0; i < N; i++) a[i] = -20.0 + 40.0 * i / N;
  CUfunction fn;
  CHECK(cu.ModuleGetFunction(&fn, module, "pow_sin_f64"), label);
  CUdeviceptr da, dout;
  CHECK(cu.MemAlloc(&da, sizeof a), label);
  CHECK(cu.MemAlloc(&dout, sizeof out), label);
  CHECK(cu.MemcpyHtoD(da, a, sizeof a), label);
  int64_t offset = 0, size = N, stride = 1;
  double p = 2.5;
  void *args[] = {&da, &da, &offset, &size, &stride, &dout, &dout, &offset, &size, &stride, &p};
  CHECK(cu.LaunchKernel(fn, N / 64, 1, 1, 64, 1, 1, 0, NULL, args, NULL), label);
  CHECK(cu.CtxSynchronize(), label);
  CHECK(cu.MemcpyDtoH(out, dout, sizeof out), label);
  cu.MemFree(da);
  cu.MemFree(dout);
  for (int i = 0; i < N; i++) want[i] = sqrt(pow(fabs(a[i]), p)) + sin(a[i]);
  if (close_enough(label, out, want, N, 1e-13, 1e-14)) printf("ok   %s: pow_sin_f64 (libdevice pow/sqrt/sin) on %d elements\n", label, N);
  else failures++;
}

static void run_binary(const struct mlirgpu_binary *b) {
  char label[256];
  snprintf(label, sizeof label, "%s @%s %s %s (%llu bytes, %s)", b->source, b->module, b->chips, b->format,
           (unsigned long long)b->size, b->section);
  CUmodule module;
  CHECK(cu.ModuleLoadData(&module, b->data), label);
  int ran = 0;
  CUfunction probe;
  if (cu.ModuleGetFunction(&probe, module, "saxpy") == 0) run_saxpy(module, label), ran++;
  if (cu.ModuleGetFunction(&probe, module, "mish") == 0) run_mish(module, label), ran++;
  if (cu.ModuleGetFunction(&probe, module, "pow_sin_f64") == 0) run_pow_sin(module, label), ran++;
  if (!ran) {
    printf("FAIL %s: loaded, but holds none of the kernels this program checks\n", label);
    failures++;
  }
  cu.ModuleUnload(module);
}

int main(void) {
  int count = 0;
  MLIRGPU_FOREACH_BINARY(b) if (strcmp(b->target, "nvvm") == 0) count++;
  printf("%d NVVM binaries embedded\n", count);
  if (count == 0) return 1;
  if (!open_driver()) {
    printf("no CUDA driver (libcuda.so.1) on this machine\n");
    return 77;
  }
  CUdevice device;
  CUcontext context;
  int major = 0, minor = 0;
  if (cu.Init(0) != 0 || cu.DeviceGet(&device, 0) != 0) {
    printf("no CUDA device on this machine\n");
    return 77;
  }
  cu.DeviceGetAttribute(&major, 75, device); /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  cu.DeviceGetAttribute(&minor, 76, device); /* ..._MINOR */
  printf("device 0: compute capability %d.%d\n", major, minor);
  if (cu.DevicePrimaryCtxRetain(&context, device) != 0 || cu.CtxSetCurrent(context) != 0) {
    printf("FAIL: no context on device 0\n");
    return 1;
  }
  MLIRGPU_FOREACH_BINARY(b) if (strcmp(b->target, "nvvm") == 0) run_binary(b);
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
