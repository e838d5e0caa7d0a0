// NpuEmuRound: the emulator's storage rounding in one TensorFlow op; NpuEmuCheck: its finite check.
//
// The emulator rounds a float32 tensor the device stores in half precision through
// Cast(float32 -> float16) and Cast(float16 -> float32): two kernels, two passes over memory, two
// tensors allocated. This op does the same round trip in one pass, and in the same pass says whether
// any rounded value is inf/NaN, so the emulator's all-finite flag for a rounded output needs no node
// of its own. Values are bit-for-bit those of the Cast pair (round to nearest even, overflow to inf,
// half subnormals kept); NaN stays NaN. npu_jupyter compiles this file on the user's machine against
// the installed TensorFlow (`python -m npu_jupyter build-kernel`) and installs the library only after
// a check in a separate process has compared it with the Cast pair; without it the Cast pair is used.
//
// On x86-64 the conversion is the CPU's own instruction, chosen at run time: AVX-512's 16-wide form
// where the CPU has it, else F16C's 8-wide one, else (and on other machines) integer arithmetic. A
// rounded copy of a large tensor is written with non-temporal stores (see kStreamBytes).
//
// Outputs: y (float32, the rounded values), check (float32 scalar: 0 when every rounded value is
// finite, NaN otherwise; the emulator packs it with its other flags and tests IsFinite) and x_check
// (the same for the values read: a weight the step rounds needs no second pass for its own flag).
//
// NpuEmuCheck(x) is that check alone, for a tensor no rounding reads: one read-only pass over the
// exponent bits, where TensorFlow alone needs Reshape + Sum (or L2Loss) and can overflow the sum of
// large finite values.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPU_EMU_X86 1
#endif

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/util/work_sharder.h"

namespace {

using tensorflow::DataType;
using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline bool non_finite(float f) { return !(std::fabs(f) < INFINITY); }

// float32 -> float16 -> float32 in integer arithmetic, for machines without a conversion instruction.
float round_half_portable(float f) {
  const uint32_t u = bits_of(f);
  const uint32_t sign = u & 0x80000000u;
  const uint32_t a = u ^ sign;
  if (a > 0x7f800000u) return float_of(u | 0x00400000u);  // NaN stays NaN (quieted)
  if (a >= 0x477ff000u) return float_of(sign | 0x7f800000u);  // >= 65520 rounds to inf (inf stays)
  if (a >= 0x38800000u) {  // a normal float16: keep 10 fraction bits, ties to even
    return float_of(sign | ((a + 0x0fffu + ((a >> 13) & 1u)) & 0xffffe000u));
  }
  // A float16 subnormal or zero: a multiple of 2^-24. Scaling by 2^24 is exact, and rint rounds to
  // nearest even in the default rounding mode.
  const float scaled = std::rint(float_of(a) * 16777216.0f) / 16777216.0f;
  return float_of(sign | bits_of(scaled));
}

// float32 -> bfloat16 -> float32: the upper 16 bits, ties to even; NaN stays NaN.
inline float round_bfloat16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return float_of((u | 0x00400000u) & 0xffff0000u);
  return float_of((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

// What a pass found, as bits: a rounded value is inf/NaN; a value read is inf/NaN.
constexpr unsigned kRoundedBad = 1u;
constexpr unsigned kReadBad = 2u;

inline unsigned found(float read, float rounded) {
  return (non_finite(rounded) ? kRoundedBad : 0u) | (non_finite(read) ? kReadBad : 0u);
}

unsigned round_half_scalar(const float* in, float* out, int64_t begin, int64_t end) {
  unsigned bad = 0;
  for (int64_t i = begin; i < end; ++i) {
    const float read = in[i];  // read before the write: out may be in's buffer
    out[i] = round_half_portable(read);
    bad |= found(read, out[i]);
  }
  return bad;
}

// Past this many bytes a rounded copy (an output in a buffer of its own, as for a weight read from
// its variable) is written with non-temporal stores. A plain store first reads each destination line
// from memory; a tensor this large mostly leaves a core's cache before its consumer reads it, so
// that read is wasted. In ResNet-50's training step (batch 2, where weights are half the values rounded)
// the emulator went from about 1.23x to 1.19x a plain session (bench/runtime_bench.py, paired CPU).
constexpr int64_t kStreamBytes = int64_t{1} << 20;

#ifdef NPU_EMU_X86
// The F16C conversion instructions (every x86-64 CPU since 2012), chosen at run time so the library
// loads on any x86-64 machine. Immediate 0: round to nearest even whatever MXCSR says.
template <bool kStream>
__attribute__((target("avx,f16c"))) inline unsigned round_half_f16c_loop(const float* in, float* out, int64_t begin,
                                                                        int64_t end) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(INFINITY);
  __m256 rounded_bad = _mm256_setzero_ps();
  __m256 read_bad = _mm256_setzero_ps();
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    const __m256 y = _mm256_cvtph_ps(_mm256_cvtps_ph(x, 0));
    if (kStream) {
      _mm256_stream_ps(out + i, y);
    } else {
      _mm256_storeu_ps(out + i, y);
    }
    rounded_bad = _mm256_or_ps(rounded_bad, _mm256_cmp_ps(_mm256_and_ps(y, abs_mask), inf, _CMP_NLT_UQ));
    read_bad = _mm256_or_ps(read_bad, _mm256_cmp_ps(_mm256_and_ps(x, abs_mask), inf, _CMP_NLT_UQ));
  }
  unsigned bad = (_mm256_movemask_ps(rounded_bad) ? kRoundedBad : 0u) | (_mm256_movemask_ps(read_bad) ? kReadBad : 0u);
  for (; i < end; ++i) {
    const float read = in[i];
    out[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(read), 0)));
    bad |= found(read, out[i]);
  }
  return bad;
}

