// CPU offload in training (--offload). ZeRO-Offload (Ren et al. 2021, §4.1) keeps each rank's ZeRO-2
// partition of the gradients, fp32 master weights and optimizer states in host memory and runs the
// optimizer step on the CPU; parameter offload (ZeRO-Infinity, Rajbhandari et al. 2021; PyTorch FSDP's
// CPUOffload) keeps the rank's ZeRO-3 partition of the weights there too and streams it in for each
// pass. What leaves the device, and what crosses PCIe per step.
#pragma once

#include <cstdint>

#include "config/settings.h"

namespace tally {

struct ModelStates;
struct TrainMemory;

// Moves the offloaded parts of `m` (already partitioned by ZeRO) to its host_* fields. Gradients leave
// bucket by bucket as the backward produces them (the buckets are communication buffers, like the
// NCCL buffers --overhead stands for). --offload params keeps on the device the weights gathered at
// once, FSDP's per-block wrapping: the stage's weights outside the blocks (the root unit, gathered for
// the whole step) and two of its largest block (the one running and the next, prefetched), at most
// the stage's whole weights.
void OffloadToHost(const ModelStates& states, const Settings& s, TrainMemory& m);

// Bytes one device moves over its host link.
struct OffloadTraffic {
  double down_per_micro = 0;  // device -> host, each micro-batch: its gradient partition (accumulated on the host)
  double up_per_micro = 0;    // host -> device, each micro-batch: the weight partition, once per pass (params)
  double up_per_step = 0;     // host -> device, once per step: the updated weight partition (optimizer)
};
OffloadTraffic OffloadBytes(const TrainMemory& m, const Settings& s, uint64_t n_layers);

}  // namespace tally
