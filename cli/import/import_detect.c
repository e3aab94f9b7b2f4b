/* SPDX-License-Identifier: MIT */
/*
 * import: which framework wrote a Chrome-trace file (import_int.h): the categories and names of
 * its first IMPORT_DETECT_EVENTS events and its top-level members. It only labels the rank.
 */
#include "import_int.h"

#include <string.h>

const char *const import_fw_names[] = {"unknown", "torch", "paddle", "mindspore"};

/* True when the raw JSON string text q (quotes included) starts with the characters of lit. */
static bool str_starts(const char *q, const char *lit)
{
    return q[0] == '"' && strncmp(q + 1, lit, strlen(lit)) == 0;
}

static bool str_is(const char *q, const char *lit)
{
    size_t n = strlen(lit);
    return q[0] == '"' && strncmp(q + 1, lit, n) == 0 && q[n + 1] == '"' && q[n + 2] == '\0';
}

/* MindSpore operator names end in "-op<digits>" ("AssignAdd-op142", "Default/.../Conv2D-op1"). */
static bool has_ms_op_suffix(const char *q)
{
    const char *p = strstr(q, "-op");
    while (p) {
        const char *d = p + 3;
        if (*d >= '0' && *d <= '9') {
            while (*d >= '0' && *d <= '9')
                d++;
            if (*d == '"' || *d == '\0')
                return true;
        }
        p = strstr(p + 1, "-op");
    }
    return false;
}

enum kind detect_event_kind(const struct tscan_event *ev)
{
    static const char *const torch_cats[] = {"cpu_op", "python_function", "user_annotation",
                                              "gpu_user_annotation", "cuda_runtime", "cuda_driver",
                                              "kernel", "gpu_memcpy", "gpu_memset", "ac2g",
                                              "fwdbwd", "Runtime", "Trace", "cpu_instant_event"};
    static const char *const paddle_cats[] = {"OperatorInner", "PythonOp", "PythonUserDefined",
                                               "Dataloader", "ProfileStep", "CudaRuntime",
                                               "UserDefined", "Forward", "Backward", "Optimization",
                                               "Communication", "MluRuntime"};
    for (size_t i = 0; i < sizeof torch_cats / sizeof torch_cats[0]; i++)
        if (str_is(ev->cat, torch_cats[i]))
            return KIND_TORCH;
    for (size_t i = 0; i < sizeof paddle_cats / sizeof paddle_cats[0]; i++)
        if (str_is(ev->cat, paddle_cats[i]))
            return KIND_PADDLE;
    if (str_starts(ev->name, "aten::") || str_starts(ev->name, "ProfilerStep#") ||
        str_is(ev->pid, "CPU functions"))
        return KIND_TORCH;
    if (str_starts(ev->name, "ProfileStep#"))
        return KIND_PADDLE;
    if (str_starts(ev->name, "Default/") || str_starts(ev->name, "Gradients/") ||
        has_ms_op_suffix(ev->name))
        return KIND_MINDSPORE;
    return KIND_NONE;
}

void detect_add(struct detect *d, enum kind k)
{
    if (k == KIND_TORCH)
        d->torch++;
    else if (k == KIND_PADDLE)
        d->paddle++;
    else if (k == KIND_MINDSPORE)
        d->mindspore++;
}

void detect_classify(struct input *in, const struct detect *d)
{
    const struct tscan_meta *m = &in->meta;
    if (m->has_paddle_marker || (d->paddle > 0 && d->paddle >= d->torch))
        in->fw = FW_PADDLE;
    else if (d->torch > 0 || (!m->root_is_array && (m->has_distributed_info || m->schema_version[0] ||
                                                    m->has_device_properties)))
        in->fw = FW_TORCH;
    else if (d->mindspore > 0)
        in->fw = FW_MINDSPORE;
    else
        in->fw = FW_UNKNOWN;
    switch (in->fw) {
    case FW_TORCH:
        in->format = m->root_is_array ? "torch-legacy" : "kineto";
        break;
    case FW_PADDLE:
        in->format = "paddle";
        break;
    case FW_MINDSPORE:
        in->format = "mindspore-timeline";
        break;
    default:
        in->format = "chrome";
        break;
    }
}
