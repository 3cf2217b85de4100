/* Links the shared library libgpukernels.so and reads its embedded GPU binary at run time, directly through
 * the generated header's symbols and through the library's own function; both must be the same bytes. */
#include <stdio.h>
#include <string.h>
#include "kernels.shared.h"

uint64_t gpukernels_blend_size(void);
const unsigned char *gpukernels_blend_data(void);
const char *gpukernels_target(void);

int main(void) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};  /* NVIDIA fatbin; AMD: an offload bundle */
  static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
  static const unsigned char spirv[4] = {0x03, 0x02, 0x23, 0x07};  /* Intel (XeVM): a SPIR-V module */
  if (blend_binary_size == 0 || blend_binary_size != gpukernels_blend_size() ||
      blend_binary != gpukernels_blend_data()) {
    fprintf(stderr, "show_kernels: the header and the library disagree\n");
    return 1;
  }
  if (memcmp(blend_binary, elf, 4) != 0 && memcmp(blend_binary, fatbin, 4) != 0 &&
      memcmp(blend_binary, bundle, sizeof bundle - 1) != 0 && memcmp(blend_binary, spirv, 4) != 0) {
    fprintf(stderr, "show_kernels: not a GPU binary\n");
    return 1;
  }
  printf("show_kernels: %s blend binary, %llu bytes, from the shared library, OK\n", BLEND_TARGET,
         (unsigned long long)blend_binary_size);
  return strcmp(BLEND_TARGET, gpukernels_target()) != 0;
}
