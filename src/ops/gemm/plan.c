/* ops/gemm/plan.c: the GEMM plan every ISA's kernel and the declaration share: micro-tiles
 * per ISA, block sizes clipped to the extents, the per-worker workspace layout, and how
 * workers split the work (see gemm.h). Compiled once, for baseline x86-64. */
#include "ops/gemm/gemm.h"
#include "ops/gemv/gemv.h"

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void gm_tile(fe_isa isa, int *mr, int *nr) {
    switch (isa) {
    case FE_ISA_AVX512: *mr = GM_MR_AVX512, *nr = GM_NR_AVX512; break;
    case FE_ISA_AVX2: *mr = GM_MR_AVX2, *nr = GM_NR_AVX2; break;
    default: *mr = GM_MR_SCALAR, *nr = GM_NR_SCALAR; break;
    }
}

/* Cost of one worker's share on a wm x wn grid, in 1/nr of a micro-tile: its tiles, plus
 * packing its B panels (about one tile's time per panel when widening, more when
 * dequantising) and its A panels (an A panel holds mr rows where a B panel holds nr: mr/nr
 * of a widened B panel). A worker packs every A panel of its rows whatever its columns, so
 * where rows far outnumber columns (an encoder's batch of sentences against N = 384) the
 * rows are split too, and each worker reads only its part of A. */
static int64_t grid_cost(int64_t mt, int64_t np, int64_t wm, int64_t wn, int64_t pack, int mr,
                         int nr) {
    return ceil_div(np, wn) * (ceil_div(mt, wm) + pack) * nr + ceil_div(mt, wm) * mr;
}

/* The worker grid (wm row groups x wn column groups) gm_split gives mt row tiles and np
 * column panels on nth workers: the cheapest by grid_cost, the one splitting N more among
 * equals (each worker packs only its own B panels, B is read once in all). */
static void grid_of(int64_t mt, int64_t np, int nth, int64_t pack, int mr, int nr, int64_t *wm,
                    int64_t *wn) {
    int64_t best_m = 1, best_n = 1, best = grid_cost(mt, np, 1, 1, pack, mr, nr);
    for (int64_t n = 1; n <= nth; n++)
        for (int64_t m = 1; m * n <= nth; m++) {
            int64_t c = grid_cost(mt, np, m, n, pack, mr, nr);
            if (c < best || (c == best && n > best_n)) best = c, best_m = m, best_n = n;
        }
    *wm = best_m, *wn = best_n;
}

static int64_t pack_cost(const fe_design *d) {
    return fe_dtype_info(d->dtypes[GM_B])->block > 1 ? 4 : 1;
}

