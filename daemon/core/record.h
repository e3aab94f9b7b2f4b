/* SPDX-License-Identifier: MIT */
/*
 * record: what ingest decodes and store keeps, the value types that cross the ingest -> store
 * boundary (through callbacks wired in main.c, so neither module includes the other).
 *
 * Every pointer in these structs is borrowed: valid only for the duration of the callback that
 * receives it. A consumer that keeps anything copies it.
 */
#ifndef STEPSCOPE_RECORD_H
#define STEPSCOPE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_NAME_MAX 256 /* job, run, stream, host, framework: longest accepted, in bytes */

enum record_kind {
    RECORD_TRACE,    /* a Chrome Trace Event object (has "ph"), kept verbatim */
    RECORD_STEP,     /* {"type":"step"}: one training step's summary */
    RECORD_QUEUE,    /* {"type":"queue"}: a data-queue depth sample */
    RECORD_PIPELINE, /* {"type":"pipeline"}: data-pipeline topology, kept verbatim */
    RECORD_HOST,     /* {"type":"host"}: host CPU/memory sample */
    RECORD_KIND_COUNT,
};

/* Unescaped bytes, not NUL-terminated; len 0 means absent. */
struct record_text {
    const char *ptr;
    size_t len;
};

/* The bytes of a pid or tid text that name its thread: its leading integer, sign included (at
 * most 18 digits), or 0 when it has none. "29559(Python)" and "29559(C++)" are one thread, as in
 * Paddle's own trees; live and the store-read analyses both key threads by it. */
static inline size_t record_id_len(struct record_text t)
{
    size_t i = t.len > 0 && t.ptr[0] == '-' ? 1 : 0, d = 0;
    while (i < t.len && t.ptr[i] >= '0' && t.ptr[i] <= '9' && d < 18) {
        i++;
        d++;
    }
    return d > 0 ? i : 0;
}

/* The members of a step record's "phases" the daemon reads, in ns: -1 when absent (or not a time
 * the protocol's microseconds give in range). */
struct record_phases {
    int64_t dataloader_ns;
    int64_t forward_ns;
    int64_t backward_ns;
};

