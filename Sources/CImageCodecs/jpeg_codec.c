// libjpeg(-turbo) shims: decode from and encode to memory. error_exit longjmps back here.
#include <setjmp.h>
#include "ic_common.h"
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char *message;
} ic_jpeg_error;

static void ic_jpeg_error_exit(j_common_ptr cinfo) {
    ic_jpeg_error *err = (ic_jpeg_error *)cinfo->err;
    if (err->message[0] == 0) {
        char text[JMSG_LENGTH_MAX];
        (*cinfo->err->format_message)(cinfo, text);
        ic_set_message(err->message, "%s", text);
    }
    longjmp(err->jump, 1);
}

static void ic_jpeg_silent(j_common_ptr cinfo) { (void)cinfo; }

// A source that fails at the end of the buffer instead of inventing an end-of-image marker, so that a
// truncated file is an error (as in torchvision and PIL) rather than a partly grey picture.
static void ic_src_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void ic_src_term(j_decompress_ptr cinfo) { (void)cinfo; }

static boolean ic_src_fill(j_decompress_ptr cinfo) {
    ic_jpeg_error *err = (ic_jpeg_error *)cinfo->err;
    ic_set_message(err->message, "unexpected end of data: the JPEG file is truncated");
    longjmp(err->jump, 1);
    return FALSE;
}

static void ic_src_skip(j_decompress_ptr cinfo, long count) {
    struct jpeg_source_mgr *src = cinfo->src;
    if (count <= 0) return;
    if ((size_t)count > src->bytes_in_buffer) ic_src_fill(cinfo);
    src->next_input_byte += count;
    src->bytes_in_buffer -= (size_t)count;
}

/// One scaled product k·v/255, rounded (the division by 255 done with shifts).
static inline int ic_mul255(int k, int v) {
    int t = k * v + 128;
    return ((t >> 8) + t) >> 8;
}