void gm_plan_make(const fe_args *a, const fe_design *d, int nth, gm_plan *p) {
    const bool avx512_dot = d->isa == FE_ISA_AVX512 && d->params[GM_P_BF16] != 0;
    p->dot = avx512_dot && d->tunables[GM_DOT] == GM_DOT_PACKED;
    p->rows = avx512_dot && d->tunables[GM_DOT] == GM_DOT_ROWS;
    p->amx = avx512_dot && d->tunables[GM_DOT] == GM_DOT_AMX;
    p->i8 = d->params[GM_P_INT8] != 0;
    p->vnni = p->i8 && (d->isa == FE_ISA_AVX512 || d->isa == FE_ISA_AVX2) &&
              d->tunables[GM_DOT8] == GM_DOT8_VNNI;
    p->amx8 = p->i8 && d->isa == FE_ISA_AVX512 && d->tunables[GM_DOT8] == GM_DOT8_AMX &&
              gm_amx8_serves(d->dtypes[GM_B]);
    const fe_dtype bdt = d->dtypes[GM_B];
    const bool kq = p->i8 && gm_kq_nsub(bdt) > 0; /* kquant.inc (q5_0 is int8.inc's) */
    p->w16 = p->i8 && d->isa == FE_ISA_AVX2 && bdt == FE_DTYPE_Q8_0 &&
             d->tunables[GM_DOT8] == GM_DOT8_PAIRS16;
    if (p->rows) p->mr = GM_MR_ROWS, p->nr = GM_NR_ROWS;
    else if (p->amx) p->mr = GM_MR_AMX, p->nr = GM_NR_AMX;
    else if (kq && d->isa == FE_ISA_AVX512) p->mr = GM_MR_KQ_AVX512, p->nr = GM_NR_KQ_AVX512;
    else if (kq && d->isa == FE_ISA_AVX2) p->mr = GM_MR_KQ_AVX2, p->nr = GM_NR_KQ_AVX2;
    else if (p->amx8) p->mr = GM_MR_AMX, p->nr = GM_NR_AMX;
    else if (p->i8 && d->isa == FE_ISA_AVX512) p->mr = GM_MR_I8_AVX512, p->nr = GM_NR_I8_AVX512;
    else if (p->w16) p->mr = GM_MR_W16_AVX2, p->nr = GM_NR_W16_AVX2;
    else if (p->i8 && d->isa == FE_ISA_AVX2)
        p->mr = p->vnni ? GM_MR_I8_AVX2_VNNI : GM_MR_I8_AVX2, p->nr = GM_NR_I8_AVX2;
    else gm_tile(d->isa, &p->mr, &p->nr);
    int64_t M = a->ext[GM_M], N = a->ext[GM_N], K = a->ext[GM_K];
    /* blocks never larger than the (rounded-up) extents: a small GEMM takes a small
     * workspace; the kernel computes the same numbers, so the layout agrees */
    p->mc = min64(round_up(d->tunables[GM_MC], p->mr), round_up(M, p->mr));
    p->nc = min64(round_up(d->tunables[GM_NC], p->nr), round_up(N, p->nr));
    /* and never wider than the most columns gm_split hands one worker at any row bound: with
     * N split over the workers, each packs only its share (half the workspace on 2) */
    int64_t np = ceil_div(N, p->nr), widest = 1, wm, wn;
    for (int64_t mt = 1; mt <= ceil_div(M, p->mr); mt++) {
        grid_of(mt, np, nth < 1 ? 1 : nth, pack_cost(d), p->mr, p->nr, &wm, &wn);
        if (ceil_div(np, wn) > widest) widest = ceil_div(np, wn);
    }
    p->nc = min64(p->nc, widest * p->nr);
    const int64_t ks = gm_kstep(d->dtypes[GM_B]);
    p->kb = round_up(d->tunables[GM_KC], ks);
    p->kc = min64(round_up(p->kb + p->kb / 4, ks), round_up(K, ks));
    bool blocks = fe_dtype_info(d->dtypes[GM_B])->block > 1;
    if (p->w16) { /* every row of A as int16 pairs, a tile's int8 rows on the way; pair panels */
        const int64_t kr = round_up(K, GM_KSTEP);
        p->ap = round_up(M, p->mr) * gm_w16_row_words(kr);
        p->bp = p->nr * (p->kc / GM_KSTEP) * GM_W16_BLOCK_WORDS; /* one panel at a time */
        p->tmp = p->mr * gm_i8_row_words(kr); /* a tile's rows quantised on the way */
    } else if (p->i8) { /* every row of A quantised (a worker may have them all); int8 B panels */
        p->ap = round_up(M, p->mr) * gm_i8_row_words(round_up(K, GM_KSTEP));
        p->bp = d->isa == FE_ISA_SCALAR ? 0
                : kq ? p->nc * (p->kc / gm_kq_sb(bdt)) * gm_kq_block_words(bdt)
                     : p->nc * (p->kc / GM_KSTEP) * GM_I8_BLOCK_WORDS;
        p->tmp = 0;
    } else if (p->amx) { /* A's rows as bf16; one B panel of a K block, packed per run where
                          * B has no layout */
        p->ap = round_up(p->mc * gm_rows_ldw(p->kc), 16);
        p->bp = round_up(p->nr * ((p->kc + 1) / 2), 16);
        p->tmp = 0;
    } else if (p->rows) { /* A's rows as bf16, nothing of B */
        p->ap = round_up(p->mc * gm_rows_ldw(p->kc), 16);
        p->bp = p->tmp = 0;
    } else if (p->dot) { /* A's block as k-pairs; one B panel of a K block, packed per run
                          * where B has no layout */
        p->ap = round_up(p->mc * ((p->kc + 1) / 2), 16);
        p->bp = round_up(p->nr * ((p->kc + 1) / 2), 16);
        p->tmp = 0;
    } else {
        p->ap = round_up(p->mc * p->kc, 16);
        p->bp = round_up(p->nc * p->kc, 16);
        p->tmp = blocks ? round_up((int64_t)p->nr * p->kc, 16) : 0;
    }
    p->stride = p->ap + p->bp + p->tmp;
}

