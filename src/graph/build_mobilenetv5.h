// Gemma 3n's vision tower: timm's MobileNetV5Encoder as `mobilenetv5_300m_enc` builds it
// (huggingface/pytorch-image-models timm/models/mobilenetv5.py). transformers' TimmWrapperModel
// creates it with timm.create_model(vision_config.architecture, num_classes=0, **model_args); the
// encoder has no classifier, and the checkpoint holds its weights as model.vision_tower.timm_model.*.
#pragma once

#include <cstdint>
#include <vector>

namespace tally {

// The shape of every parameter tensor of mobilenetv5_300m_enc, in timm's module order: the stem, the
// four stages' blocks, the multi-scale fusion adapter.
std::vector<std::vector<uint64_t>> MobileNetV5Tensors();

}  // namespace tally
