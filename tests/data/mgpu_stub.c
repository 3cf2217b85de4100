/* A stand-in for MLIR's GPU runtime wrappers (mgpu*): records what the launch glue in our host objects passes,
 * so tests can check the bytes handed to mgpuModuleLoad without a GPU. Loaded images go to
 * $STUB_DIR/load.<n>.bin, calls are logged to $STUB_DIR/calls.txt. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int loads;

static FILE *calls(void) {
  static FILE *file;
  if (!file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/calls.txt", getenv("STUB_DIR"));
    file = fopen(path, "w");
  }
  return file;
}

static void *save(const void *data, size_t size, const char *how) {
  char path[4096];
  snprintf(path, sizeof path, "%s/load.%d.bin", getenv("STUB_DIR"), loads);
  FILE *out = fopen(path, "wb");
  fwrite(data, 1, size, out);
  fclose(out);
  fprintf(calls(), "%s %d %zu\n", how, loads, size);
  return (void *)(uintptr_t)(++loads);
}

void *mgpuModuleLoad(void *data, size_t size) { return save(data, size, "load"); }
void *mgpuModuleLoadJIT(void *data, int opt) { (void)opt; return save(data, strlen(data), "loadjit"); }
void mgpuModuleUnload(void *module) { fprintf(calls(), "unload %d\n", (int)(uintptr_t)module - 1); }
void *mgpuModuleGetFunction(void *module, const char *name) {
  fprintf(calls(), "function %d %s\n", (int)(uintptr_t)module - 1, name);
  return strdup(name);
}
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                      intptr_t bz, int32_t smem, void *stream, void **params, void **extra, size_t count) {
  (void)stream; (void)params; (void)extra;
  fprintf(calls(), "launch %s grid %ld %ld %ld block %ld %ld %ld smem %d params %zu\n", (const char *)function,
          (long)gx, (long)gy, (long)gz, (long)bx, (long)by, (long)bz, smem, count);
}
void *mgpuStreamCreate(void) { return (void *)1; }
void mgpuStreamDestroy(void *stream) { (void)stream; }
void mgpuStreamSynchronize(void *stream) { (void)stream; }
void *mgpuEventCreate(void) { return (void *)1; }
void mgpuEventDestroy(void *event) { (void)event; }
void mgpuEventSynchronize(void *event) { (void)event; }
void mgpuEventRecord(void *event, void *stream) { (void)event; (void)stream; }
void mgpuStreamWaitEvent(void *stream, void *event) { (void)stream; (void)event; }
void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared) {
  (void)stream; (void)host_shared;
  return calloc(1, size ? size : 1);
}
void mgpuMemFree(void *ptr, void *stream) { (void)stream; free(ptr); }
void mgpuMemcpy(void *dst, void *src, size_t size, void *stream) { (void)stream; memmove(dst, src, size); }
