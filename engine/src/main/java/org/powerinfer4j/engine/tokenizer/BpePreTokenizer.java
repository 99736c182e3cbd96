package org.powerinfer4j.engine.tokenizer;

import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits text into words before byte-level BPE, as llama.cpp's {@code unicode_regex_split}: the pre-type's regexes
 * are applied one after another, each splitting every piece the previous one produced (text between matches stays
 * a piece of its own). The GPT-2 and Llama-3 expressions use llama.cpp's hand-written matchers; every other
 * expression runs the way llama.cpp runs it through {@code std::regex}: when it uses {@code \p{..}} classes, on a
 * "collapsed" copy of the text in which each code point is replaced by one character standing for its category,
 * with the classes rewritten to match those characters; otherwise on the code points themselves with non-ASCII
 * whitespace mapped to U+000B. That keeps llama.cpp's category tables, its ASCII-only {@code \s} and its handling of
 * every code point as one unit — exactly what the vocab test vectors need — while the Java regex engine does the
 * matching. Every expression used here matches character classes or bounded groups, never nested unbounded groups,
 * so the matching is linear and cannot overflow the stack on long inputs.
 */
final class BpePreTokenizer {
    private static final System.Logger LOG = System.getLogger(BpePreTokenizer.class.getName());

    /** A pre-tokenizer: its regexes and the vocab flags llama.cpp sets for it. */
    record Spec(String name, List<String> regexes, boolean cleanSpaces, boolean ignoreMerges, boolean addBos) {}

    static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
    static final String LLAMA3 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    private static final String QWEN2 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Han, kana-free CJK block run and Hangul (deepseek): 一-龥, U+0800-一, 가-U+D7FF. */
    private static final String CJK = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
    /**
     * deepseek-llm's cased-letter class, written with escapes because several of its members (Ω U+2126, K U+212A,
     * ι U+1FBE, ...) are canonical-equivalent to other characters and would not survive copy-and-paste.
     */
    private static final String DEEPSEEK_LLM_LETTERS = "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF"
            + "\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1"
            + "\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
            + "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D"
            + "\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
            + "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D"
            + "\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B"
            + "\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E"
            + "\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
            + "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";

    private static final Map<String, Spec> SPECS = buildSpecs();

