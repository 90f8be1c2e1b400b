// Helpers shared by the PNG and JPEG shims.
#ifndef IC_COMMON_H
#define IC_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "image_codecs.h"

static inline void ic_set_message(char *dst, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, IC_MESSAGE_SIZE, fmt, ap);
    va_end(ap);
}

/// Grows `out` to hold `extra` more bytes; 0 when memory ran out.
static inline int ic_reserve(ic_encoded *out, size_t extra) {
    if (out->capacity - out->size >= extra) return 1;
    size_t need = out->size + extra;
    if (need < out->size) return 0;
    size_t cap = out->capacity ? out->capacity : 65536;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) { cap = need; break; }
        cap *= 2;
    }
    uint8_t *grown = (uint8_t *)realloc(out->data, cap);
    if (!grown) return 0;
    out->data = grown;
    out->capacity = cap;
    return 1;
}

/// Checks the declared size against the pixel limit and allocates the output and its row pointers.
/// Returns 0 with a message when the image is too large or memory ran out.
static inline int ic_allocate(ic_decoded *out, uint32_t width, uint32_t height, size_t row_bytes,
                              uint64_t max_pixels) {
    uint64_t pixels = (uint64_t)width * (uint64_t)height;
    if (width == 0 || height == 0) {
        ic_set_message(out->message, "image has an empty size of %u x %u pixels", width, height);
        return 0;
    }
    if (pixels > max_pixels) {
        ic_set_message(out->message,
                       "image size %u x %u (%llu pixels) exceeds the limit of %llu pixels "
                       "(decompression bomb protection; raise io.maxImagePixels to allow it)",
                       width, height, (unsigned long long)pixels, (unsigned long long)max_pixels);
        return 0;
    }
    if (row_bytes != 0 && (size_t)height > SIZE_MAX / row_bytes) {
        ic_set_message(out->message, "image of %u x %u pixels is too large to hold in memory", width, height);
        return 0;
    }
    out->pixels = (uint8_t *)malloc(row_bytes * height);
    out->rows = (uint8_t **)malloc(sizeof(uint8_t *) * height);
    if (!out->pixels || !out->rows) {
        ic_set_message(out->message, "out of memory allocating a %u x %u image", width, height);
        return 0;
    }
    for (uint32_t y = 0; y < height; y++) out->rows[y] = out->pixels + (size_t)y * row_bytes;
    return 1;
}

/// Frees what a failed decode allocated.
static inline void ic_release_decoded(ic_decoded *out, int failed) {
    free(out->rows);
    out->rows = NULL;
    free(out->scratch);
    out->scratch = NULL;
    if (failed) {
        free(out->pixels);
        out->pixels = NULL;
    }
}

#endif
