#pragma once
// Which side of a decoder step a graph (models/decoder_step.hpp) or a footprint
// (models/memory_footprint.hpp) holds, for attention-FFN disaggregation (g5sim/afd.hpp): the whole
// step; its attention side (the embedding, every layer's attention block, the final norm and the
// head, and the KV cache); or its FFN side (every layer's FFN block, the tokens arriving from the
// attention chips: no all-to-all among the FFN chips, whose dispatch and combine are the
// disaggregation's own transfers).

namespace models {

enum class StepPart { whole, attention, ffn };

}  // namespace models
