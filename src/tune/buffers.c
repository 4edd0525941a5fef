/* tune/buffers.c: real inputs for the gate and the probes: operand buffers for a kernel's
 * shapes, inputs drawn from a seeded source (the same seed gives the same bytes, so the input
 * hash keys the cost cache), outputs zeroed. */
#include <string.h>

#include "core/alloc.h"
#include "core/hash.h"
#include "core/quant.h"
#include "tune/tune.h"

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * ((double)(next(s) >> 11) / 9007199254740992.0);
}

static int64_t span(const fe_tensor *t) {
    int64_t s = 1;
    for (int i = 0; i < t->rank; i++) s += (t->shape[i] - 1) * t->stride[i];
    return s;
}

static bool draw_floats(void *mem, fe_dtype dt, int64_t n, double lo, double hi, uint64_t *s) {
    const fe_dtype_traits *tr = fe_dtype_info(dt);
    float *f = dt == FE_DTYPE_F32 ? mem : fe_malloc((size_t)n * sizeof *f);
    if (!f) return false;
    for (int64_t i = 0; i < n; i++) f[i] = (float)uniform(s, lo, hi);
    if (tr->block > 1) {
        fe_quant_row(dt, f, mem, n);
    } else if (dt != FE_DTYPE_F32) {
        uint16_t *h = mem;
        for (int64_t i = 0; i < n; i++)
            h[i] = dt == FE_DTYPE_BF16 ? fe_f32_to_bf16(f[i]) : fe_f32_to_f16(f[i]);
    }
    if (f != mem) fe_free(f);
    return true;
}

static void draw_ints(unsigned char *mem, fe_dtype dt, int64_t n, int64_t lo, int64_t hi,
                      uint64_t *s) {
    size_t size = fe_dtype_info(dt)->size;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = lo + (int64_t)(next(s) % (uint64_t)(hi - lo + 1));
        if (size == 4) {
            int32_t x = (int32_t)v;
            memcpy(mem + 4 * i, &x, 4);
        } else {
            mem[i] = (unsigned char)v;
        }
    }
}

fe_status fe_tune_buffers_init(fe_tune_buffers *b, const fe_op *op, const fe_tensor *desc,
                               const int64_t *ext, double lo, double hi, uint64_t seed,
                               fe_error *err) {
    memset(b, 0, sizeof *b);
    b->n = op->n_operands;
    uint64_t s = seed;
    fe_hasher h;
    if (fe_hasher_init(&h) != 0) return fe_error_set(err, FE_E_NOMEM, "tune: out of memory");
    for (int i = 0; i < op->n_operands; i++) {
        b->t[i] = desc[i];
        if (desc[i].rank == 0) continue;
        const fe_operand_decl *od = &op->operands[i];
        fe_dtype dt = desc[i].dtype;
        int64_t n = span(&desc[i]);
        int block = fe_dtype_info(dt)->block;
        n = (n + block - 1) / block * block;
        b->bytes[i] = fe_dtype_bytes(dt, n);
        b->mem[i] = fe_aligned_alloc(64, b->bytes[i] + 64);
        if (!b->mem[i]) {
            fe_hasher_done(&h);
            fe_tune_buffers_deinit(b);
            return fe_error_set(err, FE_E_NOMEM, "tune: out of memory for %s's %zu bytes",
                                od->name, b->bytes[i]);
        }
        memset(b->mem[i], 0, b->bytes[i]);
        b->t[i].data = b->mem[i];
        if (od->role != FE_IN) continue;
        bool ranged = od->draw_lo < od->draw_hi;
        if (!fe_dtype_info(dt)->is_float && ranged) {
            int64_t top = (int64_t)od->draw_hi;
            int e = od->draw_below ? fe_op_extent_index(op, od->draw_below) : -1;
            if (e >= 0 && ext && ext[e] - 1 < top) top = ext[e] - 1;
            if (top < (int64_t)od->draw_lo) top = (int64_t)od->draw_lo;
            draw_ints(b->mem[i], dt, n, (int64_t)od->draw_lo, top, &s);
        } else if (fe_dtype_info(dt)->is_float || block > 1) {
            if (!draw_floats(b->mem[i], dt, n, ranged ? od->draw_lo : lo,
                             ranged ? od->draw_hi : hi, &s)) {
                fe_hasher_done(&h);
                fe_tune_buffers_deinit(b);
                return fe_error_set(err, FE_E_NOMEM, "tune: out of memory drawing %s", od->name);
            }
        } else {
            for (size_t k = 0; k < b->bytes[i]; k++) ((unsigned char *)b->mem[i])[k] = (unsigned char)next(&s);
        }
        fe_hasher_bytes(&h, b->mem[i], b->bytes[i]);
    }
    b->input_hash = fe_hasher_done(&h);
    return FE_OK;
}

