// PNG and JPEG decoding/encoding through libpng and libjpeg(-turbo), for TorchVision's `io`.
//
// Every entry point catches the libraries' errors (libpng's error callback and libjpeg's error_exit both
// longjmp back into the function that called the library), frees everything it allocated, and returns
// nonzero with a message in `message`. No function prints anything.
#ifndef IMAGE_CODECS_H
#define IMAGE_CODECS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// How a decoder lays out its output (torchvision's ImageReadMode, plus PIL's 8-bit L/RGB/RGBA).
enum {
    IC_MODE_UNCHANGED = 0,   // the file's own channels; palette PNGs give their indices
    IC_MODE_GRAY = 1,
    IC_MODE_GRAY_ALPHA = 2,
    IC_MODE_RGB = 3,
    IC_MODE_RGB_ALPHA = 4,
    IC_MODE_IMAGE = 5        // 8 bits, 1 (L), 3 (RGB) or 4 (RGBA) channels: what PIL opens
};

#define IC_MESSAGE_SIZE 256

/// A decoded image: `height` rows of `width * channels` samples, interleaved (HWC). Samples are bytes when
/// `bit_depth` is 8 and native-endian uint16 when it is 16. `pixels` is malloc'd: release with ic_free.
typedef struct {
    uint8_t *pixels;
    uint8_t **rows;          // scratch, owned by the decoder (always NULL on return)
    uint8_t *scratch;        // scratch, owned by the decoder (always NULL on return)
    uint32_t width;
    uint32_t height;
    int channels;
    int bit_depth;
    char message[IC_MESSAGE_SIZE];
} ic_decoded;

/// An encoded file in a malloc'd buffer: release `data` with ic_free.
typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
    char message[IC_MESSAGE_SIZE];
} ic_encoded;

/// Decodes a PNG held in `data[0..<size]`. Images of more than `max_pixels` pixels are refused before any
/// pixel memory is allocated. Returns 0 on success.
int ic_png_decode(const uint8_t *data, size_t size, int mode, uint64_t max_pixels, ic_decoded *out);

/// Decodes a JPEG (baseline or progressive, grey, YCbCr, RGB or CMYK) held in `data[0..<size]`. A file that
/// ends early is an error, as in torchvision. Modes: UNCHANGED, GRAY, RGB, IMAGE; CMYK/YCCK files are
/// converted to RGB (and grey) as torchvision does (Pillow's inverted-CMYK rule). Returns 0 on success.
int ic_jpeg_decode(const uint8_t *data, size_t size, int mode, uint64_t max_pixels, ic_decoded *out);

/// Encodes 8-bit interleaved pixels (1, 2, 3 or 4 channels) as a non-interlaced PNG with zlib
/// `compression_level` 0...9. Returns 0 on success.
int ic_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, int compression_level,
                  ic_encoded *out);

/// Encodes 8-bit interleaved pixels (1 or 3 channels) as a baseline JPEG of `quality` 1...100.
int ic_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, int quality,
                   ic_encoded *out);

/// Frees a buffer returned by this library.
void ic_free(void *p);

/// The versions of the libraries linked, e.g. "libpng 1.6.39, libjpeg 62 (turbo 2.1.5)".
const char *ic_library_versions(void);

#ifdef __cplusplus
}
#endif
#endif