/// libjpeg's (Adobe-inverted) CMYK samples to RGB, R = K − K·(255 − C)/255, or to grey from that RGB
/// by PIL's luma rule.
static void ic_cmyk_row(const uint8_t *cmyk, uint8_t *dst, uint32_t width, int channels) {
    for (uint32_t x = 0; x < width; x++) {
        const uint8_t *p = cmyk + 4 * (size_t)x;
        int k = p[3];
        int r = k - ic_mul255(k, 255 - p[0]), g = k - ic_mul255(k, 255 - p[1]), b = k - ic_mul255(k, 255 - p[2]);
        if (channels == 3) {
            dst[3 * (size_t)x] = (uint8_t)r;
            dst[3 * (size_t)x + 1] = (uint8_t)g;
            dst[3 * (size_t)x + 2] = (uint8_t)b;
        } else {
            dst[x] = (uint8_t)((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
        }
    }
}

int ic_jpeg_decode(const uint8_t *data, size_t size, int mode, uint64_t max_pixels, ic_decoded *out) {
    memset(out, 0, sizeof(*out));
    struct jpeg_decompress_struct cinfo;
    struct jpeg_source_mgr src;
    ic_jpeg_error err;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = ic_jpeg_error_exit;
    err.pub.output_message = ic_jpeg_silent;   // corrupt-data warnings are not printed; they are not errors
    err.message = out->message;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        ic_release_decoded(out, 1);
        if (out->message[0] == 0) ic_set_message(out->message, "libjpeg failed without a message");
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    src.init_source = ic_src_init;
    src.fill_input_buffer = ic_src_fill;
    src.skip_input_data = ic_src_skip;
    src.resync_to_restart = jpeg_resync_to_restart;
    src.term_source = ic_src_term;
    src.next_input_byte = data;
    src.bytes_in_buffer = size;
    cinfo.src = &src;
    jpeg_read_header(&cinfo, TRUE);

    // libjpeg cannot turn CMYK into RGB or grey; those files are read as CMYK and converted here.
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    int want = 0;   // channels wanted from a CMYK file: 0 (as stored), 3 or 1
    switch (mode) {
    case IC_MODE_UNCHANGED:
        break;
    case IC_MODE_GRAY:
        if (cmyk) { cinfo.out_color_space = JCS_CMYK; want = 1; } else cinfo.out_color_space = JCS_GRAYSCALE;
        break;
    case IC_MODE_RGB:
        if (cmyk) { cinfo.out_color_space = JCS_CMYK; want = 3; } else cinfo.out_color_space = JCS_RGB;
        break;
    case IC_MODE_IMAGE:
        if (cmyk) { cinfo.out_color_space = JCS_CMYK; want = 3; }
        else cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
        break;
    default:
        ic_set_message(out->message, "this read mode is not supported for JPEG files (use unchanged, gray or RGB)");
        longjmp(err.jump, 1);
    }
    jpeg_calc_output_dimensions(&cinfo);
    if ((uint64_t)cinfo.output_width * cinfo.output_height > max_pixels) {
        ic_allocate(out, cinfo.output_width, cinfo.output_height, 0, max_pixels);   // sets the message
        longjmp(err.jump, 1);
    }
    jpeg_start_decompress(&cinfo);
    out->width = cinfo.output_width;
    out->height = cinfo.output_height;
    out->channels = want ? want : cinfo.output_components;
    out->bit_depth = 8;
    size_t row_bytes = (size_t)out->width * out->channels;
    if (!ic_allocate(out, out->width, out->height, row_bytes, max_pixels)) longjmp(err.jump, 1);
    if (want) {
        out->scratch = (uint8_t *)malloc((size_t)out->width * 4);
        if (!out->scratch) {
            ic_set_message(out->message, "out of memory allocating a CMYK row");
            longjmp(err.jump, 1);
        }
        while (cinfo.output_scanline < cinfo.output_height) {
            JDIMENSION y = cinfo.output_scanline;
            JSAMPROW row = out->scratch;
            jpeg_read_scanlines(&cinfo, &row, 1);
            ic_cmyk_row(out->scratch, out->rows[y], out->width, want);
        }
    } else {
        while (cinfo.output_scanline < cinfo.output_height) {
            JDIMENSION y = cinfo.output_scanline;
            jpeg_read_scanlines(&cinfo, out->rows + y, cinfo.output_height - y);
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    ic_release_decoded(out, 0);
    return 0;
}

// A destination that appends to an ic_encoded buffer, which the caller frees on every path.
typedef struct {
    struct jpeg_destination_mgr pub;
    ic_encoded *out;
} ic_jpeg_dest;

static void ic_dest_init(j_compress_ptr cinfo) {
    ic_jpeg_dest *dest = (ic_jpeg_dest *)cinfo->dest;
    if (!ic_reserve(dest->out, 65536)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    dest->pub.next_output_byte = dest->out->data;
    dest->pub.free_in_buffer = dest->out->capacity;
}

static boolean ic_dest_empty(j_compress_ptr cinfo) {
    ic_jpeg_dest *dest = (ic_jpeg_dest *)cinfo->dest;
    dest->out->size = dest->out->capacity;   // libjpeg filled the whole buffer
    if (!ic_reserve(dest->out, dest->out->capacity)) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    dest->pub.next_output_byte = dest->out->data + dest->out->size;
    dest->pub.free_in_buffer = dest->out->capacity - dest->out->size;
    return TRUE;
}

static void ic_dest_term(j_compress_ptr cinfo) {
    ic_jpeg_dest *dest = (ic_jpeg_dest *)cinfo->dest;
    dest->out->size = dest->out->capacity - dest->pub.free_in_buffer;
}

int ic_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, int quality,
                   ic_encoded *out) {
    memset(out, 0, sizeof(*out));
    if ((channels != 1 && channels != 3) || width == 0 || height == 0 || width > 65500 || height > 65500) {
        ic_set_message(out->message, "cannot encode a %u x %u image with %d channels as JPEG "
                       "(1 or 3 channels, at most 65500 pixels a side)", width, height, channels);
        return 1;
    }
    struct jpeg_compress_struct cinfo;
    ic_jpeg_dest dest;
    ic_jpeg_error err;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = ic_jpeg_error_exit;
    err.pub.output_message = ic_jpeg_silent;
    err.message = out->message;
    if (setjmp(err.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(out->data);
        out->data = NULL;
        out->size = out->capacity = 0;
        if (out->message[0] == 0) ic_set_message(out->message, "libjpeg failed without a message");
        return 1;
    }
    jpeg_create_compress(&cinfo);
    dest.pub.init_destination = ic_dest_init;
    dest.pub.empty_output_buffer = ic_dest_empty;
    dest.pub.term_destination = ic_dest_term;
    dest.out = out;
    cinfo.dest = &dest.pub;
    cinfo.image_width = width;
    cinfo.image_height = height;
    cinfo.input_components = channels;
    cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    size_t row_bytes = (size_t)width * channels;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * row_bytes);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return 0;
}

const char *ic_library_versions(void) {
    static char text[128];
    if (text[0] == 0) {
#ifdef LIBJPEG_TURBO_VERSION
#define IC_STR2(x) #x
#define IC_STR(x) IC_STR2(x)
        snprintf(text, sizeof text, "libpng %s, libjpeg-turbo %s (libjpeg API %d)", png_get_libpng_ver(NULL),
                 IC_STR(LIBJPEG_TURBO_VERSION), JPEG_LIB_VERSION);
#else
        snprintf(text, sizeof text, "libpng %s, libjpeg %d", png_get_libpng_ver(NULL), JPEG_LIB_VERSION);
#endif
    }
    return text;
}
