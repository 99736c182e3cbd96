package org.powerinfer4j.engine.tokenizer;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFValueType;
import org.powerinfer4j.engine.gguf.MetadataValue;

/**
 * The vocabulary half of llama.cpp's {@code llama_vocab::impl::load}: token texts, scores and attributes, the
 * special ids and flags with their per-model defaults, and the text-based special-token fix-ups (EOT/EOG detection,
 * phi-3 rstrip) that change how text is split and rendered.
 */
final class Vocab {
    private static final System.Logger LOG = System.getLogger(Vocab.class.getName());

    // llama_token_attr bits
    static final int ATTR_UNDEFINED = 0;
    static final int ATTR_UNKNOWN = 1;
    static final int ATTR_UNUSED = 1 << 1;
    static final int ATTR_NORMAL = 1 << 2;
    static final int ATTR_CONTROL = 1 << 3;
    static final int ATTR_USER_DEFINED = 1 << 4;
    static final int ATTR_BYTE = 1 << 5;
    static final int ATTR_LSTRIP = 1 << 7;
    static final int ATTR_RSTRIP = 1 << 8;

    enum Kind { SPM, BPE }

    final Kind kind;
    final String model;
    final String pre;
    final String[] tokens;
    final float[] scores;
    final TokenType[] types;
    final int[] attrs;
    final TokenIndex index;

    int bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
    int fimPre = -1, fimSuf = -1, fimMid = -1, fimPad = -1, fimRep = -1, fimSep = -1;
    boolean addBos, addEos, addSpacePrefix, cleanSpaces;
    final BitSet eog = new BitSet();
    /** Control, user-defined and unknown tokens, longest text first (llama.cpp's {@code cache_special_tokens}). */
    int[] specialTokens;
    String[] merges;

