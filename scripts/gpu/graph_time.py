"""The GPU time of a call alone: `calls` of it captured in one CUDA graph and replayed, so that no
launch gap sits between its kernels (as in a training step whose queue the host keeps full).
Timing single calls with CUDA events instead adds some 20 us of launch to each, which inflates small
shapes (shared/reference/h100-measured.md). Shared by gemm_sweep.py, gemm_align.py, op_costs.py,
steady_gemm.py and gemm_duty.py."""

import statistics


def capture(torch, fn, calls, warmups=1):
    """`calls` of fn captured in one CUDA graph, after `warmups` of it off the default stream (as
    capture asks). The graph reads fn's operands where they were: the caller keeps them alive."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    return graph


def graph_seconds(torch, fn, calls=10, replays=5, warmups=2):
    """Seconds per call: the median over `replays` of one replay's CUDA-event time / `calls`."""
    graph = capture(torch, fn, calls, warmups)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000 / calls)
    del graph
    return statistics.median(times)
