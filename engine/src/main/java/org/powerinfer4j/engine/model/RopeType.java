package org.powerinfer4j.engine.model;

/**
 * How rotary embeddings pair up dimensions. {@code NORMAL} rotates adjacent pairs (x[2i], x[2i+1]) — llama.cpp's
 * LLAMA_ROPE_TYPE_NORM, used by the {@code llama} architecture (GGUF converters permute Q/K for it).
 * {@code NEOX} rotates (x[i], x[i + n_rot/2]) — used by Qwen2, Falcon, GPT-NeoX and others.
 */
public enum RopeType { NORMAL, NEOX }
