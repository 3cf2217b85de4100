/* Host side of the saxpy example: finds the embedded GPU binary through the symbols the object defines and
 * checks that it is a complete binary of the expected kind holding the saxpy kernel. Exits non-zero if not.
 * (No GPU is needed: this inspects the bytes a GPU driver would load.) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern const unsigned char saxpy_module_binary[];
extern const uint64_t saxpy_module_binary_size;

static int contains(const unsigned char *data, uint64_t size, const char *text) {
  size_t n = strlen(text);
  for (uint64_t i = 0; i + n <= size; i++)
    if (memcmp(data + i, text, n) == 0) return 1;
  return 0;
}

int main(void) {
  const unsigned char *bin = saxpy_module_binary;
  uint64_t size = saxpy_module_binary_size;
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba}; /* 0xBA55ED50, little endian */
  static const unsigned char spirv[4] = {0x03, 0x02, 0x23, 0x07};  /* SPIR-V magic 0x07230203 */
  int is_elf = size > 64 && memcmp(bin, elf, 4) == 0;
  int is_fatbin = size > 16 && memcmp(bin, fatbin, 4) == 0;
  int is_spirv = size > 20 && size % 4 == 0 && memcmp(bin, spirv, 4) == 0;
  const char *kind = is_elf ? "ELF (cubin/HSACO)" : is_fatbin ? "fatbin" : is_spirv ? "SPIR-V" : "text (ISA)";
  if (size == 0 || ((uintptr_t)bin % 8) != 0) {
    fprintf(stderr, "saxpy: bad embedded binary (size %llu)\n", (unsigned long long)size);
    return 1;
  }
  if (!is_elf && !is_fatbin && !is_spirv && bin[size - 1] != '\0') {
    fprintf(stderr, "saxpy: ISA text is not NUL-terminated\n");
    return 1;
  }
  if (!is_fatbin && !contains(bin, size, "saxpy")) {
    fprintf(stderr, "saxpy: kernel symbol not found in the %s binary\n", kind);
    return 1;
  }
  printf("saxpy: %llu-byte %s binary embedded, OK\n", (unsigned long long)size, kind);
  return 0;
}
