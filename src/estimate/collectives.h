// A collective's time by the α–β model NCCL itself tunes with: a latency per call (a base plus one
// hop's latency per ring step, NVLink inside a node, the NIC across nodes) plus the bytes each rank
// sends over the link's bandwidth. NCCL picks the fastest of its algorithms (ring; for an all-reduce
// also the tree, whose latency grows with log2 of the nodes) and protocols (Simple; low-latency, LL,
// at a quarter of the bandwidth); so does this.
#pragma once

namespace tally {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll };

struct Link {
  double bandwidth = 0;  // bytes/s per direction per device
  bool network = false;  // the collective spans nodes: its inter-node steps cross the NIC
  double ranks_per_node = 1;
};

// `calls` collectives over `ranks` devices moving `bytes` in all (each call bytes / calls).
double CollectiveSeconds(Collective c, double ranks, double bytes, double calls, const Link& link);

}  // namespace tally
