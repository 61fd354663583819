#include "estimate/optimizer.h"

#include "util/checked_math.h"

namespace tally {
namespace {

constexpr uint64_t kAdam8bitBlock = 2048;  // bitsandbytes' block-wise quantization block size

uint64_t Product(const std::vector<uint64_t>& shape, size_t from, size_t to) {
  uint64_t n = 1;
  for (size_t i = from; i < to; ++i) n = CheckedMul(n, shape[i], "optimizer state");
  return n;
}

}  // namespace

uint64_t OptimizerStateBytes(Optimizer o, DType state, const std::vector<uint64_t>& shape, uint64_t elements,
                             uint64_t shards) {
  const uint64_t n = shards == 1 ? elements : CeilDiv(elements, shards);
  constexpr std::string_view what = "optimizer state";
  switch (o) {
    case Optimizer::kSgd:
      return 0;
    // One buffer per parameter: momentum (SGD), the sum of squared gradients (AdaGrad, Duchi et al.
    // 2011), the running mean of squares (RMSProp, Tieleman & Hinton 2012), momentum (Lion, Chen et
    // al. 2023, Alg. 2).
    case Optimizer::kSgdMomentum:
    case Optimizer::kAdagrad:
    case Optimizer::kRmsprop:
    case Optimizer::kLion:
      return BytesOf(n, state, what);
    // Kingma & Ba 2015; Loshchilov & Hutter 2019: first and second moments.
    case Optimizer::kAdam:
    case Optimizer::kAdamw:
      return CheckedMul(2, BytesOf(n, state, what), what);
    // Dettmers et al. 2022 (8-bit optimizers, §2): both moments at 1 byte, plus one fp32 absmax per
    // block of 2048 values for each.
    case Optimizer::kAdam8bit:
      return CheckedMul(2, CheckedAdd(n, 4 * CeilDiv(n, kAdam8bitBlock), what), what);
    // Shazeer & Stern 2018, §3: the second moment of a matrix is factored into row and column sums
    // (over the last two dimensions); vectors keep it whole; no first moment (beta1 = 0, the default).
    case Optimizer::kAdafactor: {
      if (shape.size() < 2) return BytesOf(n, state, what);
      const uint64_t rows = Product(shape, 0, shape.size() - 1);
      const uint64_t cols = CheckedMul(Product(shape, 0, shape.size() - 2), shape.back(), what);
      return BytesOf(CeilDiv(CheckedAdd(rows, cols, what), shards), state, what);
    }
  }
  return 0;
}

const char* OptimizerStateFormula(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return "no state";
    case Optimizer::kSgdMomentum:
      return "1 state per parameter (momentum)";
    case Optimizer::kAdagrad:
      return "1 state per parameter (sum of squared gradients; Duchi et al. 2011)";
    case Optimizer::kRmsprop:
      return "1 state per parameter (mean of squares; Tieleman & Hinton 2012)";
    case Optimizer::kAdam:
      return "2 states per parameter (m, v; Kingma & Ba 2015)";
    case Optimizer::kAdamw:
      return "2 states per parameter (m, v; Loshchilov & Hutter 2019)";
    case Optimizer::kAdam8bit:
      return "2 states at 1 byte + an fp32 absmax per 2048-value block each (Dettmers et al. 2022)";
    case Optimizer::kLion:
      return "1 state per parameter (momentum; Chen et al. 2023)";
    case Optimizer::kAdafactor:
      return "rows + columns per matrix, n per vector (factored second moment; Shazeer & Stern 2018)";
  }
  return "";
}

}  // namespace tally
