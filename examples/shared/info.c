/* Part of the libraries beside the GPU object: a function of the library that reports its embedded binary
 * through the symbols of the generated header (kernels.h for the static object, kernels.shared.h for the
 * shared one: both declare the same symbols). */
#include <stdint.h>
#include "kernels.h"

uint64_t gpukernels_blend_size(void) { return blend_binary_size; }
const unsigned char *gpukernels_blend_data(void) { return blend_binary; }
const char *gpukernels_target(void) { return BLEND_TARGET; }
