// A multimodal model's vision tower and projector as nodes (config/model_spec.h, VisionSpec), for the
// transformer builder to place before the language model's blocks.
#pragma once

#include <vector>

#include "config/model_spec.h"
#include "graph/build_graph.h"

namespace tally {

// Appends the nodes of `v.images` images per sequence for `settings.batch` sequences: the tower
// (component vision) and the projector (component projector) to `text_width` features. Their output
// replaces the image tokens' embeddings (a copy), so the language model's nodes do not change.
void AddVisionNodes(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings,
                    std::vector<Layer>& layers);

}  // namespace tally
