// A collective's time by the α–β model NCCL itself tunes with: a latency per call (a base plus one
// hop's latency per ring step, NVLink inside a node, the NIC across nodes) plus the bytes each rank
// sends over the link's bandwidth. NCCL picks the faster of its low-latency (LL) protocol, at a
// quarter of the bandwidth, and its Simple protocol; so does this.
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
