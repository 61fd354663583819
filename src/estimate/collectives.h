// A collective's time by the α–β model NCCL itself tunes with: a latency per call (a base plus one
// hop's latency per ring step, NVLink inside a node, the NIC across nodes) plus the bytes each rank
// sends over the link's bandwidth. NCCL picks the fastest of its algorithms (ring; for an all-reduce
// also the tree, whose latency grows with log2 of the nodes) and protocols (Simple; low-latency, LL,
// at a quarter of the bandwidth); so does this. Inside a node whose NVSwitches reduce in the switch
// (NVLink SHARP, Hopper and Blackwell), an all-reduce may also take NCCL's NVLS algorithm.
#pragma once

#include "config/hardware.h"

namespace tally {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll };

struct Link {
  double bandwidth = 0;  // bytes/s per direction per device
  bool network = false;  // the collective spans nodes: its inter-node steps cross the NIC
  double ranks_per_node = 1;
  // NVLS in the node's switches, with the architecture's constants (HardwareSpec::nvls); an all-reduce
  // inside the node may take it.
  NvlsArch nvls = NvlsArch::kNone;
};

// `calls` collectives over `ranks` devices moving `bytes` in all (each call bytes / calls).
double CollectiveSeconds(Collective c, double ranks, double bytes, double calls, const Link& link);

// NVLS's all-reduce bus bandwidth over `ranks` GPUs of one node whose links carry `link` bytes/s (NCCL's
// rate), by NCCL's model; 0 where NCCL has no NVLS (kNone, or a channel speed that fits none).
double NvlsBusBandwidth(double ranks, NvlsArch arch, double link);

}  // namespace tally