struct record {
    enum record_kind kind;
    uint64_t seq;              /* the stream's sequence number of this line */
    const char *raw;           /* the line exactly as received, without its '\n' */
    size_t raw_len;
    char ph;                   /* TRACE: the phase letter ('X', 'B', 'E', 'i', 'C', 'M', ...) */
    int64_t ts_ns;             /* TRACE: ts; STEP: begin; QUEUE, HOST: ts (INT64_MIN if absent) */
    int64_t dur_ns;            /* TRACE: dur (0 if absent); STEP: end - begin */
    struct record_text name;   /* TRACE: name; QUEUE: queue name */
    struct record_text cat;    /* TRACE: cat */
    struct record_text pid;    /* TRACE: pid as its JSON text (number or unescaped string) */
    struct record_text tid;    /* TRACE: tid, likewise */
    struct record_text phases; /* STEP: the "phases" object as raw JSON text, if present (the
                                  store keeps it verbatim) */
    struct record_phases phase_ns; /* STEP: its members, typed (decode.h: decode_record() fills
                                      them from a line, decode_phases() from stored text) */
    int64_t step;              /* STEP, QUEUE: step number (-1 if absent) */
    int64_t samples;           /* STEP: samples processed in the step (-1 if absent) */
    int64_t size;              /* QUEUE: elements in the queue */
    int64_t capacity;          /* QUEUE: queue capacity (-1 if unknown) */
    double cpu_percent;        /* HOST: process CPU utilisation, percent of one core (-1 if absent) */
    double sys_cpu_percent;    /* HOST: whole-system CPU utilisation, percent (-1 if absent) */
    int64_t rss_bytes;         /* HOST: resident memory (-1 if absent) */
    int64_t correlation;       /* TRACE: args.correlation, an integer >= 0 that links a device
                                  event to its runtime call (-1 if absent or not such an integer) */
    int64_t external_id;       /* TRACE: args["External id"], which links a device event to its
                                  host operator, likewise (-1 if absent) */
    int64_t dispatch_ns;       /* TRACE: args.dispatch_time_us (a MindSpore AI CPU task's dispatch
                                  time, µs; -1 if absent, negative or not a number) */
    int64_t exec_ns;           /* TRACE: args.execution_time_us (its execution time), likewise */
    /* Paddle's profiler (docs/PROTOCOL.md 9), read only from a trace event named "[memory]"
     * (ph i or I) or "ExtraInfo" (ph M); elsewhere absent: */
    int64_t mem_bytes;         /* [memory]: args.increase_bytes, an integer (INT64_MIN if absent) */
    int64_t mem_peak_allocated; /* [memory]: args.peak_allocated, an integer >= 0 (-1 if absent) */
    int64_t mem_peak_reserved; /* [memory]: args.peak_reserved, likewise */
    struct record_text mem_place; /* [memory]: args.place ("Place(cpu)") */
    struct record_text mem_owner; /* [memory]: args.owner, the name of the host event it
                                     happened in, as the collector saw Paddle attribute it */
    int64_t mem_owner_ns;      /* [memory]: args.owner_ts, that host event's ts (INT64_MIN if
                                  absent) */
    /* Memory events' device and totals: Paddle's args.current_allocated / current_reserved, or
     * Kineto's and the collector's "Total Allocated" / "Total Reserved", "Device Type" (0 CPU,
     * 1 CUDA), "Device Id"; from "[memory]" (ph i or I) and "[memory stats]" (ph C, the
     * collector's allocator samples: docs/PROTOCOL.md 10, which also fill mem_peak_* from
     * "Peak Allocated" / "Peak Reserved" and step from the top-level "step"). Kineto's
     * args.Bytes fills mem_bytes. */
    int64_t mem_allocated;     /* an integer >= 0 (-1 if absent) */
    int64_t mem_reserved;      /* likewise */
    int64_t mem_device_type;   /* likewise */
    int64_t mem_device_id;     /* an integer (INT64_MIN if absent; Kineto's CPU is -1) */
    double util_cpu;           /* ExtraInfo: args["Process Cpu Utilization"], Paddle's fraction
                                  (a number or a string holding one; -1 if absent or not >= 0) */
    double util_sys_cpu;       /* ExtraInfo: args["System Cpu Utilization"], likewise */
};

/* A series of numbers of a pipeline record: the values [first, first + n) of
 * record_pipeline.values (a record keeps its first RECORD_PIPE_VALUES_MAX numbers; n may
 * be less than count), and the sum of all count values given (count 0: no series). */
struct record_series {
    size_t first;
    size_t n;
    size_t count;
    double sum;
};

/* The CPU series a pipeline record's "cpu" object may carry (PROTOCOL.md section 8): the
 * system's "user", "sys", "io", "idle" (percent), "runnable" (processes), "context_switch"
 * (count per sample), the process's "process_user", "process_sys" (percent of the machine). */
#define RECORD_CPU_SERIES 8
extern const char *const record_cpu_series_names[RECORD_CPU_SERIES]; /* decode.c */

/* One operator of a pipeline topology, as the record gave it. */
struct record_pipe_op {
    int64_t id;
    char type[64];       /* "name" (or "type") of the op, cut to fit; "" if absent */
    int64_t num_workers; /* -1 if absent */
    int64_t parent_id;   /* the op listing this one among its children; -1: a root */
    size_t first_child;  /* into record_pipeline.children */
    size_t n_children;
    double usage;        /* output queue usage in [0, 1]: queue_usage, or mean(queue_sizes or
                            queue_size) / queue_capacity; < 0 when the op has no queue figures */
    int64_t capacity;    /* queue_capacity, -1 if absent */
    double queue_avg;            /* mean of queue_sizes, or queue_size; -1 if neither */
    struct record_series sizes;    /* queue_sizes */
    double sample_interval_ms;   /* sample_interval_ms, -1 if absent */
    struct record_series cpu_user; /* cpu_user, cpu_sys: the op's threads, percent */
    struct record_series cpu_sys;
};

