package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The whole model as the executors see it: the input embedding (scaled; plus learned positions where the family has
 * them), one {@link LayerGraph} per layer, the rotary tables the layers' {@link LayerGraph.Rope} ops refer to, and the
 * output (final norm, head, soft-cap). Built by {@link GraphBuilder} from the config and the named weights.
 *
 * @param ropes          rotary tables by index (global layers use 0; Gemma 3's local layers 1)
 * @param positionOffset learned position embeddings read row {@code pos + positionOffset}; -1 = none
 * @param outputNorm     the final norm, from {@link LayerGraph.Buf#X} (one token) into {@link LayerGraph.Buf#XB}
 * @param finalSoftcap   {@code c · tanh(logit / c)} on the logits when > 0
 */
public record ModelGraph(LayerGraph[] layers, RopeTables[] ropes, float embeddingScale, Tensor positionEmbd, int positionOffset,
                         LayerGraph.Norm outputNorm, Tensor output, float finalSoftcap) {}
