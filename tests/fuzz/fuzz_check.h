/* Invariant checks for fuzz targets: an abort() with the failed condition, so libFuzzer
 * records a reproducer and the corpus replay under ctest fails loudly. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