// The same with AVX-512's 16-wide conversions, where the CPU has them: fewer instructions an element.
template <bool kStream>
__attribute__((target("avx512f"))) inline unsigned round_half_avx512_loop(const float* in, float* out, int64_t begin,
                                                                          int64_t end) {
  const __m512 inf = _mm512_set1_ps(INFINITY);
  __mmask16 rounded_bad = 0;
  __mmask16 read_bad = 0;
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    const __m512 y = _mm512_cvtph_ps(_mm512_cvtps_ph(x, 0));
    if (kStream) {
      _mm512_stream_ps(out + i, y);
    } else {
      _mm512_storeu_ps(out + i, y);
    }
    rounded_bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(y), inf, _CMP_NLT_UQ);
    read_bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(x), inf, _CMP_NLT_UQ);
  }
  const unsigned bad = (rounded_bad ? kRoundedBad : 0u) | (read_bad ? kReadBad : 0u);
  return bad | round_half_f16c_loop<false>(in, out, i, end);  // the last < 16 elements
}

// Non-temporal stores need aligned addresses (64 bytes covers both widths): plain stores up to the
// first one, then the loop, then a fence so the consumer sees the streamed lines on any thread.
template <unsigned (*kPlain)(const float*, float*, int64_t, int64_t),
          unsigned (*kStreamed)(const float*, float*, int64_t, int64_t)>
unsigned round_half_x86(const float* in, float* out, int64_t begin, int64_t end, bool stream) {
  if (!stream) return kPlain(in, out, begin, end);
  int64_t head = begin;
  while (head < end && (reinterpret_cast<uintptr_t>(out + head) & 63u) != 0) ++head;
  const unsigned bad = round_half_f16c_loop<false>(in, out, begin, head) | kStreamed(in, out, head, end);
  _mm_sfence();
  return bad;
}

bool has_f16c() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}

bool has_avx512() {
  __builtin_cpu_init();
#ifdef NPU_EMU_NO_AVX512  // a build of the F16C path alone, so that a test can check it on any x86-64
  return false;
#else
  return __builtin_cpu_supports("avx512f");
#endif
}

bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#endif

unsigned round_half(const float* in, float* out, int64_t begin, int64_t end, bool stream) {
#if defined(NPU_EMU_X86) && !defined(NPU_EMU_PORTABLE)
  static const bool avx512 = has_avx512();
  static const bool f16c = has_f16c();
  if (avx512) {
    return round_half_x86<round_half_avx512_loop<false>, round_half_avx512_loop<true>>(in, out, begin, end, stream);
  }
  if (f16c) {
    return round_half_x86<round_half_f16c_loop<false>, round_half_f16c_loop<true>>(in, out, begin, end, stream);
  }
#endif
  return round_half_scalar(in, out, begin, end);
}

unsigned round_bf16(const float* in, float* out, int64_t begin, int64_t end) {
  unsigned bad = 0;
  for (int64_t i = begin; i < end; ++i) {
    const float read = in[i];
    out[i] = round_bfloat16(read);
    bad |= found(read, out[i]);
  }
  return bad;
}

// Whether any of in[begin, end) is inf or NaN: all exponent bits set. Integer compares on the bits,
// which the compiler vectorizes: with SSE2 everywhere, and with AVX2's wider registers in a copy
// compiled for it, chosen at run time where the CPU has it (the scan is then about 1.3x faster).
template <typename Bits, Bits kExponent>
inline __attribute__((always_inline)) bool scan_non_finite(const void* data, int64_t begin, int64_t end) {
  const Bits* bits = static_cast<const Bits*>(data);
  Bits hits = 0;  // an integer accumulator (not a bool) keeps the loop vectorizable
  for (int64_t i = begin; i < end; ++i) hits |= static_cast<Bits>(~bits[i] & kExponent) == 0 ? Bits(1) : Bits(0);
  return hits != 0;
}