    private Vocab(Kind kind, String model, String pre, String[] tokens, float[] scores, TokenType[] types) {
        this.kind = kind;
        this.model = model;
        this.pre = pre;
        this.tokens = tokens;
        this.scores = scores;
        this.types = types;
        this.attrs = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            attrs[i] = switch (types[i]) {
                case UNKNOWN -> ATTR_UNKNOWN;
                case UNUSED -> ATTR_UNUSED;
                case NORMAL -> ATTR_NORMAL;
                case CONTROL -> ATTR_CONTROL;
                case USER_DEFINED -> ATTR_USER_DEFINED;
                case BYTE -> ATTR_BYTE;
                case UNDEFINED -> ATTR_UNDEFINED;
            };
        }
        this.index = new TokenIndex(tokens);
    }

    int size() {
        return tokens.length;
    }

    /**
     * Reads the vocabulary. {@code preDefaults} supplies the BPE pre-tokenizer's flag defaults (llama.cpp sets
     * clean_spaces / add_bos per pre-type before the file's own add_bos/add_eos keys override them).
     */
    static Vocab load(GGUFFile gguf, BpePreTokenizer.Spec preSpec) {
        String model = gguf.getString("tokenizer.ggml.model", null);
        if (model == null) throw new IllegalArgumentException("no tokenizer in " + gguf.path() + " (tokenizer.ggml.model is missing)");
        Kind kind = switch (model) {
            case "llama" -> Kind.SPM;
            case "gpt2" -> Kind.BPE;
            default -> throw new IllegalArgumentException("unsupported tokenizer model '" + org.powerinfer4j.engine.gguf.GGUFFormatException.printable(model, 64) + "' in " + gguf.path()
                    + " (supported: llama = SentencePiece, gpt2 = byte-level BPE)");
        };
        String[] tokens = gguf.getArray("tokenizer.ggml.tokens", String[].class);
        if (tokens == null || tokens.length == 0)
            throw new IllegalArgumentException("no vocabulary in " + gguf.path() + " (tokenizer.ggml.tokens is missing or not a string array)");
        tokens = tokens.clone();
        int n = tokens.length;
        for (int i = 0; i < n; i++) if (tokens[i].isEmpty()) tokens[i] = "[EMPTY_" + i + "]"; // as llama.cpp

        float[] scores = new float[n];
        float[] fs = gguf.getArray("tokenizer.ggml.scores", float[].class);
        int[] is = gguf.getArray("tokenizer.ggml.scores", int[].class);
        if (fs != null || is != null) {
            int len = fs != null ? fs.length : is.length;
            if (len < n) throw new IllegalArgumentException("tokenizer.ggml.scores has " + len + " values for " + n + " tokens");
            for (int i = 0; i < n; i++) scores[i] = fs != null ? fs[i] : is[i];
        }
        TokenType[] types = new TokenType[n];
        int[] tt = gguf.getArray("tokenizer.ggml.token_type", int[].class);
        if (tt != null && tt.length < n) throw new IllegalArgumentException("tokenizer.ggml.token_type has " + tt.length + " values for " + n + " tokens");
        for (int i = 0; i < n; i++) types[i] = tt == null ? TokenType.NORMAL : TokenType.of(tt[i]);

        String pre = gguf.getString("tokenizer.ggml.pre", null);
        Vocab v = new Vocab(kind, model, pre, tokens, scores, types);

        // per-model defaults (llama_vocab::impl::load)
        if (kind == Kind.SPM) {
            v.bos = 1; v.eos = 2; v.unk = 0;
            v.addSpacePrefix = true;
            v.cleanSpaces = false;
            v.addBos = true;
            v.addEos = false;
        } else {
            String[] merges = gguf.getArray("tokenizer.ggml.merges", String[].class);
            if (merges == null) throw new IllegalArgumentException("byte-level BPE vocabulary without merges in " + gguf.path()
                    + " (tokenizer.ggml.merges is missing or not a string array)");
            v.merges = merges;
            v.bos = 11; v.eos = 11;
            v.addSpacePrefix = false;
            v.cleanSpaces = preSpec.cleanSpaces();
            v.addBos = preSpec.addBos();
            v.addEos = false;
        }
        v.addSpacePrefix = gguf.getBoolean("tokenizer.ggml.add_space_prefix", v.addSpacePrefix);

        v.bos = specialId(gguf, "tokenizer.ggml.bos_token_id", v.bos, n);
        v.eos = specialId(gguf, "tokenizer.ggml.eos_token_id", v.eos, n);
        v.eot = specialId(gguf, "tokenizer.ggml.eot_token_id", v.eot, n);
        v.eom = specialId(gguf, "tokenizer.ggml.eom_token_id", v.eom, n);
        v.unk = specialId(gguf, "tokenizer.ggml.unknown_token_id", v.unk, n);
        v.pad = specialId(gguf, "tokenizer.ggml.padding_token_id", v.pad, n);
        v.fimPre = specialId(gguf, "tokenizer.ggml.fim_pre_token_id", v.fimPre, n);
        v.fimSuf = specialId(gguf, "tokenizer.ggml.fim_suf_token_id", v.fimSuf, n);
        v.fimMid = specialId(gguf, "tokenizer.ggml.fim_mid_token_id", v.fimMid, n);
        v.fimPad = specialId(gguf, "tokenizer.ggml.fim_pad_token_id", v.fimPad, n);
        v.fimRep = specialId(gguf, "tokenizer.ggml.fim_rep_token_id", v.fimRep, n);
        v.fimSep = specialId(gguf, "tokenizer.ggml.fim_sep_token_id", v.fimSep, n);
        v.fimPre = specialId(gguf, "tokenizer.ggml.prefix_token_id", v.fimPre, n);
        v.fimSuf = specialId(gguf, "tokenizer.ggml.suffix_token_id", v.fimSuf, n);
        v.fimMid = specialId(gguf, "tokenizer.ggml.middle_token_id", v.fimMid, n);

        v.addBos = gguf.getBoolean("tokenizer.ggml.add_bos_token", v.addBos);
        v.addEos = gguf.getBoolean("tokenizer.ggml.add_eos_token", v.addEos);
        if (v.addBos && v.bos < 0) throw new IllegalArgumentException("tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
        if (v.addEos && v.eos < 0) throw new IllegalArgumentException("tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");

        v.detectSpecialTokens();
        v.buildSpecialCache();
        v.applyModelAttributes(gguf.getString("general.name", ""));
        return v;
    }

    /**
     * A special id from metadata; out-of-range values (e.g. -1 stored for "none") keep the default, and a default
     * outside the vocabulary is disabled, as llama.cpp does.
     */
    private static int specialId(GGUFFile gguf, String key, int def, int n) {
        if (def >= n) def = -1;
        MetadataValue mv = gguf.get(key);
        if (mv == null || mv.isArray() || mv.type() == GGUFValueType.STRING) return def;
        long id = mv.asLong();
        if (id < 0 || id >= n) {
            LOG.log(Level.DEBUG, "bad special token: ''{0}'' = {1}, using default id {2}", key, id, def);
            return def;
        }
        return (int) id;
    }

    private static final List<String> EOT_TEXTS = List.of("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>");
    private static final List<String> FIM_PRE_TEXTS = List.of("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
            "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>");
    private static final List<String> FIM_SUF_TEXTS = List.of("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
            "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>");
    private static final List<String> FIM_MID_TEXTS = List.of("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
            "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>");
    private static final List<String> FIM_PAD_TEXTS = List.of("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]");
    private static final List<String> FIM_REP_TEXTS = List.of("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>");
    private static final List<String> FIM_SEP_TEXTS = List.of("<|file_sep|>");
    private static final Set<String> EOG_TEXTS = Set.of("<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
            "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
            "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[");
    private static final Set<String> ALWAYS_RENDERED = Set.of("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>");

    /**
     * llama.cpp finds EOT/EOM/FIM and end-of-generation tokens by their text and forces them to control type.
     * It walks an unordered map, so when several EOT-looking tokens exist (Qwen: "<|im_end|>" and
     * "<|endoftext|>") which one becomes "the" EOT id is unspecified there; here the text listed first wins,
     * which prefers the end-of-turn marker of chat models. Every such token is end-of-generation either way.
     */
    private void detectSpecialTokens() {
        if (eot < 0) eot = firstPresent(EOT_TEXTS);
        if (eom < 0) eom = index.get("<|eom_id|>");
        if (fimPre < 0) fimPre = firstPresent(FIM_PRE_TEXTS);
        if (fimSuf < 0) fimSuf = firstPresent(FIM_SUF_TEXTS);
        if (fimMid < 0) fimMid = firstPresent(FIM_MID_TEXTS);
        if (fimPad < 0) fimPad = firstPresent(FIM_PAD_TEXTS);
        if (fimRep < 0) fimRep = firstPresent(FIM_REP_TEXTS);
        if (fimSep < 0) fimSep = firstPresent(FIM_SEP_TEXTS);
        for (int id : new int[] {eot, eom, fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep}) if (id >= 0) forceControl(id);
        if (fimPad >= 0) eog.set(fimPad);
        if (fimRep >= 0) eog.set(fimRep);
        if (fimSep >= 0) eog.set(fimSep);
        for (int id = 0; id < tokens.length; id++) {
            if (EOG_TEXTS.contains(tokens[id])) {
                eog.set(id);
                forceControl(id);
            }
        }
        for (int id = 0; id < tokens.length; id++) {
            if (ALWAYS_RENDERED.contains(tokens[id])) attrs[id] = ATTR_USER_DEFINED; // gpt-oss: always render these
        }
        if (eos >= 0) eog.set(eos);
        if (eot >= 0) eog.set(eot);
        if (eom >= 0) eog.set(eom);
        // o200k_harmony / solar-open: "<|end|>" ends a message, not the generation, when "<|return|>" + "<|call|>" exist
        int end = -1;
        boolean hasReturn = false, hasCall = false, hasFlush = false;
        for (int id = eog.nextSetBit(0); id >= 0; id = eog.nextSetBit(id + 1)) {
            switch (tokens[id]) {
                case "<|return|>" -> hasReturn = true;
                case "<|call|>", "<|calls|>" -> hasCall = true;
                case "<|flush|>" -> hasFlush = true;
                case "<|end|>" -> end = id;
                default -> { }
            }
        }
        if (end >= 0 && ((hasReturn && hasCall) || (hasCall && hasFlush))) {
            eog.clear(end);
            attrs[end] = ATTR_USER_DEFINED;
        }
        // gemma4 / paddleocr: "</s>" is not end-of-generation when "<|tool_response>" is
        int s = -1;
        boolean hasToolResponse = false;
        for (int id = eog.nextSetBit(0); id >= 0; id = eog.nextSetBit(id + 1)) {
            if (tokens[id].equals("<|tool_response>")) hasToolResponse = true;
            else if (tokens[id].equals("</s>")) s = id;
        }
        if (hasToolResponse && s >= 0) {
            eog.clear(s);
            attrs[s] = ATTR_NORMAL;
        }
    }

    private int firstPresent(List<String> texts) {
        for (String t : texts) {
            int id = index.get(t);
            if (id >= 0) return id;
        }
        return -1;
    }

    private void forceControl(int id) {
        attrs[id] |= ATTR_CONTROL;
    }

    private void buildSpecialCache() {
        List<Integer> ids = new ArrayList<>();
        for (int id = 0; id < tokens.length; id++)
            if ((attrs[id] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) != 0) ids.add(id);
        // llama.cpp sorts by byte length, longest first (std::sort: ties in unspecified order; here by id)
        ids.sort(Comparator.comparingInt((Integer id) -> -utf8Length(tokens[id])).thenComparingInt(id -> id));
        specialTokens = ids.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Per-model attribute fix-ups llama.cpp applies by model name (phi-3: special tokens swallow following spaces). */
    private void applyModelAttributes(String generalName) {
        String name = generalName.toLowerCase(Locale.ROOT);
        if (name.contains("phi-3") || name.contains("phi3")) {
            for (int id : specialTokens) attrs[id] |= ATTR_RSTRIP;
            setAttr("</s>", ATTR_RSTRIP, true);
            setAttr("<unk>", ATTR_RSTRIP, false);
            setAttr("<s>", ATTR_RSTRIP, false);
            setAttr("<|endoftext|>", ATTR_RSTRIP, false);
        }
    }

    private void setAttr(String token, int attr, boolean value) {
        int id = index.get(token);
        if (id < 0) return;
        attrs[id] = value ? attrs[id] | attr : attrs[id] & ~attr;
    }

    static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) n += 1;
            else if (c < 0x800) n += 2;
            else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) { n += 4; i++; }
            else n += 3;
        }
        return n;
    }
}
