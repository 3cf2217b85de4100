/* Host side of the library example: both objects embed a binary whose kernels call the math library's
 * functions, linked in at build time. Checks each binary is there and names its kernel. (No GPU needed.) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "activations.h"
#include "normalize.h"

static int check(const char *what, const unsigned char *bin, uint64_t size, const char *kernel) {
  size_t n = strlen(kernel);
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  if (size == 0) {
    fprintf(stderr, "library: %s: no binary embedded\n", what);
    return 1;
  }
  if (size > 16 && memcmp(bin, fatbin, 4) == 0) {
    printf("library: %s: %llu-byte fatbin, OK\n", what, (unsigned long long)size);
    return 0;
  }
  for (uint64_t i = 0; i + n <= size; i++)
    if (memcmp(bin + i, kernel, n) == 0) {
      printf("library: %s: %llu-byte binary with %s, OK\n", what, (unsigned long long)size, kernel);
      return 0;
    }
  fprintf(stderr, "library: %s: kernel %s not found\n", what, kernel);
  return 1;
}

int main(void) {
  return check("activations", activations_binary, activations_binary_size, "softplus_axpy") |
         check("normalize", normalize_binary, normalize_binary_size, "to_unit");
}
