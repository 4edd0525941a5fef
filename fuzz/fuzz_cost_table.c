/* fuzz/fuzz_cost_table.c: libFuzzer target for cost tables (the JSON `ferrum tune MODEL`
 * writes and reads back). A table that parses must narrow without fault, with copies of
 * weights allowed or not (every step names a design, every figure is ordered, every layout
 * and weight names an operand of its op), survive fe_cost_table_save and fe_cost_table_load with its
 * designs and calls, and narrow to the same modelled times after; its choice must become
 * profile entries or be refused as invalid (a shape key the op does not have), never crash. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "ferrum/tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fe_cost_table *t = NULL, *back = NULL;
    fe_narrowing *n = NULL, *m = NULL;
    fe_profile *p = NULL;
    fe_error err;
    if (fe_cost_table_parse((const char *)data, size, "fuzz", &t, &err) != FE_OK) return 0;
    fe_narrow_kinds copies = fe_narrow_kinds_all();
    copies.copies = true; /* settings that hold a second copy of a weight allowed */
    if (fe_narrow(t, copies, &n, &err) != FE_OK) __builtin_trap();
    fe_narrowing_destroy(n);
    if (fe_narrow(t, fe_narrow_kinds_all(), &n, &err) != FE_OK) __builtin_trap();
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-cost-table-%ld.json", (long)getpid());
    if (fe_cost_table_save(t, path, &err) == FE_OK) {
        if (fe_cost_table_load(path, &back, &err) != FE_OK ||
            fe_cost_table_designs(back) != fe_cost_table_designs(t) ||
            fe_cost_table_calls(back) != fe_cost_table_calls(t) ||
            fe_narrow(back, fe_narrow_kinds_all(), &m, &err) != FE_OK)
            __builtin_trap();
        for (int c = 0; c < fe_cost_table_calls(t); c++) {
            double a = fe_narrowing_predicted_ns(n, c), b = fe_narrowing_predicted_ns(m, c);
            if (a - b > 1e-6 * (a > 0 ? a : 1) || b - a > 1e-6 * (a > 0 ? a : 1)) __builtin_trap();
        }
        unlink(path);
    }
    if (fe_profile_parse("{\"entries\": []}", 15, &p, &err) == FE_OK) {
        fe_status st = fe_narrowing_to_profile(n, p, &err);
        if (st != FE_OK && st != FE_E_INVALID) __builtin_trap();
    }
    fe_profile_destroy(p);
    fe_narrowing_destroy(m);
    fe_narrowing_destroy(n);
    fe_cost_table_destroy(back);
    fe_cost_table_destroy(t);
    return 0;
}
