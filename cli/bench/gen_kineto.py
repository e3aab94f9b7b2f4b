# SPDX-License-Identifier: MIT
"""Writes a synthetic Kineto (torch.profiler) trace of about --mb megabytes.

The layout and the event mix follow the real traces in tests/data/kineto: a top-level object
with schemaVersion, deviceProperties and distributedInfo before "traceEvents" and
displayTimeUnit/baseTimeNanoseconds after it; events pretty-printed over several lines as
Kineto writes them; about half cpu_op (with Input Dims and types), a third GPU kernels, the rest
cuda_runtime launches and ac2g flow pairs, plus one ProfilerStep#N annotation per step.
Deterministic (fixed seed). Prints the number of events written on stdout.
"""
import argparse
import random
import sys

OPS = ["aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
       "aten::add_", "aten::addmm", "aten::mm", "aten::relu_", "aten::batch_norm",
       "aten::_batch_norm_impl_index", "aten::cudnn_batch_norm", "aten::empty", "aten::view",
       "aten::t", "aten::transpose", "aten::as_strided", "aten::copy_", "aten::to",
       "aten::max_pool2d", "aten::linear", "aten::matmul", "aten::softmax", "aten::zero_",
       "aten::fill_", "aten::mul", "aten::sum", "aten::mean", "aten::div", "aten::sigmoid",
       "aten::cat", "aten::slice", "aten::select", "aten::reshape", "aten::flatten",
       "aten::dropout", "aten::native_dropout", "aten::embedding", "aten::layer_norm",
       "aten::native_layer_norm", "aten::gelu", "aten::bmm", "aten::clone", "aten::contiguous",
       "Optimizer.step#SGD.step", "autograd::engine::evaluate_function: AddmmBackward0",
       "AddmmBackward0", "ConvolutionBackward0", "aten::convolution_backward",
       "aten::threshold_backward", "aten::native_batch_norm_backward"]
KERNELS = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3>)",
           "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"
           "_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn",
           "ampere_sgemm_128x64_tn", "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, "
           "true, 1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, "
           "float const*, float, float, float*, float*, float*, float*, float, float)",
           "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, "
           "float const*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, "
           "float*, long*)", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"]
DTYPES = ["float", "c10::Half", "long int", "Scalar", ""]

HEAD = """{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744,
      "computeMajor": 8, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,
      "numSms": 108, "sharedMemPerBlockOptin": 166912
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
  "traceEvents": [
"""
TAIL = """
  ],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1693000000000000000
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1024.0)
    ap.add_argument("out")
    a = ap.parse_args()
    target = int(a.mb * 1024 * 1024)
    rnd = random.Random(42)
    ts = 1693000000000000.0
    ext = 0
    n = 0
    step = 0
    size = len(HEAD) + len(TAIL)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(HEAD)
        buf = []
        first = True
        while size < target:
            if n % 2000 == 0:
                ev = ('  {\n    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", '
                      '"pid": 2840, "tid": 2840,\n    "ts": %.3f, "dur": %.3f,\n    "args": {\n'
                      '      "External id": %d, "Record function id": 0, "Ev Idx": %d\n    }\n  }'
                      % (step, ts, 2000 * 9.5, ext, n))
                step += 1
            else:
                k = rnd.random()
                ext += 1
                if k < 0.5:
                    dims = ", ".join("[%d, %d]" % (rnd.choice((1, 8, 64, 256)), rnd.choice((3, 64, 512)))
                                     for _ in range(rnd.randint(1, 3)))
                    types = ", ".join('"%s"' % rnd.choice(DTYPES) for _ in range(rnd.randint(1, 3)))
                    ev = ('  {\n    "ph": "X", "cat": "cpu_op", "name": "%s", "pid": 2840, '
                          '"tid": 2840,\n    "ts": %.3f, "dur": %.3f,\n    "args": {\n'
                          '      "External id": %d, "Record function id": 0, "Ev Idx": %d, '
                          '"Input Dims": [%s], "Input type": [%s], "Sequence number": %d, '
                          '"Fwd thread id": 0\n    }\n  }'
                          % (rnd.choice(OPS), ts, rnd.random() * 40, ext, n, dims, types,
                             rnd.randint(0, 10 ** 6)))
                elif k < 0.8:
                    ev = ('  {\n    "ph": "X", "cat": "kernel", "name": "%s", "pid": 0, '
                          '"tid": 7,\n    "ts": %.3f, "dur": %.3f,\n    "args": {\n'
                          '      "External id": %d,\n      "queued": 0, "device": 0, '
                          '"context": 1,\n      "stream": 7, "correlation": %d,\n'
                          '      "registers per thread": 32,\n      "shared memory": 0,\n'
                          '      "blocks per SM": 2.370370,\n      "warps per SM": 9.481481,\n'
                          '      "grid": [256, 1, 1],\n      "block": [128, 1, 1],\n'
                          '      "est. achieved occupancy %%": 15\n    }\n  }'
                          % (rnd.choice(KERNELS), ts + 30, rnd.random() * 100, ext, n))
                elif k < 0.95:
                    ev = ('  {\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", '
                          '"pid": 2840, "tid": 2840,\n    "ts": %.3f, "dur": %.3f,\n'
                          '    "args": {\n      "External id": %d,\n      "cbid": 211, '
                          '"correlation": %d\n    }\n  }' % (ts, rnd.random() * 8, ext, n))
                else:
                    ev = ('  {\n    "ph": "s", "id": %d, "pid": 2840, "tid": 2840, "ts": %.3f,\n'
                          '    "cat": "ac2g", "name": "ac2g"\n  },\n'
                          '  {\n    "ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f,\n'
                          '    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }'
                          % (n, ts, n, ts + 30))
                    n += 1
            n += 1
            ts += rnd.random() * 10
            s = ev if first else ",\n" + ev
            first = False
            buf.append(s)
            size += len(s)
            if len(buf) >= 4096:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
        f.write(TAIL)
    print(n)


if __name__ == "__main__":
    sys.exit(main())
