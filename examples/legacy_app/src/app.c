/* A host program that carries a GPU kernel compiled from stencil.mlir and reports it. */
#include <stdint.h>
#include <stdio.h>

extern const unsigned char stencil_binary[];
extern const uint64_t stencil_binary_size;

int main(void) {
  if (stencil_binary_size < 16) {
    fprintf(stderr, "app: no GPU binary embedded\n");
    return 1;
  }
  printf("app: stencil kernel embedded, %llu bytes\n", (unsigned long long)stencil_binary_size);
  return 0;
}