    private static Map<String, Spec> buildSpecs() {
        java.util.HashMap<String, Spec> m = new java.util.HashMap<>();
        // name(s), regexes, clean_spaces, ignore_merges, add_bos — from llama_vocab::impl::load and llm_tokenizer_bpe
        Spec def = new Spec("default", List.of("[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"), true, false, false);
        m.put("default", def);
        Spec llama3 = new Spec("llama3", List.of(LLAMA3), true, true, true);
        for (String n : List.of("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"))
            m.put(n, llama3);
        Spec dbrx = new Spec("dbrx", List.of(LLAMA3), true, false, false);
        m.put("dbrx", dbrx);
        m.put("smaug-bpe", dbrx);
        m.put("deepseek-llm", new Spec("deepseek-llm", List.of("[\r\n]", DEEPSEEK_LLM_LETTERS,
                "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+", "\\s+$", CJK, "\\p{N}+"), false, false, false));
        m.put("deepseek-v3", new Spec("deepseek-v3", List.of("\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
                "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"),
                false, false, false));
        m.put("deepseek-coder", new Spec("deepseek-coder", List.of("[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", CJK, "\\p{N}"), false, false, false));
        m.put("falcon", new Spec("falcon", List.of("[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"), true, false, false));
        Spec starcoder = new Spec("starcoder", List.of("\\p{N}", GPT2), true, false, false);
        for (String n : List.of("starcoder", "refact", "codeshell", "exaone", "minerva-7b")) m.put(n, starcoder);
        for (String n : List.of("command-r", "smollm")) m.put(n, new Spec(n, List.of("\\p{N}", GPT2), false, false, false));
        Spec gpt2 = new Spec("gpt-2", List.of(GPT2), true, false, false);
        for (String n : List.of("gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                "mpt", "olmo", "jais", "trillion", "exaone4", "jina-v1-en", "jina-v2-code", "roberta-bpe"))
            m.put(n, gpt2);
        m.put("granite-docling", new Spec("granite-docling", List.of(GPT2), false, false, false));
        Spec qwen2 = new Spec("qwen2", List.of(QWEN2), false, false, false);
        for (String n : List.of("qwen2", "deepseek-r1-qwen", "hunyuan")) m.put(n, qwen2);
        for (String n : List.of("stablelm2", "megrez")) m.put(n, new Spec(n, List.of(QWEN2), true, false, false));
        Spec poro = new Spec("poro-chat", List.of(" ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+"), false, false, false);
        m.put("poro-chat", poro);
        for (String n : List.of("bloom", "gpt3-finnish")) m.put(n, new Spec(n, poro.regexes(), true, false, false));
        Spec glm = new Spec("chatglm-bpe", List.of("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
                true, false, false);
        m.put("glm4", glm);
        m.put("chatglm-bpe", glm);
        m.put("viking", new Spec("viking", List.of(" ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+", "\\p{N}"), false, false, false));
        // tekken / gpt-4o: llama.cpp spells "letter that is not a-z" as ((?=[\p{L}])([^a-z])) because std::regex
        // lacks class intersection; in the collapsed alphabet that class is exactly [Ò A-Z] (and [Ò a-z] for ^A-Z).
        m.put("tekken", new Spec("tekken", List.of("[^\\r\\n\\p{L}\\p{N}]?[\u00D2A-Z]*[\u00D2a-z]+|[^\\r\\n\\p{L}\\p{N}]?[\u00D2A-Z]+[\u00D2a-z]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
                false, true, true));
        String contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?";
        Spec gpt4o = new Spec("gpt-4o", List.of("[^\\r\\n\\p{L}\\p{N}]?[\u00D2A-Z]*[\u00D2a-z]+" + contractions + "|[^\\r\\n\\p{L}\\p{N}]?[\u00D2A-Z]+[\u00D2a-z]*"
                + contractions + "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"), false, false, false);
        for (String n : List.of("gpt-4o", "llama4", "minimax-m2")) m.put(n, gpt4o);
        m.put("bailingmoe", new Spec("bailingmoe", List.of("'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"),
                false, false, false));
        m.put("seed-coder", new Spec("seed-coder", List.of("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
                false, false, false));
        m.put("grok-2", new Spec("grok-2", List.of(QWEN2), false, false, false));
        return Map.copyOf(m);
    }

    /**
     * The spec for {@code tokenizer.ggml.pre}. A missing or unknown name falls back to llama.cpp's default
     * expressions with a one-line warning (llama.cpp itself refuses unknown names; degraded splitting is the
     * more useful behaviour for a model that otherwise runs).
     */
    static Spec spec(String pre) {
        if (pre == null) {
            LOG.log(Level.WARNING, "tokenizer.ggml.pre is missing: using the default BPE pre-tokenizer (generation quality may degrade)");
            return SPECS.get("default");
        }
        Spec s = SPECS.get(pre);
        if (s == null) {
            LOG.log(Level.WARNING, "unknown BPE pre-tokenizer ''{0}'': using the default one (generation quality may degrade)", pre);
            return SPECS.get("default");
        }
        return s;
    }

    static java.util.Set<String> knownNames() {
        return SPECS.keySet();
    }

    private final Spec spec;
    /** Per regex: null for the hand-written GPT-2 / Llama-3 matchers, else the compiled pattern. */
    private final Pattern[] patterns;
    private final boolean[] collapsed;
    /** For expressions without {@code \p{..}}: their bracket classes, when the class alphabet applies (else null). */
    private final ClassAlphabet[] alphabets;

    BpePreTokenizer(Spec spec) {
        this(spec, true);
    }

    /**
     * @param fastPaths use llama.cpp's hand-written GPT-2/Llama-3 matchers and the class alphabet; without them
     *                  every expression runs through the generic regex path (tests compare the two)
     */
    BpePreTokenizer(Spec spec, boolean fastPaths) {
        this.spec = spec;
        int n = spec.regexes().size();
        patterns = new Pattern[n];
        collapsed = new boolean[n];
        alphabets = new ClassAlphabet[n];
        for (int i = 0; i < n; i++) {
            String re = spec.regexes().get(i);
            if (fastPaths && (re.equals(GPT2) || re.equals(LLAMA3))) continue;
            if (re.equals(GPT2)) re = GPT2 + "|\\s+"; // the expression llama.cpp's matcher implements in full
            collapsed[i] = usesCategories(re);
            if (re.equals("\\s+$")) {
                // deepseek-llm. A match of \s+$ can only start where a whitespace run starts (a later start inside
                // the same run reaches the same end), so the lookbehind and possessive quantifier leave the matches
                // unchanged while removing the quadratic retry at every position of a run that does not reach the end.
                patterns[i] = Pattern.compile("(?<!\\s)\\s++\\z");
                continue;
            }
            if (collapsed[i]) {
                patterns[i] = Pattern.compile(collapseRegex(re));
            } else {
                alphabets[i] = fastPaths ? ClassAlphabet.of(javaAnchors(re)) : null;
                patterns[i] = alphabets[i] != null ? alphabets[i].pattern : Pattern.compile(javaAnchors(re));
            }
        }
    }

    Spec spec() {
        return spec;
    }

    /** The words of {@code text}, each already mapped through the GPT-2 byte-to-unicode table. */
    List<String> split(String text) {
        Words w = words(text);
        List<String> out = new ArrayList<>(w.count());
        for (int i = 0; i < w.count(); i++) out.add(w.encoded(i));
        return out;
    }

    /** The pre-tokenized words of a text: code points plus word lengths (no per-word strings until asked). */
    static final class Words {
        private final int[] cps;
        private final IntList lengths;
        private final int[] starts;

        Words(int[] cps, IntList lengths) {
            this.cps = cps;
            this.lengths = lengths;
            this.starts = new int[lengths.size()];
            for (int i = 0, s = 0; i < lengths.size(); i++) {
                starts[i] = s;
                s += lengths.get(i);
            }
        }

        int count() {
            return lengths.size();
        }

        /** Word {@code i}'s UTF-8 bytes mapped to GPT-2's printable characters (llama.cpp {@code unicode_byte_encoding_process}). */
        String encoded(int i) {
            return ByteUnicode.encode(new String(cps, starts[i], lengths.get(i)).getBytes(StandardCharsets.UTF_8));
        }
    }

    Words words(String text) {
        int[] cps = Unicode.codePoints(text);
        IntList offsets = new IntList(4);
        offsets.add(cps.length);
        String collapsedText = null;
        WideText wide = null;
        for (int r = 0; r < patterns.length; r++) {
            String re = spec.regexes().get(r);
            if (patterns[r] == null && re.equals(GPT2)) {
                offsets = splitGpt2(cps, offsets);
            } else if (patterns[r] == null) {
                offsets = splitLlama3(cps, offsets);
            } else if (collapsed[r]) {
                if (collapsedText == null) collapsedText = collapse(cps);
                offsets = splitRegex(patterns[r], collapsedText, null, null, offsets);
            } else if (alphabets[r] != null) {
                offsets = splitRegex(patterns[r], alphabets[r].translate(cps), null, null, offsets);
            } else {
                if (wide == null) wide = new WideText(cps);
                offsets = splitRegex(patterns[r], wide.text, wide.cpToChar, wide.charToCp, offsets);
            }
        }
        return new Words(cps, offsets);
    }

    /**
     * Speeds up expressions whose bracket classes list many non-ASCII ranges (deepseek's letter and CJK classes):
     * Java tests such a class range by range, which made those pre-tokenizers ten times slower than the others.
     * Like llama.cpp's collapsing, every non-ASCII code point is replaced by one private-use character per
     * combination of class memberships, and each class is rewritten as its ASCII members plus the characters of
     * the combinations that contain it. Every class therefore answers exactly as before for every code point, and
     * non-ASCII whitespace still becomes U+000B as in llama.cpp's wide-text path. Applies when every non-ASCII
     * character of the expression sits inside a bracket class and there are at most 8 classes.
     */
    static final class ClassAlphabet {
        private static final int BASE = 0xE000;
        final Pattern pattern;
        private final Pattern[] classes;

        private ClassAlphabet(Pattern pattern, Pattern[] classes) {
            this.pattern = pattern;
            this.classes = classes;
        }

        static ClassAlphabet of(String re) {
            List<String> classTexts = new ArrayList<>();
            List<int[]> spans = new ArrayList<>();
            int open = -1;
            for (int i = 0; i < re.length(); i++) {
                char c = re.charAt(i);
                boolean escaped = i > 0 && re.charAt(i - 1) == '\\';
                if (open < 0) {
                    if (c == '[' && !escaped) open = i;
                    else if (c >= 0x80) return null; // a non-ASCII literal outside a class
                } else if (c == ']' && !escaped && i > open + 1 && !(i == open + 2 && re.charAt(open + 1) == '^')) {
                    classTexts.add(re.substring(open, i + 1));
                    spans.add(new int[] {open, i + 1});
                    open = -1;
                }
            }
            if (open >= 0 || classTexts.size() > 8) return null;
            Pattern[] classes = new Pattern[classTexts.size()];
            for (int k = 0; k < classes.length; k++) classes[k] = Pattern.compile(classTexts.get(k));
            StringBuilder out = new StringBuilder();
            int last = 0;
            for (int k = 0; k < classes.length; k++) {
                out.append(re, last, spans.get(k)[0]);
                StringBuilder cls = new StringBuilder("[");
                for (int c = 0; c < 128; c++) if (classes[k].matcher(String.valueOf((char) c)).matches()) cls.append(String.format("\\x{%X}", c));
                for (int sig = 0; sig < (1 << classes.length); sig++) if ((sig & (1 << k)) != 0) cls.append(String.format("\\x{%X}", BASE + sig));
                out.append(cls.length() == 1 ? "[^\\x{0}-\\x{10FFFF}]" : cls.append(']'));
                last = spans.get(k)[1];
            }
            out.append(re.substring(last));
            return new ClassAlphabet(Pattern.compile(out.toString()), classes);
        }

        /** The text in this expression's alphabet: one char per code point, so indexes are code point indexes. */
        String translate(int[] cps) {
            char[] out = new char[cps.length];
            HashMap<Integer, Character> seen = new HashMap<>();
            for (int i = 0; i < cps.length; i++) {
                int cp = cps[i];
                if (cp < 0x80) {
                    out[i] = (char) cp;
                } else if (Unicode.isWhitespace(cp)) {
                    out[i] = 0x0B;
                } else {
                    Character m = seen.get(cp);
                    if (m == null) {
                        String s = new String(Character.toChars(cp));
                        int sig = 0;
                        for (int k = 0; k < classes.length; k++) if (classes[k].matcher(s).matches()) sig |= 1 << k;
                        m = (char) (BASE + sig);
                        seen.put(cp, m);
                    }
                    out[i] = m;
                }
            }
            return new String(out);
        }
    }

    /**
     * The code points as llama.cpp hands them to std::wregex: non-ASCII whitespace becomes U+000B because the
     * regex engine's {@code \s} is ASCII-only. Keeps the code point ⇄ char index maps for the region bounds.
     */
    private static final class WideText {
        final String text;
        final int[] cpToChar;
        final int[] charToCp;

        WideText(int[] cps) {
            StringBuilder sb = new StringBuilder(cps.length);
            cpToChar = new int[cps.length + 1];
            int[] c2p = new int[cps.length * 2 + 1];
            for (int i = 0; i < cps.length; i++) {
                cpToChar[i] = sb.length();
                c2p[sb.length()] = i;
                int cp = cps[i] > 0x7F && Unicode.isWhitespace(cps[i]) ? 0x0B : cps[i];
                sb.appendCodePoint(cp);
                if (sb.length() - cpToChar[i] == 2) c2p[sb.length() - 1] = i; // low surrogate: same code point
            }
            cpToChar[cps.length] = sb.length();
            c2p[sb.length()] = cps.length;
            text = sb.toString();
            charToCp = c2p;
        }
    }

    /**
     * One std::regex_iterator pass per existing piece (llama.cpp's {@code unicode_regex_split_stl}). The matcher
     * region is the piece with opaque, anchoring bounds, like an iterator over [first, last).
     */
    private static IntList splitRegex(Pattern p, String text, int[] cpToChar, int[] charToCp, IntList offsets) {
        IntList out = new IntList(offsets.size() * 2);
        Matcher m = p.matcher(text);
        int startCp = 0;
        for (int k = 0; k < offsets.size(); k++) {
            int len = offsets.get(k);
            int from = cpToChar == null ? startCp : cpToChar[startCp];
            int to = cpToChar == null ? startCp + len : cpToChar[startCp + len];
            m.region(from, to);
            int prev = startCp;
            while (m.find()) {
                int ms = charToCp == null ? m.start() : charToCp[m.start()];
                int me = charToCp == null ? m.end() : charToCp[m.end()];
                if (ms > prev) out.add(ms - prev);
                out.add(me - ms);
                prev = me;
            }
            if (prev < startCp + len) out.add(startCp + len - prev);
            startCp += len;
        }
        return out;
    }

    private static final Map<String, Integer> CATEGORY_CLASSES = Map.of(
            "\\p{N}", Unicode.NUMBER, "\\p{L}", Unicode.LETTER, "\\p{P}", Unicode.PUNCTUATION, "\\p{M}", Unicode.MARK,
            "\\p{S}", Unicode.SYMBOL, "\\p{Lu}", Unicode.LETTER, "\\p{Ll}", Unicode.LETTER, "\\p{Lt}", Unicode.LETTER,
            "\\p{Lm}", Unicode.LETTER, "\\p{Lo}", Unicode.LETTER);

    private static boolean usesCategories(String re) {
        for (String c : CATEGORY_CLASSES.keySet()) if (re.contains(c)) return true;
        return false;
    }

    /** The stand-in character of a category in the collapsed text (llama.cpp's {@code k_ucat_cpt}, 0xD1..0xD5). */
    private static char categoryChar(int category) {
        return switch (category) {
            case Unicode.NUMBER -> '\u00D1';
            case Unicode.LETTER -> '\u00D2';
            case Unicode.PUNCTUATION -> '\u00D3';
            case Unicode.MARK -> '\u00D4';
            case Unicode.SYMBOL -> '\u00D5';
            default -> '\u00D0';
        };
    }

    /** ASCII members of each category (llama.cpp's {@code k_ucat_map}), as Java character-class text. */
    private static String asciiMembers(int category) {
        return switch (category) {
            case Unicode.NUMBER -> "0-9";
            case Unicode.LETTER -> "A-Za-z";
            case Unicode.PUNCTUATION -> "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}";
            case Unicode.SYMBOL -> "\\$\\+<->\\^`\\|";
            default -> "";
        };
    }

    /** llama.cpp's collapsed text: ASCII kept, other whitespace → U+000B, everything else → its category char. */
    static String collapse(int[] cps) {
        char[] c = new char[cps.length];
        for (int i = 0; i < cps.length; i++) {
            int cp = cps[i];
            if (cp < 128) {
                c[i] = (char) cp;
                continue;
            }
            int f = Unicode.flags(cp);
            if ((f & Unicode.WHITESPACE) != 0) c[i] = 0x0B;
            else {
                int cat = f & Unicode.CATEGORIES;
                c[i] = switch (cat) {
                    case Unicode.NUMBER, Unicode.LETTER, Unicode.PUNCTUATION, Unicode.MARK, Unicode.SYMBOL -> categoryChar(cat);
                    default -> '\u00D0';
                };
            }
        }
        return new String(c);
    }

    /** Rewrites {@code \p{X}} to the collapsed alphabet exactly as llama.cpp's {@code unicode_regex_split} does. */
    static String collapseRegex(String re) {
        StringBuilder out = new StringBuilder();
        boolean inside = false;
        for (int i = 0; i < re.length(); i++) {
            char c = re.charAt(i);
            if (c == '[' && (i == 0 || re.charAt(i - 1) != '\\')) {
                out.append('[');
                inside = true;
                continue;
            }
            if (inside && c == ']' && re.charAt(i - 1) != '\\') {
                out.append(']');
                inside = false;
                continue;
            }
            if (c == '\\' && i + 3 < re.length() && re.charAt(i + 1) == 'p' && re.charAt(i + 2) == '{') {
                int close = re.indexOf('}', i + 3);
                if (close >= 0 && close <= i + 10) {
                    Integer cat = CATEGORY_CLASSES.get(re.substring(i, close + 1));
                    if (cat != null) {
                        if (!inside) out.append('[');
                        out.append(categoryChar(cat)).append(asciiMembers(cat));
                        if (!inside) out.append(']');
                        i = close;
                        continue;
                    }
                }
            }
            if (!inside && c == '$' && (i == 0 || re.charAt(i - 1) != '\\')) {
                out.append("\\z"); // ECMAScript '$' is end of input only; Java's also matches before a final newline
                continue;
            }
            out.append(c);
        }
        return out.toString();
    }

    /** ECMAScript '$' (end of input) → Java '\z' for expressions that run on the uncollapsed code points. */
    private static String javaAnchors(String re) {
        StringBuilder out = new StringBuilder();
        boolean inside = false;
        for (int i = 0; i < re.length(); i++) {
            char c = re.charAt(i);
            boolean escaped = i > 0 && re.charAt(i - 1) == '\\';
            if (c == '[' && !escaped) inside = true;
            else if (c == ']' && !escaped) inside = false;
            if (!inside && c == '$' && !escaped) out.append("\\z");
            else out.append(c);
        }
        return out.toString();
    }

    // ---- llama.cpp's hand-written matchers (unicode_regex_split_custom_gpt2 / _llama3), ported line by line ----

    private static final int OUT_OF_RANGE = -1;

    /** GPT-2: {@code 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+}. */
    static IntList splitGpt2(int[] cps, IntList offsets) {
        IntList out = new IntList(offsets.size() + cps.length / 3);
        int start = 0;
        for (int k = 0; k < offsets.size(); k++) {
            final int ini = start, end = start + offsets.get(k);
            start = end;
            Cursor c = new Cursor(cps, ini, end, out);
            for (int pos = ini; pos < end; ) {
                int cpt = c.cpt(pos);
                int flags = c.flags(pos);
                if (cpt == '\'' && pos + 1 < end) {
                    int next = c.cpt(pos + 1);
                    if (next == 's' || next == 't' || next == 'm' || next == 'd') {
                        pos += c.add(pos + 2);
                        continue;
                    }
                    if (pos + 2 < end) {
                        int next2 = c.cpt(pos + 2);
                        if ((next == 'r' && next2 == 'e') || (next == 'v' && next2 == 'e') || (next == 'l' && next2 == 'l')) {
                            pos += c.add(pos + 3);
                            continue;
                        }
                    }
                }
                int flags2 = cpt == ' ' ? c.flags(pos + 1) : flags;
                if ((flags2 & Unicode.LETTER) != 0) { // <space>?\p{L}+
                    pos += cpt == ' ' ? 1 : 0;
                    while ((flags2 & Unicode.LETTER) != 0) flags2 = c.flags(++pos);
                    c.add(pos);
                    continue;
                }
                if ((flags2 & Unicode.NUMBER) != 0) { // <space>?\p{N}+
                    pos += cpt == ' ' ? 1 : 0;
                    while ((flags2 & Unicode.NUMBER) != 0) flags2 = c.flags(++pos);
                    c.add(pos);
                    continue;
                }
                if ((flags2 & (Unicode.WHITESPACE | Unicode.LETTER | Unicode.NUMBER)) == 0 && flags2 != 0) { // <space>?[^\s\p{L}\p{N}]+
                    pos += cpt == ' ' ? 1 : 0;
                    while ((flags2 & (Unicode.WHITESPACE | Unicode.LETTER | Unicode.NUMBER)) == 0 && flags2 != 0) flags2 = c.flags(++pos);
                    c.add(pos);
                    continue;
                }
                int ws = 0;
                while ((c.flags(pos + ws) & Unicode.WHITESPACE) != 0) ws++;
                if (ws > 1 && c.cpt(pos + ws) != OUT_OF_RANGE) { // \s+(?!\S)
                    pos += ws - 1;
                    c.add(pos);
                    continue;
                }
                if (ws > 0) { // \s+
                    pos += ws;
                    c.add(pos);
                    continue;
                }
                c.add(++pos); // no match
            }
        }
        return out;
    }

    /** Llama-3: {@code (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+}. */
    static IntList splitLlama3(int[] cps, IntList offsets) {
        IntList out = new IntList(offsets.size() + cps.length / 3);
        int start = 0;
        for (int k = 0; k < offsets.size(); k++) {
            final int ini = start, end = start + offsets.get(k);
            start = end;
            Cursor c = new Cursor(cps, ini, end, out);
            for (int pos = ini; pos < end; ) {
                int cpt = c.cpt(pos);
                int flags = c.flags(pos);
                if (cpt == '\'' && pos + 1 < end) { // case-insensitive contractions
                    int next = Unicode.toLower(c.cpt(pos + 1));
                    if (next == 's' || next == 't' || next == 'm' || next == 'd') {
                        pos += c.add(pos + 2);
                        continue;
                    }
                    if (pos + 2 < end) {
                        int next2 = Unicode.toLower(c.cpt(pos + 2));
                        if ((next == 'r' && next2 == 'e') || (next == 'v' && next2 == 'e') || (next == 'l' && next2 == 'l')) {
                            pos += c.add(pos + 3);
                            continue;
                        }
                    }
                }
                if (!(cpt == '\r' || cpt == '\n' || (flags & Unicode.NUMBER) != 0)) { // [^\r\n\p{L}\p{N}]?\p{L}+
                    if ((flags & Unicode.LETTER) != 0 || (c.flags(pos + 1) & Unicode.LETTER) != 0) {
                        pos++;
                        while ((c.flags(pos) & Unicode.LETTER) != 0) pos++;
                        c.add(pos);
                        continue;
                    }
                }
                if ((flags & Unicode.NUMBER) != 0) { // \p{N}{1,3}
                    int i0 = pos;
                    while ((c.flags(pos) & Unicode.NUMBER) != 0) {
                        if (++pos - i0 >= 3) {
                            c.add(pos);
                            i0 = pos;
                        }
                    }
                    c.add(pos);
                    continue;
                }
                int flags2 = cpt == ' ' ? c.flags(pos + 1) : flags; // <space>?[^\s\p{L}\p{N}]+[\r\n]*
                if ((flags2 & (Unicode.WHITESPACE | Unicode.LETTER | Unicode.NUMBER)) == 0 && flags != 0) {
                    pos += cpt == ' ' ? 1 : 0;
                    while ((flags2 & (Unicode.WHITESPACE | Unicode.LETTER | Unicode.NUMBER)) == 0 && flags2 != 0) flags2 = c.flags(++pos);
                    int cpt2 = c.cpt(pos);
                    while (cpt2 == '\r' || cpt2 == '\n') cpt2 = c.cpt(++pos);
                    c.add(pos);
                    continue;
                }
                int ws = 0, lastRN = 0;
                while ((c.flags(pos + ws) & Unicode.WHITESPACE) != 0) {
                    int cpt2 = c.cpt(pos + ws);
                    if (cpt2 == '\r' || cpt2 == '\n') lastRN = pos + ws + 1;
                    ws++;
                }
                if (lastRN > 0) { // \s*[\r\n]+
                    pos = lastRN;
                    c.add(pos);
                    continue;
                }
                if (ws > 1 && c.cpt(pos + ws) != OUT_OF_RANGE) { // \s+(?!\S)
                    pos += ws - 1;
                    c.add(pos);
                    continue;
                }
                if (ws > 0) { // \s+
                    pos += ws;
                    c.add(pos);
                    continue;
                }
                c.add(++pos);
            }
        }
        return out;
    }

    /** The lambdas of llama.cpp's custom splitters: bounded code point / flag access and piece emission. */
    private static final class Cursor {
        final int[] cps;
        final int ini, end;
        final IntList out;
        int prevEnd;

        Cursor(int[] cps, int ini, int end, IntList out) {
            this.cps = cps;
            this.ini = ini;
            this.end = end;
            this.out = out;
            this.prevEnd = ini;
        }

        int cpt(int pos) {
            return pos >= ini && pos < end ? cps[pos] : OUT_OF_RANGE;
        }

        int flags(int pos) {
            return pos >= ini && pos < end ? Unicode.flags(cps[pos]) : 0;
        }

        int add(int e) {
            int len = e - prevEnd;
            if (len > 0) out.add(len);
            prevEnd = e;
            return len;
        }
    }
}
