/* tune/cost_table.h: the cost table's contents, shared by the graph tuner that fills it, the
 * JSON reader and writer, and joint narrowing. A table is one graph's working set on one
 * device and packaging: its distinct designs (each with every setting searched and its
 * price at the graph's call points), its calls (the steps in order, each naming a design),
 * and the dispatch and barrier figures. */
#ifndef FE_TUNE_COST_TABLE_H
#define FE_TUNE_COST_TABLE_H

#include "tune/tune.h"

enum { FE_TABLE_NAME = 96, FE_TABLE_KEY_NAME = 48, FE_TABLE_MAX_WHEN = 16 };

/* One setting of a design, as fe_tune_op lists it. */
typedef struct fe_table_option {
    char setting[160];   /* "default", "WIDTH=1" */
    fe_tune_verdict verdict;
    char reason[256];
    char tunables[FE_MAX_TUNABLES][FE_TABLE_KEY_NAME]; /* the design tunables' names */
    int64_t values[FE_MAX_TUNABLES];
    int n_tunables;
    fe_cost_figure cost; /* priced at the call points (their mean); candidates only */
    double bytes;        /* the op's cost model at the same points (0: not known) */
    /* the layouts it reads its constant inputs from: format 0 where it reads operand i as
     * it is; layouts_known false for a candidate of a table written before they were kept
     * (such a design is searched again, not reused) */
    uint64_t layout_format[FE_MAX_OPERANDS];
    double layout_bytes[FE_MAX_OPERANDS];
    bool layouts_known;
} fe_table_option;

/* A profile key: "N" = 2048, "w.dtype" = "q8_0". */
typedef struct fe_table_when {
    char name[FE_TABLE_KEY_NAME];
    double value;
    char choice[16]; /* "" for a number */
} fe_table_when;

typedef struct fe_table_design {
    uint64_t key;        /* the default design, its operands' shapes, its values at every
                          * point and the input seed: equal keys price the same work */
    char op[32];
    char shape[512];     /* what was built, for a reader */
    fe_table_when when[FE_TABLE_MAX_WHEN];
    int n_when;
    fe_table_option *options; /* [0] is the default */
    int n_options;
    bool reused;         /* taken from an earlier table, or every figure from the cache */
} fe_table_design;

typedef struct fe_table_step {
    char label[64];
    int design;          /* index into designs */
    uint64_t weight[FE_MAX_OPERANDS]; /* which of the graph's weights operand i is (equal
                                       * ids: one weight); 0 where it is none */
} fe_table_step;

typedef struct fe_table_call {
    char name[64];
    int version;         /* the graph's version the call ran (set by fe_tune_graph; -1 when
                          * unknown, as in a table loaded from a file: not saved) */
    bool each_step;      /* one dispatch per step */
    fe_table_step *steps;
    int n_steps;
    bool has_measured;
    fe_cost_figure measured; /* the whole call as it ran, mean over the points */
} fe_table_call;

struct fe_cost_table {
    char name[FE_TABLE_NAME];
    char device[17];
    char packaging[16];  /* "fused" or "each_step" */
    /* the read level (GB/s) the options' figures are priced at: set by
     * fe_cost_table_at_level; 0 while each figure is at its own */
    double read_gbps;
    fe_cost_figure dispatch; /* an empty step on the pool at full width */
    fe_cost_figure barrier;  /* one more empty step in the same dispatch */
    fe_table_design *designs;
    int n_designs, cap_designs;
    fe_table_call *calls;
    int n_calls;
    /* fe_tune_graph's second pass in this run (not saved): the fastest settings measured
     * again, those of them in turn with the default, and the seconds it took */
    int again, again_in_turn;
    double again_s;
};

/* An empty table (FE_E_NOMEM in err otherwise). */
fe_status fe_cost_table_create(fe_cost_table **out, fe_error *err);
/* A new design at the end of t's list (zeroed), or NULL when out of memory. */
fe_table_design *fe_cost_table_add_design(fe_cost_table *t);

#endif