void gm_split(const gm_plan *p, const fe_design *d, int64_t rows, int64_t n, int ith, int nth,
              int64_t *m0, int64_t *m1, int64_t *n0, int64_t *n1, int64_t *wm, int64_t *wn) {
    *m0 = *m1 = *n0 = *n1 = *wm = *wn = 0;
    int64_t mt = ceil_div(rows, p->mr), np = ceil_div(n, p->nr);
    if (mt == 0 || np == 0 || nth < 1) return;
    int64_t best_m, best_n;
    grid_of(mt, np, nth, pack_cost(d), p->mr, p->nr, &best_m, &best_n);
    *wm = best_m, *wn = best_n;
    if (ith >= best_m * best_n) return;
    int64_t t0, t1, q0, q1;
    fe_split(mt, (int)(ith / best_n), (int)best_m, 1, &t0, &t1);
    fe_split(np, (int)(ith % best_n), (int)best_n, 1, &q0, &q1);
    *m0 = t0 * p->mr;
    *m1 = min64(t1 * p->mr, rows);
    *n0 = q0 * p->nr;
    *n1 = min64(q1 * p->nr, n);
}

/* The sum of a 32-block of int8, eight bytes a word: each byte + 128 (as u8), pairs summed
 * into 16-bit lanes, the four words' lanes added (at most 4 x 510), then the four lanes (this
 * file is built for baseline x86-64: a byte loop here cost 2 % of a SmolLM2 prefill). */
static int32_t block_sum(const int8_t *q) {
    const uint64_t lo = 0x00ff00ff00ff00ffull;
    uint64_t acc = 0;
    for (int w = 0; w < GM_KSTEP / 8; w++) {
        uint64_t u;
        memcpy(&u, q + 8 * w, 8);
        u ^= 0x8080808080808080ull;
        acc += (u & lo) + ((u >> 8) & lo);
    }
    return (int32_t)((acc * 0x0001000100010001ull) >> 48) - 128 * GM_KSTEP;
}

void gm_i8_quant_row(const float *x, int64_t K, int64_t k, gm_i8_quant_fn quant, int8_t *q,
                     float *dx) {
    const int64_t full = k / GM_KSTEP * GM_KSTEP, kq = (k + GM_KSTEP - 1) / GM_KSTEP * GM_KSTEP;
    quant(x, full, q, dx);
    if (full < k) { /* the block that straddles k, zero past it */
        float t[GM_KSTEP] = {0};
        memcpy(t, x + full, (size_t)(k - full) * sizeof *t);
        quant(t, GM_KSTEP, q + full, dx + full / GM_KSTEP);
    }
    memset(q + kq, 0, (size_t)(K - kq));
    for (int64_t b = kq / GM_KSTEP; b < K / GM_KSTEP; b++) dx[b] = 0.0f;
}

void gm_i8_quant_rows(const float *A, int64_t K, int64_t r0, int64_t r1, int64_t k, int off,
                      gm_i8_quant_fn quant, uint32_t *dst) {
    const int64_t nb = K / GM_KSTEP, kq = (k + GM_KSTEP - 1) / GM_KSTEP * GM_KSTEP;
    for (int64_t r = r0; r < r1; r++) {
        uint32_t *w = dst + (r - r0) * gm_i8_row_words(K);
        int8_t *q = (int8_t *)w;
        float *dx = (float *)w + K / 4, *dxc = dx + nb, *dxt = dx + 2 * nb;
        gm_i8_quant_row(A + r * K, K, k, quant, q, dx);
        for (int64_t b = 0; b < nb; b++) {
            const int32_t t = b * GM_KSTEP < kq ? block_sum(q + b * GM_KSTEP) : 0;
            dxc[b] = dx[b] * (float)(-off * t);
            dxt[b] = dx[b] * (float)t;
        }
    }
}
