/* Host side of the CMake example: the generated headers come from the gpu_kernels target's usage requirements;
 * the program finds both binaries by their symbols and in the registry, and exits non-zero if anything is off. */
#include <stdio.h>
#include <string.h>

#include "scale.h"
#include "shift.h"

int main(void) {
  int found = 0;
  MLIRGPU_FOREACH_BINARY(b) {
    if ((strcmp(b->module, "scale_module") == 0 && b->data == scale_module_binary) ||
        (strcmp(b->module, "shift_module") == 0 && b->data == shift_module_binary))
      found++;
  }
  if (found != 2 || scale_module_binary_size < 64 || shift_module_binary_size < 64) {
    fprintf(stderr, "cmake example: embedded binaries not found (%d)\n", found);
    return 1;
  }
  printf("cmake example: %s %s binaries of %llu and %llu bytes, OK\n", SCALE_MODULE_TARGET, SCALE_MODULE_FORMAT,
         (unsigned long long)scale_module_binary_size, (unsigned long long)shift_module_binary_size);
  return 0;
}