#define RECORD_PIPE_OPS_MAX 256       /* operators of one pipeline record; a bigger one is refused */
#define RECORD_PIPE_CHILDREN_MAX 1024 /* child links of one pipeline record, likewise */
#define RECORD_PIPE_VALUES_MAX (1 << 18) /* numbers kept of one pipeline record's series (queue
                                          * sizes, CPU); later ones count in the means only */

/* A {"type":"pipeline"} record (docs/PROTOCOL.md, "Pipeline records"), typed: decode_pipeline()
 * (decode.h) fills it; values is malloc'd and owned. */
struct record_pipeline {
    size_t n_ops;
    struct record_pipe_op ops[RECORD_PIPE_OPS_MAX];
    size_t n_children;
    int64_t children[RECORD_PIPE_CHILDREN_MAX];
    double *values; /* the series' first RECORD_PIPE_VALUES_MAX numbers */
    size_t n_values, cap_values;
    bool has_cpu;          /* the record has a "cpu" object */
    double cpu_interval_ms; /* its sampling_interval_ms, -1 if absent */
    int64_t processors;     /* its processors, -1 if absent */
    struct record_series cpu[RECORD_CPU_SERIES]; /* by record_cpu_series_names */
};

/* The first line of every connection. */
struct record_hello {
    const char *job;               /* 1..RECORD_NAME_MAX bytes, NUL-terminated */
    const char *run;               /* optional run id, "" if absent */
    const char *stream;            /* client-chosen replay identity, "" for a one-off stream */
    const char *host;              /* "" if absent */
    const char *framework;         /* "" if absent */
    const char *framework_version; /* "" if absent */
    const char *clock;             /* clock domain, "" if absent */
    int64_t rank;                  /* >= 0 */
    int64_t world_size;            /* >= 1 */
    int64_t pid;                   /* -1 if absent */
    bool has_seq;                  /* the client numbered its records from seq */
    bool can_capture;              /* "capabilities" names "capture" (docs/PROTOCOL.md 6) */
    bool probe;                    /* "probe":true: which daemon is this? Nothing else is read:
                                      the strings are "" (docs/PROTOCOL.md 1) */
    bool imported;                 /* "source" is "import": a whole file sent by stepscope import */
    uint64_t seq;
    /* The job's step-trace points from the hello's "env" object ("" when absent, not a string,
     * empty, longer than RECORD_NAME_MAX or holding a NUL: such an entry is ignored, never an
     * error). NUL-terminated, in the arena like the strings above. */
    const char *stepscope_fp_point; /* env STEPSCOPE_FP_POINT */
    const char *stepscope_bp_point; /* env STEPSCOPE_BP_POINT */
    const char *profiling_fp_start; /* env PROFILING_FP_START (MindSpore) */
    const char *profiling_bp_end;   /* env PROFILING_BP_END */
    const char *fp_point_env;       /* env FP_POINT (MindSpore r0.5) */
    const char *bp_point_env;       /* env BP_POINT */
    const char *raw;               /* the hello line verbatim (kept: it carries FP/BP points) */
    size_t raw_len;
};

/* An on-demand capture (daemon/capture/capture.h) as the store keeps it, and one rank's part of
 * it; the strings are NUL-terminated. */
struct record_capture {
    int64_t id, job_id, created_ns;
    int64_t start_step; /* -1: the next step */
    int64_t steps;
    int64_t series, window, every, repeat; /* capture.h, struct capture_view */
    bool all_ranks;
    const char *what;   /* comma-separated, e.g. "cpu,shapes" */
};

struct record_capture_rank {
    int64_t capture_id, rank, updated_ns;
    int64_t first_step; /* -1: not known */
    const char *state;  /* "pending", "armed", "recording", "done", "failed" */
    const char *reason; /* "" for none */
};

/* The daemon's answer to a hello. */
struct record_welcome {
    int64_t job_id;
    int64_t session_id; /* this connection */
    int64_t stream_id;  /* the replay identity; a new one for a hello without "stream" */
    uint64_t next_seq;  /* the first sequence number the daemon does not yet hold */
};

#endif