template <typename Bits, Bits kExponent>
bool any_non_finite(const void* data, int64_t begin, int64_t end) {
  return scan_non_finite<Bits, kExponent>(data, begin, end);
}

#ifdef NPU_EMU_X86
template <typename Bits, Bits kExponent>
__attribute__((target("avx2"))) bool any_non_finite_avx2(const void* data, int64_t begin, int64_t end) {
  return scan_non_finite<Bits, kExponent>(data, begin, end);
}
#endif

using CheckFn = bool (*)(const void*, int64_t, int64_t);

template <typename Bits, Bits kExponent>
CheckFn check_of() {
#if defined(NPU_EMU_X86) && !defined(NPU_EMU_PORTABLE)
  if (has_avx2()) return any_non_finite_avx2<Bits, kExponent>;
#endif
  return any_non_finite<Bits, kExponent>;
}

CheckFn check_for(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT:
      return check_of<uint32_t, 0x7f800000u>();
    case tensorflow::DT_HALF:
      return check_of<uint16_t, 0x7c00u>();
    case tensorflow::DT_BFLOAT16:
      return check_of<uint16_t, 0x7f80u>();
    case tensorflow::DT_DOUBLE:
      return check_of<uint64_t, 0x7ff0000000000000ull>();
    default:
      return nullptr;
  }
}

class NpuEmuCheckOp : public OpKernel {
 public:
  explicit NpuEmuCheckOp(OpKernelConstruction* context) : OpKernel(context) {
    DataType dtype;
    OP_REQUIRES_OK(context, context->GetAttr("T", &dtype));
    check_ = check_for(dtype);
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    Tensor* check = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, TensorShape({}), &check));
    const void* data = x.tensor_data().data();
    std::atomic<bool> bad(false);
    auto work = [&](int64_t begin, int64_t end) {
      if (check_(data, begin, end)) bad = true;
    };
    const auto* threads = context->device()->tensorflow_cpu_worker_threads();
    tensorflow::Shard(threads->num_threads, threads->workers, x.NumElements(), 1, work);
    check->scalar<float>()() = bad ? NAN : 0.0f;
  }

 private:
  CheckFn check_;
};

class NpuEmuRoundOp : public OpKernel {
 public:
  explicit NpuEmuRoundOp(OpKernelConstruction* context) : OpKernel(context) {
    OP_REQUIRES_OK(context, context->GetAttr("to", &to_));
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    Tensor* check = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(1, TensorShape({}), &check));
    Tensor* x_check = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(2, TensorShape({}), &x_check));
    const float* in = x.flat<float>().data();
    float* out = y->flat<float>().data();
    const bool half = to_ == tensorflow::DT_HALF;
    const bool stream = out != in && x.TotalBytes() >= kStreamBytes;
    std::atomic<unsigned> bad(0);
    auto work = [&](int64_t begin, int64_t end) {
      const unsigned here = half ? round_half(in, out, begin, end, stream) : round_bf16(in, out, begin, end);
      if (here) bad.fetch_or(here);
    };
    const auto* threads = context->device()->tensorflow_cpu_worker_threads();
    // About 2 cycles an element: shards only where a tensor is large enough to repay the hand-off.
    tensorflow::Shard(threads->num_threads, threads->workers, x.NumElements(), 2, work);
    check->scalar<float>()() = (bad & kRoundedBad) ? NAN : 0.0f;
    x_check->scalar<float>()() = (bad & kReadBad) ? NAN : 0.0f;
  }

 private:
  DataType to_;
};

}  // namespace

REGISTER_OP("NpuEmuRound")
    .Input("x: float")
    .Output("y: float")
    .Output("check: float")
    .Output("x_check: float")
    .Attr("to: {half, bfloat16}")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      c->set_output(1, c->Scalar());
      c->set_output(2, c->Scalar());
      return tensorflow::Status();
    })
    .Doc("float32 rounded to `to` and back (the Cast pair's values) and finite checks of y and x, in one pass.");

REGISTER_KERNEL_BUILDER(Name("NpuEmuRound").Device(tensorflow::DEVICE_CPU), NpuEmuRoundOp);

REGISTER_OP("NpuEmuCheck")
    .Input("x: T")
    .Output("check: float")
    .Attr("T: {float, half, bfloat16, double}")
    .SetShapeFn(tensorflow::shape_inference::ScalarShape)
    .Doc("0 when every value of x is finite, NaN otherwise.");

REGISTER_KERNEL_BUILDER(Name("NpuEmuCheck").Device(tensorflow::DEVICE_CPU), NpuEmuCheckOp);
