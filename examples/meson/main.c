/* Host side of the Meson example: includes the headers mlirgpu generated for the two objects, and finds the
 * binaries both by their symbols and through the registry of every embedded binary. Exits non-zero if anything
 * is off. */
#include <stdio.h>
#include <string.h>

#include "blend_gpu.h"
#include "saxpy_gpu.h"

int main(void) {
  int found = 0, total = 0;
  MLIRGPU_FOREACH_BINARY(b) {
    total++;
    if (strcmp(b->module, "saxpy_module") == 0 && b->data == saxpy_module_binary &&
        b->size == saxpy_module_binary_size && strcmp(b->target, SAXPY_MODULE_TARGET) == 0)
      found++;
  }
  if (found != 1 || total != 2 || saxpy_module_binary_size < 64 || blend_module_binary_size < 64) {
    fprintf(stderr, "saxpy: embedded binary not found (%d)\n", found);
    return 1;
  }
  printf("saxpy: %s %s %s binary, %llu bytes, OK\n", SAXPY_MODULE_TARGET, SAXPY_MODULE_CHIPS, SAXPY_MODULE_FORMAT,
         (unsigned long long)saxpy_module_binary_size);
  return 0;
}
