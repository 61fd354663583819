#include "estimate/collectives.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace tally {
namespace {

// NCCL's tuning model (github.com/NVIDIA/nccl, src/graph/tuning.cc, ncclTopoTuneModel: baseLat and
// hwLat, ring algorithm), microseconds: a call's base latency, and each ring step's over NVLink and
// over the network, for the Simple and LL protocols. LL moves a quarter of the bandwidth (8-byte
// lines carrying 4 bytes of data and a flag), and its intra-node hops cost 1.8x across nodes.
struct Protocol {
  double base, nvlink_hop, network_hop, bandwidth_share;
};
constexpr Protocol kSimple = {8.4, 3.4, 9.6, 1.0};
constexpr Protocol kLowLatency = {3.6, 0.47, 2.7, 0.25};
// The tree algorithm, all-reduce only (NCCL's double binary tree across nodes, a chain inside one):
// a latency of base + 2 ((ranks a node - 1) x the NVLink hop + log2(nodes) x the network hop), at 0.9
// of the link (LL: 1 / 3.8 of that), an algorithm bandwidth of half the bus bandwidth.
constexpr Protocol kTreeSimple = {0, 28, 50, 0.9};
constexpr Protocol kTreeLowLatency = {4.4, 0.52, 5.0, 0.9 / 3.8};

// NVLS inside one node (src/graph/tuning.cc; the channels of src/graph/search.cc): one channel per
// GPU, c = min(n, NCCL_MAX_NVLS_ARITY 32) of them, each GPU's switch link carrying its own channel
// twice and each other's once, at the fastest speed of the architecture's table whose (c + 1)
// channels fit the link; the bus bandwidth c x speed x nvlsEfficiency x (c - 1) / c, twice for an
// all-reduce (it pipelines the reduce and the broadcast). Its latency is the NVLink hop of the NVLS
// row, 25 us, with no base.
constexpr double kNvlsLatency = 25e-6;
constexpr double kNvlsArity = 32;
constexpr double kHopperNvlsSpeeds[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};  // sm90SpeedArrayIntra, GB/s
constexpr double kBlackwellNvlsSpeeds[] = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};  // sm100SpeedArrayIntra

// Ring steps of one call (Patarasuk & Yuan 2009; NCCL's nsteps): an all-reduce is a reduce-scatter
// then an all-gather. An all-to-all exchanges with every peer at once: one step of latency.
double Steps(Collective c, double n) {
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (n - 1);
    case Collective::kReduceScatter:
    case Collective::kAllGather:
      return n - 1;
    case Collective::kAllToAll:
      return 1;
  }
  return 0;
}

// What each rank sends of `bytes`: 2 (n - 1) / n for an all-reduce, (n - 1) / n otherwise.
double WireShare(Collective c, double n) { return (c == Collective::kAllReduce ? 2 : 1) * (n - 1) / n; }

double Latency(const Protocol& p, Collective c, double n, const Link& link) {
  const double steps = Steps(c, n);
  double inter = 0;
  if (link.network && c != Collective::kAllToAll) {
    // A collective over the network spans two nodes at least (an expert's data-parallel peers sit a
    // node apart however few they are).
    const double nodes = std::max(2.0, n / std::max(1.0, link.ranks_per_node));
    inter = std::min(steps, c == Collective::kAllReduce ? 2 * (nodes - 1) : nodes - 1);
  }
  const double intra_hop = link.network && &p == &kLowLatency ? 1.8 * p.nvlink_hop : p.nvlink_hop;
  const double hops = link.network && c == Collective::kAllToAll ? p.network_hop : 0;
  return (p.base + (steps - inter) * intra_hop + inter * p.network_hop + hops) * 1e-6;
}

double TreeLatency(const Protocol& p, double n, const Link& link) {
  const double per_node = link.network ? std::min(n, std::max(1.0, link.ranks_per_node)) : n;
  const double nodes = link.network ? std::max(2.0, n / per_node) : 1;
  return (p.base + 2 * ((per_node - 1) * p.nvlink_hop + std::log2(nodes) * p.network_hop)) * 1e-6;
}

}  // namespace

double CollectiveSeconds(Collective c, double ranks, double bytes, double calls, const Link& link) {
  if (ranks <= 1 || calls <= 0 || bytes <= 0) return 0;
  const double per_call = WireShare(c, ranks) * bytes / calls;
  double best = 0;
  for (const Protocol* p : {&kSimple, &kLowLatency}) {
    const double t = Latency(*p, c, ranks, link) + per_call / (link.bandwidth * p->bandwidth_share);
    best = p == &kSimple ? t : std::min(best, t);
  }
  if (c == Collective::kAllReduce) {
    for (const Protocol* p : {&kTreeSimple, &kTreeLowLatency}) {
      best = std::min(best, TreeLatency(*p, ranks, link) + 2 * bytes / calls / (link.bandwidth * p->bandwidth_share));
    }
    // NVLS inside a node only: across nodes NCCL's NVLS tree runs, which tally does not model (the
    // network's measured share, kNetworkCollectiveShare, holds whatever NCCL ran there).
    if (const double nvls = link.network ? 0 : NvlsBusBandwidth(ranks, link.nvls, link.bandwidth); nvls > 0) {
      best = std::min(best, kNvlsLatency + per_call / nvls);
    }
  }
  return best * calls;
}

double NvlsBusBandwidth(double ranks, NvlsArch arch, double link) {
  if (arch == NvlsArch::kNone || ranks < 2) return 0;
  const double efficiency = arch == NvlsArch::kHopper ? 0.85 : 0.74;  // nvlsEfficiency
  const std::span<const double> speeds = arch == NvlsArch::kHopper ? std::span<const double>(kHopperNvlsSpeeds)
                                                                   : std::span<const double>(kBlackwellNvlsSpeeds);
  const double channels = std::min(ranks, kNvlsArity);
  for (double speed : speeds) {
    if ((channels + 1) * speed * 1e9 <= link)
      return 2 * channels * speed * 1e9 * efficiency * (channels - 1) / channels;
  }
  return 0;
}

}  // namespace tally
