/* SPDX-License-Identifier: MIT */
/*
 * render_tree: the documents of /api/v1/jobs/{job}/tree: JSON with the nodes nested, CSV and
 * records with one row per node (its parent's id and its depth). No MHD here.
 */
#include "summary.h"

#include <inttypes.h>
#include <string.h>

const char *const web__tree_kind_names[WEB_TREE_KIND_COUNT] = {"operator", "module"};

int web__tree_kind_parse(const char *s, enum web_tree_kind *ret)
{
    for (int k = 0; k < WEB_TREE_KIND_COUNT; k++)
        if (strcmp(s, web__tree_kind_names[k]) == 0) {
            *ret = (enum web_tree_kind)k;
            return 0;
        }
    return -1;
}

static const char tree_csv_figures[] =
    "calls,total_us,self_us,avg_us,max_us,min_us,percent,device_us,self_device_us,device_avg_us,"
    "device_max_us,device_min_us,device_percent\n";

/* ns / calls in µs, three decimals. */
static void avg_us(struct sbuf *b, int64_t ns, int64_t calls)
{
    sbuf_printf(b, "%.3f", calls > 0 ? (double)ns / (double)calls / 1000 : 0.0);
}

/* The figures of node x after its name, as JSON members (",\"calls\":...") or CSV cells
 * (",calls,..."); host figures null / empty on a device node; a module's operators last. */
static void figures(struct sbuf *b, const struct analyse_tree_node *x, bool csv)
{
    if (x->kind == ANALYSE_TREE_MODULE)
        sbuf_printf(b, csv ? ",%" PRId64 : ",\"operators\":%" PRId64, x->operators);
    static const char *const json_keys[] = {
        ",\"calls\":", ",\"total_us\":", ",\"self_us\":", ",\"avg_us\":", ",\"max_us\":",
        ",\"min_us\":", ",\"percent\":", ",\"device_us\":", ",\"self_device_us\":",
        ",\"device_avg_us\":", ",\"device_max_us\":", ",\"device_min_us\":",
        ",\"device_percent\":"};
    bool host = x->kind != ANALYSE_TREE_DEVICE;
    for (int i = 0; i < 13; i++) {
        sbuf_adds(b, csv ? "," : json_keys[i]);
        if (i >= 1 && i <= 6 && !host) {
            if (!csv)
                sbuf_adds(b, "null");
            continue;
        }
        switch (i) {
        case 0: sbuf_printf(b, "%" PRId64, x->calls); break;
        case 1: sbuf_json_us(b, x->total_ns); break;
        case 2: sbuf_json_us(b, x->self_ns); break;
        case 3: avg_us(b, x->total_ns, x->calls); break;
        case 4: sbuf_json_us(b, x->max_ns); break;
        case 5: sbuf_json_us(b, x->min_ns); break;
        case 6: sbuf_printf(b, "%.4f", x->ratio * 100); break;
        case 7: sbuf_json_us(b, x->device_ns); break;
        case 8: sbuf_json_us(b, x->self_device_ns); break;
        case 9: avg_us(b, x->device_ns, x->calls); break;
        case 10: sbuf_json_us(b, x->device_max_ns); break;
        case 11: sbuf_json_us(b, x->device_min_ns); break;
        default: sbuf_printf(b, "%.4f", x->device_ratio * 100); break;
        }
    }
}

static void flat(struct sbuf *b, const struct analyse_tree *t, bool csv, bool modules)
{
    if (csv) {
        sbuf_adds(b, "id,parent,depth,kind,name,");
        if (modules)
            sbuf_adds(b, "operators,");
        sbuf_adds(b, tree_csv_figures);
    }
    else
        sbuf_addc(b, '[');
    for (size_t i = 0; i < t->n; i++) {
        const struct analyse_tree_node *x = &t->nodes[i];
        const char *kind = analyse_tree_kind_names[x->kind];
        if (csv) {
            sbuf_printf(b, "%016" PRIx64 ",", x->id);
            if (x->parent != ANALYSE_TREE_ROOT)
                sbuf_printf(b, "%016" PRIx64, t->nodes[x->parent].id);
            sbuf_printf(b, ",%u,%s,", x->depth, kind);
            web__csv_name(b, x->name, x->name_len);
            figures(b, x, true);
            sbuf_addc(b, '\n');
            continue;
        }
        sbuf_printf(b, "%s{\"id\":\"%016" PRIx64 "\",\"parent\":", i ? "," : "", x->id);
        if (x->parent != ANALYSE_TREE_ROOT)
            sbuf_printf(b, "\"%016" PRIx64 "\"", t->nodes[x->parent].id);
        else
            sbuf_adds(b, "null");
        sbuf_printf(b, ",\"depth\":%u,\"kind\":\"%s\",\"name\":", x->depth, kind);
        sbuf_json_str(b, x->name, x->name_len);
        figures(b, x, false);
        sbuf_addc(b, '}');
    }
    if (!csv)
        sbuf_addc(b, ']');
}

static void nested(struct sbuf *b, const struct web_tree_doc *d)
{
    const struct analyse_tree *t = d->tree;
    sbuf_printf(b, "{\"kind\":\"%s\",\"rank\":%" PRId64 ",\"n_steps\":%zu,\"first_step\":",
                web__tree_kind_names[d->kind], d->rank, t->n_steps);
    if (t->window.first_step >= 0)
        sbuf_printf(b, "%" PRId64 ",\"last_step\":%" PRId64, t->window.first_step,
                    t->window.last_step);
    else
        sbuf_adds(b, "null,\"last_step\":null");
    sbuf_printf(b, ",\"spans\":%zu,\"spans_read\":%zu,\"spans_cut\":%" PRId64
                   ",\"lines_bad\":%" PRId64 ",\"max_spans\":%zu,\"device_events\":%zu,"
                   "\"device_events_linked\":%zu,\"n_nodes\":%zu,",
                t->n_spans, d->n_read, d->spans_cut, d->lines_bad, d->max_spans, t->n_device,
                t->n_linked, t->n);
    if (d->kind == WEB_TREE_MODULE)
        sbuf_printf(b, "\"module_spans\":%zu,", t->n_module_spans);
    sbuf_adds(b, "\"nodes\":[");
    unsigned open = 0; /* nodes whose "children" array is open */
    bool first = true;
    for (size_t i = 0; i < t->n; i++) {
        const struct analyse_tree_node *x = &t->nodes[i];
        for (; open > x->depth; open--) {
            sbuf_adds(b, "]}");
            first = false;
        }
        sbuf_printf(b, "%s{\"id\":\"%016" PRIx64 "\",\"kind\":\"%s\",\"name\":", first ? "" : ",",
                    x->id, analyse_tree_kind_names[x->kind]);
        sbuf_json_str(b, x->name, x->name_len);
        figures(b, x, false);
        sbuf_adds(b, ",\"children\":[");
        open++;
        first = true;
    }
    for (; open > 0; open--)
        sbuf_adds(b, "]}");
    sbuf_adds(b, "]}");
}

void web__render_tree(struct sbuf *b, const struct web_tree_doc *d, enum web_format fmt)
{
    if (fmt == WEB_FORMAT_CSV || fmt == WEB_FORMAT_RECORDS)
        flat(b, d->tree, fmt == WEB_FORMAT_CSV, d->kind == WEB_TREE_MODULE);
    else
        nested(b, d);
}