void fe_tune_buffers_deinit(fe_tune_buffers *b) {
    for (int i = 0; i < FE_MAX_OPERANDS; i++) {
        fe_free(b->mem[i]);
        b->mem[i] = NULL;
    }
    fe_free(b->sets);
    fe_free(b->copies);
    b->sets = NULL, b->copies = NULL;
    b->n_sets = 0;
}

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b, b = t;
    }
    return a;
}

fe_status fe_tune_buffers_spread(fe_tune_buffers *b, const fe_op *op, size_t bytes,
                                 fe_error *err) {
    size_t in = 0;
    for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i].role == FE_IN && b->mem[i]) in += (b->bytes[i] + 63) & ~(size_t)63;
    size_t want = in ? (bytes + in - 1) / in : 1;
    /* inputs past `bytes` alone but under twice it (a decode's 8192 x 2048 bf16 gate and up,
     * 67 MB against a 32 MiB L3's 64 MiB) get a second copy: one copy read run after run kept
     * part of itself in the L3 (such a GEMV priced at 45 GB/s where the read roof is 35) */
    if (want < 2 && in && in < 2 * bytes) want = 2;
    const int n = want > FE_TUNE_MAX_COPIES ? FE_TUNE_MAX_COPIES : (int)want;
    fe_tensor(*sets)[FE_MAX_OPERANDS] = fe_calloc((size_t)n, sizeof *sets);
    char *copies = n > 1 ? fe_aligned_alloc(64, (size_t)(n - 1) * in) : NULL;
    if (!sets || (n > 1 && !copies)) {
        fe_free(sets);
        fe_free(copies);
        return fe_error_set(err, FE_E_NOMEM, "tune: out of memory for %d copies of the "
                            "inputs (%zu bytes each)", n, in);
    }
    memcpy(sets[0], b->t, sizeof b->t);
    for (int c = 1; c < n; c++) {
        char *mem = copies + (size_t)(c - 1) * in;
        memcpy(sets[c], b->t, sizeof b->t);
        for (int i = 0; i < op->n_operands; i++) {
            if (op->operands[i].role != FE_IN || !b->mem[i]) continue;
            memcpy(mem, b->mem[i], b->bytes[i]);
            sets[c][i].data = mem;
            mem += (b->bytes[i] + 63) & ~(size_t)63;
        }
    }
    fe_free(b->sets);
    fe_free(b->copies);
    b->sets = sets, b->copies = copies;
    b->n_sets = n;
    b->next_set = 0;
    /* Runs take the sets far apart. In address order, a run's inputs began where the last
     * run's ended, a stream the prefetchers had already run into: a SmolLM2 down projection
     * (0.55 MB of q4_1) was priced at 16.5-23.0 us (median 18.7) so, 18.6-26.9 (22.5) far
     * apart, alternated eight times; in a decode call (--profile) it takes 25.6. The stride
     * is the one nearest n / 2 + 1 from below that is prime to n, so every set is visited. */
    b->stride = 1;
    if (n > 4)
        for (int st = n / 2 + 1; st > 1; st--)
            if (gcd(st, n) == 1) {
                b->stride = st;
                break;
            }
    /* inputs from memory (past the last-level cache for small inputs too: up to 4096 copies;
     * 64 had left a decode step's small weights in a 32 MiB L3, 19 % under the call; and two
     * at least up to twice `bytes`) */
    b->input_hash ^= 0x5eedf00dc01d0005ull; /* 5: the sets visited far apart */
    return FE_OK;
}

const fe_tensor *fe_tune_buffers_next(fe_tune_buffers *b) {
    if (b->n_sets <= 1) return b->t;
    const fe_tensor *t = b->sets[b->next_set];
    b->next_set = (b->next_set + b->stride) % b->n_sets;
    return t;
}

void fe_tune_buffers_clear_outputs(const fe_op *op, fe_tune_buffers *b) {
    for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i].role == FE_OUT && b->mem[i]) memset(b->mem[i], 0, b->bytes[i]);
}

fe_status fe_tune_buffers_save_outputs(const fe_op *op, const fe_tune_buffers *b,
                                       void *out[FE_MAX_OPERANDS]) {
    for (int i = 0; i < FE_MAX_OPERANDS; i++) out[i] = NULL;
    for (int i = 0; i < op->n_operands; i++) {
        if (op->operands[i].role != FE_OUT || !b->mem[i]) continue;
        out[i] = fe_malloc(b->bytes[i]);
        if (!out[i]) {
            for (int j = 0; j < i; j++) fe_free(out[j]);
            return FE_E_NOMEM;
        }
        memcpy(out[i], b->mem[i], b->bytes[i]);
    }
    return FE_OK;
}
