// One training step as a timeline: the allocations and frees of a forward pass, the loss, a
// backward pass and the optimizer step over the layer graph, in the order PyTorch's autograd runs
// them, and the peak of live bytes over it (docs/timeline.md). The ledgers (estimate/memory.h) stay
// the breakdown; the peak is what a device must hold.
//
// Cost follows the distinct blocks: live bytes inside a run of identical blocks change by the same
// amount from one block to the next, so the peak over the run is at its first or its last block,
// and only those two are evaluated. Events are listed only when asked (--timeline, JSON "timeline").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "estimate/memory.h"
#include "estimate/memory_model.h"

namespace tally {

enum class StepPhase { kForward, kLoss, kBackward, kOptimizer };

// What live bytes are, stacked in the picture in this order.
enum class LiveCategory {
  kWeights,      // weights, the fp32 master copy, QLoRA's dequantization buffer
  kGradients,    // parameter gradients, allocated at their first write
  kOptimizer,    // optimizer states
  kActivations,  // tensors autograd saves for backward, autocast's cast weights among them
  kTemporaries,  // outputs, incoming and outgoing gradients, the loss's logits, optimizer scratch
};
inline constexpr size_t kLiveCategories = 5;

const char* StepPhaseName(StepPhase p);
const char* LiveCategoryName(LiveCategory c);

struct LiveBytes {
  std::array<uint64_t, kLiveCategories> bytes{};
  uint64_t Total() const;
  uint64_t& operator[](LiveCategory c) { return bytes[static_cast<size_t>(c)]; }
  uint64_t operator[](LiveCategory c) const { return bytes[static_cast<size_t>(c)]; }
};

// The live bytes while `node` runs in `phase` ("blocks.7.mlp.up", "loss", "optimizer").
struct StepEvent {
  StepPhase phase = StepPhase::kForward;
  std::string node;
  LiveBytes live;
};

struct StepTimeline {
  uint64_t peak = 0;  // the most live bytes at any event: what the step needs of the device
  StepPhase peak_phase = StepPhase::kForward;
  std::string peak_at;            // the node running at the peak
  LiveBytes at_peak;              // the peak by category
  std::vector<StepEvent> events;  // every event in order, when asked for
};

// The device's memory beyond the tensors (docs/timeline.md, "The device"): each line with its
// default and source, overridable by flag.
struct DeviceOverheads {
  uint64_t cuda_context = 0;      // the CUDA context and the kernels' images
  uint64_t cublas_workspace = 0;  // cuBLAS's workspace, one per stream
  uint64_t nccl = 0;              // NCCL's communicator buffers (only with more than one device)
  uint64_t fragmentation = 0;     // the caching allocator's segments beyond the live tensors
  uint64_t Total() const;
};

// The step of the most-loaded pipeline stage, for settings.micro_batch. `ledger` is that stage's
// TrainingMemory (its model states after ZeRO and offload). `events`: list every event too.
StepTimeline TrainingTimeline(const MemoryModel& model, const Settings& settings, const TrainMemory& ledger,
                              bool events);

// The overheads of a device whose tensors peak at `peak` bytes.
DeviceOverheads Overheads(const Settings& settings, uint64_t peak);

// Inference's: under --gpu-memory-utilization a server (vLLM) preallocates its cache in one block,
// so the allocator's fragmentation is none; the runtime's own lines stay inside the claimed fraction.
DeviceOverheads InferenceOverheads(const Settings& settings, uint64_t total);

// What a device holds for a training step: its timeline, whose peak (with --overhead's bytes, memory
// not modelled) takes the device's overheads on top.
struct StepMemory {
  StepTimeline step;
  DeviceOverheads overheads;
  uint64_t device = 0;
};
StepMemory TrainingStepMemory(const MemoryModel& model, const Settings& settings, const TrainMemory& ledger,
                              bool events);

}  // namespace tally
