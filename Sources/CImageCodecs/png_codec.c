// libpng shims: decode with torchvision's read modes, encode from memory. Errors longjmp back here.
#include <png.h>
#include <setjmp.h>
#include "ic_common.h"

typedef struct {
    const uint8_t *next;
    size_t left;
    char *message;
} png_source;

static void ic_png_error(png_structp png, png_const_charp msg) {
    char *message = (char *)png_get_error_ptr(png);
    if (message && message[0] == 0) ic_set_message(message, "%s", msg);
    png_longjmp(png, 1);
}

static void ic_png_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;   // warnings (e.g. incorrect sRGB profiles) are not errors, and libraries don't print
}

static void ic_png_read(png_structp png, png_bytep dst, png_size_t count) {
    png_source *src = (png_source *)png_get_io_ptr(png);
    if (src->left < count) {
        ic_set_message(src->message, "unexpected end of data: the PNG file is truncated");
        png_longjmp(png, 1);
    }
    memcpy(dst, src->next, count);
    src->next += count;
    src->left -= count;
}

/// Sets libpng's transformations for `mode`; the output channel count is read back afterwards.
static void ic_png_configure(png_structp png, png_infop info, int mode, int bit_depth, int color_type) {
    int is_palette = color_type == PNG_COLOR_TYPE_PALETTE;
    int has_color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
    int has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    // Palette images expand tRNS into an alpha channel; other types keep their declared channels, as in torchvision.
    int has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || (is_palette && has_trns);
    png_uint_32 opaque = bit_depth == 16 ? 0xffff : 0xff;

    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    switch (mode) {
    case IC_MODE_UNCHANGED:
        if (is_palette && bit_depth < 8) png_set_packing(png);   // one palette index per byte
        break;
    case IC_MODE_GRAY:
        if (color_type == PNG_COLOR_TYPE_GRAY) break;
        if (is_palette) png_set_palette_to_rgb(png);
        if (has_alpha) png_set_strip_alpha(png);
        if (has_color) png_set_rgb_to_gray(png, 1, 0.2989, 0.587);
        break;
    case IC_MODE_GRAY_ALPHA:
        if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA) break;
        if (is_palette) png_set_palette_to_rgb(png);
        if (!has_alpha) png_set_add_alpha(png, opaque, PNG_FILLER_AFTER);
        if (has_color) png_set_rgb_to_gray(png, 1, 0.2989, 0.587);
        break;
    case IC_MODE_RGB:
        if (color_type == PNG_COLOR_TYPE_RGB) break;
        if (is_palette) png_set_palette_to_rgb(png);
        else if (!has_color) png_set_gray_to_rgb(png);
        if (has_alpha) png_set_strip_alpha(png);
        break;
    case IC_MODE_RGB_ALPHA:
        if (color_type == PNG_COLOR_TYPE_RGB_ALPHA) break;
        if (is_palette) png_set_palette_to_rgb(png);
        else if (!has_color) png_set_gray_to_rgb(png);
        if (!has_alpha) png_set_add_alpha(png, opaque, PNG_FILLER_AFTER);
        break;
    case IC_MODE_IMAGE:
        // PIL's view: palettes become RGB(A), tRNS becomes alpha, 16-bit samples keep their high byte,
        // and grey with alpha becomes RGBA (there is no 8-bit LA mode here).
        png_set_expand(png);
        if (bit_depth == 16) png_set_strip_16(png);
        if (!has_color && ((color_type & PNG_COLOR_MASK_ALPHA) || has_trns)) png_set_gray_to_rgb(png);
        break;
    default:
        break;
    }
    if (bit_depth == 16 && mode != IC_MODE_IMAGE) {
        const uint16_t probe = 1;
        if (*(const uint8_t *)&probe == 1) png_set_swap(png);   // PNG is big-endian; hand back native uint16
    }
}

int ic_png_decode(const uint8_t *data, size_t size, int mode, uint64_t max_pixels, ic_decoded *out) {
    memset(out, 0, sizeof(*out));
    if (size < 8 || png_sig_cmp((png_const_bytep)data, 0, 8) != 0) {
        ic_set_message(out->message, "not a PNG file (missing the PNG signature)");
        return 1;
    }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, out->message, ic_png_error, ic_png_warning);
    if (!png) {
        ic_set_message(out->message, "libpng could not allocate its read structure");
        return 1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        ic_set_message(out->message, "libpng could not allocate its info structure");
        return 1;
    }
    png_source src = {data + 8, size - 8, out->message};
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        ic_release_decoded(out, 1);
        if (out->message[0] == 0) ic_set_message(out->message, "libpng failed without a message");
        return 1;
    }
    png_set_sig_bytes(png, 8);
    png_set_read_fn(png, &src, ic_png_read);
    // Our own limit on pixels replaces libpng's 1,000,000-per-side default.
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    // Colour-space chunks are ignored, as in torchvision: with them libpng would convert RGB to grey in
    // linear light, giving other values than torchvision's plain weighted sum.
    static const png_byte colour_chunks[] = "gAMA\0sRGB\0iCCP\0cHRM\0";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, colour_chunks, 4);
    png_read_info(png, info);

    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    if ((uint64_t)width * height > max_pixels) {
        ic_allocate(out, width, height, 0, max_pixels);   // sets the message
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    ic_png_configure(png, info, mode, bit_depth, color_type);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    out->width = width;
    out->height = height;
    out->channels = png_get_channels(png, info);
    out->bit_depth = png_get_bit_depth(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    if ((out->bit_depth != 8 && out->bit_depth != 16)
        || row_bytes != (size_t)width * out->channels * (out->bit_depth / 8)) {
        ic_set_message(out->message, "unexpected PNG layout after conversion (%d channels of %d bits)",
                       out->channels, out->bit_depth);
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    if (!ic_allocate(out, width, height, row_bytes, max_pixels)) {
        png_destroy_read_struct(&png, &info, NULL);
        ic_release_decoded(out, 1);
        return 1;
    }
    png_read_image(png, out->rows);
    png_destroy_read_struct(&png, &info, NULL);
    ic_release_decoded(out, 0);
    return 0;
}

static void ic_png_write(png_structp png, png_bytep bytes, png_size_t count) {
    ic_encoded *out = (ic_encoded *)png_get_io_ptr(png);
    if (!ic_reserve(out, count)) png_error(png, "out of memory growing the PNG output buffer");
    memcpy(out->data + out->size, bytes, count);
    out->size += count;
}

static void ic_png_flush(png_structp png) { (void)png; }

int ic_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, int compression_level,
                  ic_encoded *out) {
    memset(out, 0, sizeof(*out));
    static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    if (channels < 1 || channels > 4 || width == 0 || height == 0) {
        ic_set_message(out->message, "cannot encode a %u x %u image with %d channels as PNG", width, height, channels);
        return 1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, out->message, ic_png_error, ic_png_warning);
    if (!png) {
        ic_set_message(out->message, "libpng could not allocate its write structure");
        return 1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        ic_set_message(out->message, "libpng could not allocate its info structure");
        return 1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(out->data);
        out->data = NULL;
        out->size = out->capacity = 0;
        if (out->message[0] == 0) ic_set_message(out->message, "libpng failed without a message");
        return 1;
    }
    png_set_write_fn(png, out, ic_png_write, ic_png_flush);
    png_set_compression_level(png, compression_level);
    png_set_IHDR(png, info, width, height, 8, types[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    size_t row_bytes = (size_t)width * channels;
    for (uint32_t y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * row_bytes);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

void ic_free(void *p) { free(p); }
