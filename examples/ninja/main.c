/* Host side of the plain Ninja example: reads the embedded binary through the header mlirgpu generated. */
#include <stdio.h>

#include "saxpy_gpu.h"

int main(void) {
  if (saxpy_module_binary_size < 64) {
    fprintf(stderr, "saxpy: embedded binary not found\n");
    return 1;
  }
  printf("saxpy: %s %s binary, %llu bytes, OK\n", SAXPY_MODULE_TARGET, SAXPY_MODULE_CHIPS,
         (unsigned long long)saxpy_module_binary_size);
  return 0;
}
