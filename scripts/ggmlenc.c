// ggmlenc: ggml's half of scripts/bench-encoders.sh. It times ggml's own
// reference quantizers (ggml_quantize_chunk, as llama-quantize calls them;
// the types it does not route, Q8_1 and Q8_K, through their from_float_ref
// row functions) on one thread over the input scripts/benchencode wrote, and
// writes the encoded bytes beside ggufkit's for comparison.
//
// It is compiled by scripts/bench-encoders.sh against a llama.cpp build made
// outside this repository; nothing of ggml is part of it.
//
//	ggmlenc DIR CASE REPS   prints MB per CPU-second (or "-" when ggml has no
//	                        encoder for the type), writes DIR/ggml-CASE.bin
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ggml.h"

enum { COLS = 4096 };

// ggml's type table gives Q8_K no from_float_ref; libggml-base exports its
// reference encoder (declared in ggml/src/ggml-quants.h, not a public header).
void quantize_row_q8_K_ref(const float *x, void *y, int64_t k);

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// read_file returns the contents of path and their size, or NULL.
static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    void *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                *size = (size_t)n;
            }
        }
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ggmlenc DIR CASE REPS\n");
        return 2;
    }
    const char *dir = argv[1], *name = argv[2];
    int reps = atoi(argv[3]);
    if (reps < 1) {
        reps = 1;
    }
    char type_name[64];
    snprintf(type_name, sizeof type_name, "%s", name);
    char *plus = strchr(type_name, '+');
    int with_imatrix = plus != NULL && strcmp(plus, "+imatrix") == 0;
    if (plus) {
        *plus = 0;
    }
    int type = -1;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char *n = ggml_type_name((enum ggml_type)t);
        if (n && strcasecmp(n, type_name) == 0) {
            type = t;
            break;
        }
    }
    if (type < 0) {
        printf("-\n");
        return 0;
    }
    const struct ggml_type_traits *traits = ggml_get_type_traits((enum ggml_type)type);
    ggml_from_float_t from_float = type == GGML_TYPE_Q8_K ? quantize_row_q8_K_ref : traits->from_float_ref;
    int by_row = type == GGML_TYPE_Q8_1 || type == GGML_TYPE_Q8_K;
    int chunk = type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 ||
                (traits->is_quantized && !by_row);
    if ((by_row && from_float == NULL) || (!by_row && !chunk) || (by_row && with_imatrix)) {
        printf("-\n");
        return 0;
    }

    char path[4096];
    size_t nbytes = 0, imbytes = 0;
    snprintf(path, sizeof path, "%s/input.f32", dir);
    float *src = read_file(path, &nbytes);
    if (!src || nbytes % (4 * COLS) != 0) {
        fprintf(stderr, "ggmlenc: %s: cannot read rows of %d float32 values\n", path, COLS);
        return 1;
    }
    float *imatrix = NULL;
    if (with_imatrix) {
        snprintf(path, sizeof path, "%s/imatrix.f32", dir);
        imatrix = read_file(path, &imbytes);
        if (!imatrix || imbytes != 4 * COLS) {
            fprintf(stderr, "ggmlenc: %s: want %d float32 values\n", path, COLS);
            return 1;
        }
    }
    const int64_t nrows = (int64_t)(nbytes / (4 * COLS));
    const size_t row_size = ggml_row_size((enum ggml_type)type, COLS);
    char *dst = malloc(row_size * (size_t)nrows);
    if (!dst) {
        fprintf(stderr, "ggmlenc: out of memory\n");
        return 1;
    }
    memset(dst, 0, row_size * (size_t)nrows); // fault the pages in before timing
    ggml_quantize_init((enum ggml_type)type);

    // A timed repetition encodes the matrix until it has taken a tenth of a
    // CPU-second, as benchencode does; the fastest repetition counts.
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double c0 = cpu_seconds(), dt = 0;
        int n = 0;
        do {
            if (by_row) {
                for (int64_t i = 0; i < nrows; i++) {
                    from_float(src + i * COLS, dst + i * row_size, COLS);
                }
            } else {
                ggml_quantize_chunk((enum ggml_type)type, src, dst, 0, nrows, COLS, imatrix);
            }
            n++;
            dt = cpu_seconds() - c0;
        } while (dt < 0.1);
        double rate = (double)n * (double)nbytes / 1e6 / dt;
        if (rate > best) {
            best = rate;
        }
    }
    printf("%.1f\n", best);

    snprintf(path, sizeof path, "%s/ggml-%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(dst, 1, row_size * (size_t)nrows, f) != row_size * (size_t)nrows || fclose(f) != 0) {
        fprintf(stderr, "ggmlenc: cannot write %s\n", path);
        return 1;
    }
    return 0;
}
